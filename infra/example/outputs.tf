# A contract: devstack's "run on infra" mode reads these with `terraform output -json`.

output "resource_prefix" {
  description = "STRATO_RESOURCE_PREFIX of every function and the runner."
  value       = var.prefix
}

output "region" {
  description = "Region of the deployment."
  value       = var.region
}

output "tables" {
  description = "Logical table name (strato_aws::resources) → table name."
  value       = { for k, t in module.data.tables : k => t.name }
}

output "queues" {
  description = "Logical queue name → queue URL."
  value       = { for k, q in module.data.queues : k => q.url }
}

output "dead_letter_queues" {
  description = "Logical queue name → its DLQ's URL."
  value       = { for k, q in module.data.queues : k => q.dlq_url }
}

output "buckets" {
  description = "Logical bucket name → bucket name."
  value       = { for k, b in module.data.buckets : k => b.name }
}

output "functions" {
  description = "Logical function name → Lambda function name."
  value       = { for k, f in module.functions.functions : k => f.name }
}

output "runner" {
  description = "What starting a runner task needs (the dispatcher's view), and the runner's roles and logs."
  value = {
    cluster_arn         = module.runner.cluster_arn
    task_definition_arn = module.runner.task_definition_arn
    container           = module.runner.container
    subnets             = var.runner_subnets
    security_groups     = var.runner_security_groups
    assign_public_ip    = var.runner_assign_public_ip
    task_role_arn       = module.runner.task_role_arn
    state_role_arn      = module.runner.state_role_arn
    engine_role_arn     = module.runner.engine_role_arn
    log_group           = module.runner.log_group
    repository_url      = module.runner.repository_url
    image               = module.runner.image
  }
}

output "secrets" {
  description = "Secrets Manager ARNs; agent_token_arn is null when agents are off."
  value = {
    ws_jwt_arn      = module.secrets.ws_jwt_arn
    run_proof_arn   = module.secrets.run_proof_arn
    agent_token_arn = module.secrets.agent_token_arn
  }
}

output "kms_key_arn" {
  description = "Strato's data key: state, artifacts and sealed values."
  value       = module.data.kms_key_arn
}

output "http_api_url" {
  description = "Base URL of the tenants' HTTP API."
  value       = module.api.http_api_url
}

output "websocket_url" {
  description = "WebSocket URL for live logs."
  value       = module.api.websocket_url
}

output "ws_management_endpoint" {
  description = "The @connections endpoint the ws and log-fanout functions post to."
  value       = module.api.ws.management_endpoint
}

output "alarms" {
  description = "Every alarm of the observability module: alarm name → what it watches (infra/README.md, Operations guide)."
  value       = module.observability.alarms
}

output "dashboard" {
  description = "The CloudWatch dashboard of Strato's vital signs."
  value       = module.observability.dashboard
}

output "operation_query" {
  description = "The saved Logs Insights query \"everything about operation X\"."
  value       = module.observability.operation_query
}

output "console_url" {
  description = "The web console (CloudFront; the HTTP API also answers there at /v1/*). Null when the console is off."
  value       = var.console.enabled ? module.console[0].url : null
}

output "oidc_issuer" {
  description = "Strato's OIDC issuer URL (https://host, no trailing slash): the `iss` of runs' identity tokens and STRATO_OIDC_ISSUER of the dispatcher and the api; <issuer>/.well-known/openid-configuration and /jwks.json are what tenants' clouds fetch. Null when the issuer is off."
  value       = var.oidc_issuer.enabled ? module.issuer[0].issuer : null
}

output "oidc_signing_key_arn" {
  description = "The KMS key that signs runs' identity tokens (alias/<prefix>-oidc). Null when the issuer is off."
  value       = var.oidc_issuer.enabled ? module.issuer[0].signing_key_arn : null
}

output "oidc_distribution_domain_name" {
  description = "The issuer's CloudFront name: the target of your DNS record when oidc_issuer.aliases are set. Null when the issuer is off."
  value       = var.oidc_issuer.enabled ? module.issuer[0].distribution_domain_name : null
}
