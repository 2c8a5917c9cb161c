output "tables" {
  description = "Logical name (strato_aws::resources) → { name, arn }."
  value       = { for k, t in aws_dynamodb_table.this : k => { name = t.name, arn = t.arn } }
}

output "queues" {
  description = "Logical name → { name, url, arn, dlq_url, dlq_arn }."
  value = { for k, q in aws_sqs_queue.this : k => {
    name    = q.name
    url     = q.id
    arn     = q.arn
    dlq_url = aws_sqs_queue.dlq[k].id
    dlq_arn = aws_sqs_queue.dlq[k].arn
  } }
}

output "buckets" {
  description = "Logical name → { name, arn }."
  value       = { for k, b in aws_s3_bucket.this : k => { name = b.bucket, arn = b.arn } }
}

output "kms_key_arn" {
  description = "Strato's data key (state and artifacts buckets, sealed values)."
  value       = aws_kms_key.data.arn
}

output "kms_alias" {
  description = "The data key's alias (strato_aws::resources::Names::kms_alias)."
  value       = aws_kms_alias.data.name
}

output "access_logs_bucket" {
  description = "The bucket holding the state bucket's server access logs (under state/)."
  value       = { name = aws_s3_bucket.access_logs.bucket, arn = aws_s3_bucket.access_logs.arn }
}
