output "issuer" {
  description = "The issuer URL (https://host, no trailing slash): every token's `iss`, STRATO_OIDC_ISSUER of the dispatcher and the api, and what tenants' clouds trust."
  value       = local.issuer
}

output "signing_key_arn" {
  description = "The signing generation's key: STRATO_OIDC_SIGNING_KEY of the dispatcher (Sign) and the api (GetPublicKey). An ARN, not the alias: a new signing key changes the functions' environment, so no warm process keeps the old key's kid (KmsSigner caches the public half per process)."
  value       = aws_kms_key.signing[var.signing_key].arn
}

output "signing_key_alias" {
  description = "alias/<prefix>-oidc, pointing at the signing generation (strato_aws::resources::Names::oidc_key_alias)."
  value       = aws_kms_alias.signing.name
}

output "published_key_arns" {
  description = "Every generation's key, by name: all of them are in the JWKS."
  value       = { for g, k in aws_kms_key.signing : g => k.arn }
}

output "distribution_id" {
  description = "The issuer's CloudFront distribution."
  value       = aws_cloudfront_distribution.issuer.id
}

output "distribution_domain_name" {
  description = "The distribution's *.cloudfront.net name: the target of your DNS record for aliases[0]."
  value       = aws_cloudfront_distribution.issuer.domain_name
}

output "bucket" {
  description = "The private bucket holding the two documents."
  value       = aws_s3_bucket.issuer.bucket
}
