output "http_api_url" {
  description = "Base URL of the tenants' HTTP API (also given to the runner as STRATO_CONTROL_PLANE_URL)."
  value       = aws_apigatewayv2_api.http.api_endpoint
}

output "websocket_url" {
  description = "WebSocket URL for live logs: connect with ?token=<JWT>."
  value       = "${aws_apigatewayv2_api.ws.api_endpoint}/${local.ws_stage}"
}

output "websocket_management_endpoint" {
  description = "The @connections endpoint the ws and log-fanout functions post to."
  value       = local.ws_management_endpoint
}

output "queue_urls" {
  description = "Queue URLs, DLQs included."
  value = {
    jobs         = aws_sqs_queue.jobs.id
    jobs_dlq     = aws_sqs_queue.jobs_dlq.id
    events       = aws_sqs_queue.events.id
    events_dlq   = aws_sqs_queue.events_dlq.id
    logs         = aws_sqs_queue.logs.id
    logs_dlq     = aws_sqs_queue.logs_dlq.id
    webhooks     = aws_sqs_queue.webhooks.id
    webhooks_dlq = aws_sqs_queue.webhooks_dlq.id
  }
}

output "table_names" {
  description = "DynamoDB table names."
  value = { for name, t in {
    clusters    = aws_dynamodb_table.clusters
    operations  = aws_dynamodb_table.operations
    locks       = aws_dynamodb_table.locks
    idempotency = aws_dynamodb_table.idempotency
    connections = aws_dynamodb_table.connections
    "tf-locks"  = aws_dynamodb_table.tf_locks
    templates   = aws_dynamodb_table.templates
    tenants     = aws_dynamodb_table.tenants
  } : name => t.name }
}

output "bucket_names" {
  description = "S3 buckets: template bundles, Terraform state, artifacts."
  value = {
    templates = aws_s3_bucket.templates.bucket
    state     = aws_s3_bucket.state.bucket
    artifacts = aws_s3_bucket.artifacts.bucket
  }
}

output "runner" {
  description = "ECS cluster and task definition of the runner."
  value = {
    cluster         = aws_ecs_cluster.runner.arn
    task_definition = aws_ecs_task_definition.runner.arn
    log_group       = aws_cloudwatch_log_group.runner.name
  }
}
