output "url" {
  description = "The console's URL (CloudFront's domain): the console at /, the HTTP API at /v1/*."
  value       = "https://${aws_cloudfront_distribution.console.domain_name}"
}

output "distribution_id" {
  description = "The CloudFront distribution (invalidate /index.html /console.json after an upload if a new build must show at once)."
  value       = aws_cloudfront_distribution.console.id
}

output "bucket" {
  description = "The private bucket holding the built console and console.json."
  value       = aws_s3_bucket.console.bucket
}

output "content_security_policy" {
  description = "The Content-Security-Policy every response carries."
  value       = local.csp
}
