# One Strato deployment composed from the modules. Copy this directory, add a backend, set the variables.

module "data" {
  source = "../modules/data"

  prefix                   = var.prefix
  state_retention_days     = var.state_retention_days
  artifacts_retention_days = var.artifacts_retention_days
  alarm_actions            = var.alarm_actions
  force_destroy_buckets    = var.disposable
  kms_deletion_window_days = var.disposable ? 7 : 30
}

module "secrets" {
  source = "../modules/secrets"

  prefix               = var.prefix
  ws_jwt_secret        = var.ws_jwt_secret
  run_proof_secret     = var.run_proof_secret
  agent_token_secret   = var.agent_token_secret
  recovery_window_days = var.disposable ? 0 : 7
}

# Strato as an OIDC issuer: the signing keys, and the discovery document and JWKS on their own CloudFront
# distribution (independent of the console, so turning the console off never breaks tenants' trust).
module "issuer" {
  source = "../modules/issuer"
  count  = var.oidc_issuer.enabled ? 1 : 0

  prefix               = var.prefix
  keys                 = var.oidc_issuer.keys
  signing_key          = var.oidc_issuer.signing_key
  price_class          = var.oidc_issuer.price_class
  certificate_arn      = var.oidc_issuer.certificate_arn
  aliases              = var.oidc_issuer.aliases
  waf_web_acl_arn      = var.oidc_issuer.waf_web_acl_arn
  deletion_window_days = var.disposable ? 7 : 30
  force_destroy_bucket = true
}

module "api" {
  source = "../modules/api"

  prefix             = var.prefix
  region             = var.region
  jwt_issuer         = var.jwt_issuer
  jwt_audience       = var.operator_audience == "" ? var.jwt_audience : distinct(concat(var.jwt_audience, [var.operator_audience]))
  tenant_claim       = var.tenant_claim
  api_function       = module.functions.functions["api"]
  ws_function        = module.functions.functions["ws"]
  rate_limit         = var.api_rate_limit
  burst_limit        = var.api_burst_limit
  log_retention_days = var.log_retention_days
  kms_key_arn        = module.data.kms_key_arn
}

module "runner" {
  source = "../modules/runner"

  prefix                  = var.prefix
  region                  = var.region
  tables                  = module.data.tables
  queues                  = module.data.queues
  buckets                 = module.data.buckets
  kms_key_arn             = module.data.kms_key_arn
  agent_token_secret_arn  = module.secrets.agent_token_arn
  control_plane_url       = module.api.http_api_url
  image                   = var.runner_image
  image_tag               = var.runner_image_tag
  cpu                     = var.runner_cpu
  memory_mb               = var.runner_memory_mb
  time_limit_secs         = var.runner_time_limit_secs
  target_role_arns        = var.target_role_arns
  engine_policy_arns      = var.runner_policy_arns
  log_retention_days      = var.log_retention_days
  force_delete_repository = var.disposable
}

module "functions" {
  source = "../modules/functions"

  prefix                  = var.prefix
  region                  = var.region
  lambda_zip_dir          = var.lambda_zip_dir
  memory_mb               = var.lambda_memory_mb
  reserved_concurrency    = var.reserved_concurrency
  log_retention_days      = var.log_retention_days
  log_level               = var.log_level
  code_signing_config_arn = var.code_signing_config_arn
  tenant_claim            = var.tenant_claim
  scope_prefix            = var.scope_prefix
  operator_audience       = var.operator_audience
  ws_ticket_issuer        = var.ws_jwt_check_claims ? var.jwt_issuer : null
  ws_ticket_audience      = var.ws_jwt_check_claims ? var.jwt_audience[0] : null
  tables                  = module.data.tables
  queues                  = module.data.queues
  buckets                 = module.data.buckets
  kms_key_arn             = module.data.kms_key_arn
  oidc                    = var.oidc_issuer.enabled ? { issuer = module.issuer[0].issuer, signing_key_arn = module.issuer[0].signing_key_arn } : null
  drift_batch             = var.drift_batch
  sweep_grace_secs        = var.sweep_grace_secs
  heartbeat_stale_secs    = var.heartbeat_stale_secs
  ws                      = module.api.ws

  secrets = {
    ws_jwt_arn      = module.secrets.ws_jwt_arn
    run_proof_arn   = module.secrets.run_proof_arn
    agent_token_arn = module.secrets.agent_token_arn
  }

  runner = {
    cluster_arn            = module.runner.cluster_arn
    task_definition_arn    = module.runner.task_definition_arn
    task_definition_family = module.runner.task_definition_family
    container              = module.runner.container
    task_role_arn          = module.runner.task_role_arn
    execution_role_arn     = module.runner.execution_role_arn
    subnets                = var.runner_subnets
    security_groups        = var.runner_security_groups
    assign_public_ip       = var.runner_assign_public_ip
  }
}

module "schedules" {
  source = "../modules/schedules"

  prefix                 = var.prefix
  scheduler_function_arn = module.functions.functions["scheduler"].arn
  drift_schedule         = var.drift_schedule
  sweep_schedule         = var.sweep_schedule
  runner_cluster_arn     = module.runner.cluster_arn
  events_queue           = module.data.queues["events"]
}

module "observability" {
  source = "../modules/observability"

  prefix                          = var.prefix
  region                          = var.region
  functions                       = module.functions.functions
  function_log_groups             = module.functions.log_groups
  runner_log_group                = module.runner.log_group
  runner_cluster_arn              = module.runner.cluster_arn
  queues                          = module.data.queues
  alarm_actions                   = var.alarm_actions
  log_retention_days              = var.log_retention_days
  kms_key_arn                     = module.data.kms_key_arn
  failure_rate_percent            = var.failure_rate_percent
  failure_rate_min_operations     = var.failure_rate_min_operations
  stuck_operation_secs            = var.stuck_operation_secs
  jobs_queue_age_secs             = var.jobs_queue_age_secs
  lambda_errors_threshold         = var.lambda_errors_threshold
  lambda_throttles_threshold      = var.lambda_throttles_threshold
  runner_start_failures_threshold = var.runner_start_failures_threshold
  saved_query                     = var.logs_saved_query
}

module "console" {
  source = "../modules/console"
  count  = var.console.enabled ? 1 : 0

  prefix               = var.prefix
  dist_dir             = var.console.dist_dir
  http_api_endpoint    = module.api.http_api_url
  websocket_url        = module.api.websocket_url
  oidc_issuer          = var.jwt_issuer
  oidc_client_id       = coalesce(var.console.oidc_client_id, var.jwt_audience[0])
  connect_src_extra    = var.console.connect_src_extra
  price_class          = var.console.price_class
  certificate_arn      = var.console.certificate_arn
  aliases              = var.console.aliases
  waf_web_acl_arn      = var.console.waf_web_acl_arn
  force_destroy_bucket = true
}
