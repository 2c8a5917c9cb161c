variable "prefix" {
  description = "Deployment prefix (STRATO_RESOURCE_PREFIX): functions and roles are `{prefix}-{function}`."
  type        = string
}

variable "region" {
  description = "AWS region of the deployment."
  type        = string
}

variable "lambda_zip_dir" {
  description = "Where the packaging wrote the functions (cargo-lambda's layout): <dir>/strato-<function>/bootstrap.zip, arm64."
  type        = string
}

variable "memory_mb" {
  description = "Memory of each function (CPU grows with it)."
  type        = number
  default     = 256
}

variable "reserved_concurrency" {
  description = "Reserved concurrency per function (function → executions); functions not named are unreserved. The defaults cap how fast the dispatcher starts Fargate tasks and how hard status writes the store; the SQS mappings of a capped function poll with the same maximum, so capped batches wait in the queue instead of being throttled into the DLQ."
  type        = map(number)
  default     = { dispatcher = 5, status = 10 }

  validation {
    condition = alltrue([for f, n in var.reserved_concurrency :
    contains(["api", "dispatcher", "status", "ws", "log-fanout", "scheduler", "webhooks"], f) && n >= 2])
    error_message = "reserved_concurrency keys are function names (api, dispatcher, status, ws, log-fanout, scheduler, webhooks), values at least 2 (SQS mappings need 2)."
  }
}

variable "log_retention_days" {
  description = "Retention of the functions' log groups."
  type        = number
  default     = 30
}

variable "log_level" {
  description = "RUST_LOG of the functions (tracing env filter)."
  type        = string
  default     = "info"
}

variable "tenant_claim" {
  description = "JWT claim that holds the tenant id (STRATO_TENANT_CLAIM, api and ws)."
  type        = string
  default     = "tenant_id"
}

variable "ws_ticket_issuer" {
  description = "When set, WebSocket tickets carry and require iss/aud = this issuer / ws_ticket_audience (STRATO_JWT_ISSUER / STRATO_JWT_AUDIENCE of api and ws) instead of the default audience `strato-ws`."
  type        = string
  default     = null
}

variable "ws_ticket_audience" {
  description = "Audience of WebSocket tickets when ws_ticket_issuer is set."
  type        = string
  default     = null
}

variable "secrets" {
  description = "The secrets module's ARNs: ws_jwt_arn, run_proof_arn, agent_token_arn (null: agents off)."
  type        = object({ ws_jwt_arn = string, run_proof_arn = string, agent_token_arn = string })
}

variable "tables" {
  description = "The data module's `tables` output."
  type        = map(object({ name = string, arn = string }))
}

variable "queues" {
  description = "The data module's `queues` output."
  type        = map(object({ name = string, url = string, arn = string, dlq_url = string, dlq_arn = string }))
}

variable "buckets" {
  description = "The data module's `buckets` output."
  type        = map(object({ name = string, arn = string }))
}

variable "kms_key_arn" {
  description = "Strato's data key."
  type        = string
}

variable "runner" {
  description = "What the dispatcher and scheduler need of the runner module and its network."
  type = object({
    cluster_arn            = string
    task_definition_arn    = string
    task_definition_family = string
    container              = string
    task_role_arn          = string
    execution_role_arn     = string
    subnets                = list(string)
    security_groups        = list(string)
    assign_public_ip       = bool
  })
}

variable "ws" {
  description = "The WebSocket API: its @connections endpoint and execution ARN/stage (for ManageConnections)."
  type        = object({ management_endpoint = string, execution_arn = string, stage = string })
}

variable "drift_batch" {
  description = "Clusters looked at per drift tick (STRATO_DRIFT_BATCH)."
  type        = number
  default     = 50
}

variable "sweep_grace_secs" {
  description = "Age after which a queued, undispatched operation is re-enqueued (STRATO_SWEEP_GRACE_SECS)."
  type        = number
  default     = 120
}

variable "heartbeat_stale_secs" {
  description = "Runner silence after which the sweeper checks its task (STRATO_HEARTBEAT_STALE_SECS)."
  type        = number
  default     = 120
}

variable "audit_retention_days" {
  description = "Days an audit log entry is kept before DynamoDB's TTL removes it (STRATO_AUDIT_RETENTION_DAYS)."
  type        = number
  default     = 365
}

variable "operation_retention_days" {
  description = "Days a finished operation is kept before DynamoDB's TTL removes it (STRATO_OPERATION_RETENTION_DAYS). Open operations are never removed; the audit log keeps who did what for audit_retention_days."
  type        = number
  default     = 90
  validation {
    condition     = var.operation_retention_days >= 1 && floor(var.operation_retention_days) == var.operation_retention_days
    error_message = "operation_retention_days must be a whole number of days, at least 1."
  }
}

variable "scope_prefix" {
  description = "What precedes each of Strato's scope names in the tokens' granted scopes (STRATO_SCOPE_PREFIX of the api), e.g. a Cognito resource server's identifier followed by `/`. Empty: bare names (`clusters:read`). Scopes match exactly, never by suffix."
  type        = string
  default     = ""
}

variable "operator_audience" {
  description = "The audience (app client id) of the platform operator's tokens (STRATO_OPERATOR_AUDIENCE of the api): /v1/admin routes accept only tokens of this audience that name no tenant and grant `platform:admin`. Add it to the HTTP API's jwt_audience too. Empty: the operator routes are closed."
  type        = string
  default     = ""
}

variable "operator_issuer" {
  description = "The issuer of the platform operator's tokens (STRATO_OPERATOR_ISSUER), when it must be checked beside the audience. Empty: any issuer the HTTP API's JWT authorizer accepts."
  type        = string
  default     = ""
}

variable "code_signing_config_arn" {
  description = "A Lambda code signing config (AWS Signer profiles) every function is deployed under. Null: code is not signature-checked."
  type        = string
  default     = null
}

variable "oidc" {
  description = "Strato as an OIDC issuer (the issuer module): the issuer URL (STRATO_OIDC_ISSUER of the dispatcher and the api, exactly as every token's iss) and the signing key's ARN (STRATO_OIDC_SIGNING_KEY). The dispatcher may then Sign with that key and seal the run's tokens with the data key; the api may read its public half. Null: no run gets an identity token, and neither function may use a signing key."
  type        = object({ issuer = string, signing_key_arn = string })
  default     = null

  validation {
    # strato_domain::identity::Issuer's rule: the functions refuse anything else at start.
    condition     = var.oidc == null || can(regex("^https://[^/?#@]+(/[^?#]*[^/?#])?$", var.oidc.issuer))
    error_message = "oidc.issuer must be an https URL without a trailing slash, query or fragment (https://host[/path])."
  }
}
