# ---- deployment ------------------------------------------------------------------------------------------

variable "prefix" {
  description = "Prefix of every table, queue, bucket, function and role (STRATO_RESOURCE_PREFIX). Bucket names are global, so pick one nobody else uses."
  type        = string

  validation {
    # The rule of strato_aws::resources::Names: the functions refuse any other prefix at start.
    condition     = can(regex("^[a-z][a-z0-9-]{1,29}$", var.prefix))
    error_message = "The prefix must be 2-30 characters of a-z, 0-9 and '-', starting with a letter."
  }
}

variable "region" {
  description = "AWS region of the control plane."
  type        = string
}

variable "tags" {
  description = "Extra tags on every resource (`strato:deployment` is always the prefix: the engine session denies what carries it)."
  type        = map(string)
  default     = {}
}

variable "log_retention_days" {
  description = "Retention of every log group (functions, runner, API access logs, failed runner starts); all are encrypted with Strato's data key."
  type        = number
  default     = 30

  validation {
    # The values CloudWatch Logs accepts (0, "never expire", is not offered: logs must not grow forever).
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "The log_retention_days must be one CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653."
  }
}

variable "alarm_actions" {
  description = "ARNs (e.g. an SNS topic) notified by the alarms. Empty: they only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "disposable" {
  description = "A test deployment: destroy empties buckets and the ECR repository, deletes secrets at once and the KMS key after 7 days. Never on a real deployment."
  type        = bool
  default     = false
}

# ---- functions -------------------------------------------------------------------------------------------

variable "lambda_zip_dir" {
  description = "Where the packaging wrote the functions (cargo-lambda's layout): <dir>/strato-<function>/bootstrap.zip, arm64."
  type        = string
  default     = "../../target/lambda"
}

variable "lambda_memory_mb" {
  description = "Memory of each function (CPU grows with it)."
  type        = number
  default     = 256
}

variable "code_signing_config_arn" {
  description = <<-EOT
    ARN of a Lambda code signing config (aws_lambda_code_signing_config with your AWS Signer profile, policy
    Enforce): each function then accepts only zips signed by that profile (sign target/lambda/*/bootstrap.zip
    with `aws signer start-signing-job` and point lambda_zip_dir at the signed copies). Null: off.
  EOT
  type        = string
  default     = null

  validation {
    condition     = var.code_signing_config_arn == null || can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:code-signing-config:csc-[0-9a-f]+$", var.code_signing_config_arn))
    error_message = "The code_signing_config_arn must be a Lambda code signing config ARN (arn:aws:lambda:<region>:<account>:code-signing-config:csc-…)."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrency per function; functions not named are unreserved (see the functions module)."
  type        = map(number)
  default     = { dispatcher = 5, status = 10 }
}

variable "log_level" {
  description = "RUST_LOG of the functions (tracing env filter)."
  type        = string
  default     = "info"
}

# ---- authentication and secrets --------------------------------------------------------------------------

variable "jwt_issuer" {
  description = "OIDC issuer URL whose tokens the HTTP API's JWT authorizer accepts."
  type        = string
}

variable "jwt_audience" {
  description = "Audiences (client ids) the HTTP API's JWT authorizer accepts."
  type        = list(string)
}

variable "tenant_claim" {
  description = "JWT claim that holds the tenant id (STRATO_TENANT_CLAIM, api and ws)."
  type        = string
  default     = "tenant_id"
}

variable "scope_prefix" {
  description = "What precedes Strato's scope names in your identity provider's tokens (STRATO_SCOPE_PREFIX), e.g. `https://api.example.com/` for Cognito resource-server scopes. Empty: bare names such as `clusters:read`."
  type        = string
  default     = ""
}

variable "operator_audience" {
  description = "The app client id (audience) of the platform operator's tokens: the JWT authorizer accepts it too, and /v1/admin routes accept only its tokens that name no tenant and grant `platform:admin` (STRATO_OPERATOR_AUDIENCE). Never a client tenants' users sign in with. Empty: no operator routes."
  type        = string
  default     = ""
}

variable "ws_jwt_check_claims" {
  description = "Whether WebSocket tickets carry (and the ws function requires) iss/aud = jwt_issuer / jwt_audience[0] instead of the default audience `strato-ws`."
  type        = bool
  default     = false
}

variable "ws_jwt_secret" {
  description = "HS256 key of WebSocket tickets, at least 32 bytes (`openssl rand -hex 32`). Stored in Secrets Manager; the functions get its ARN."
  type        = string
  sensitive   = true
}

variable "run_proof_secret" {
  description = "Key of the runners' run proofs (dispatcher and status), at least 32 bytes."
  type        = string
  sensitive   = true
}

variable "agent_token_secret" {
  description = "Root of the cluster agents' registration tokens (api and runner). Empty: templates with an agent are refused."
  type        = string
  default     = ""
  sensitive   = true
}

# ---- runner (Fargate) ------------------------------------------------------------------------------------

variable "runner_image" {
  description = "Full image URI of the runner. Null: the deployment's ECR repository at runner_image_tag."
  type        = string
  default     = null
}

variable "runner_image_tag" {
  description = "Tag of the runner image in the deployment's ECR repository (immutable tags: each release a new one)."
  type        = string
  default     = "initial"
}

variable "runner_subnets" {
  description = "Subnets the runner tasks start in (they need egress to AWS APIs and the providers' endpoints)."
  type        = list(string)

  validation {
    condition     = length(var.runner_subnets) > 0
    error_message = "At least one subnet is needed for the runner tasks."
  }
}

variable "runner_security_groups" {
  description = "Security groups of the runner tasks (egress only is enough)."
  type        = list(string)

  validation {
    condition     = length(var.runner_security_groups) > 0
    error_message = "At least one security group is needed for the runner tasks."
  }
}

variable "runner_assign_public_ip" {
  description = "Give runner tasks a public IP (public subnets without a NAT gateway)."
  type        = bool
  default     = false
}

variable "runner_cpu" {
  description = "Fargate CPU units of a runner task."
  type        = number
  default     = 1024
}

variable "runner_memory_mb" {
  description = "Fargate memory of a runner task."
  type        = number
  default     = 2048
}

variable "runner_time_limit_secs" {
  description = "Per-operation time limit of the runner (STRATO_TIME_LIMIT_SECS), under an hour."
  type        = number
  default     = 1800
}

variable "target_role_arns" {
  description = "Roles in tenants' target accounts the runner may assume. Empty: none."
  type        = list(string)
  default     = []
}

variable "runner_policy_arns" {
  description = "Managed policies of the runner's engine role: what templates may create in this account. Empty: only target accounts work."
  type        = list(string)
  default     = []
}

# ---- schedules and limits --------------------------------------------------------------------------------

variable "drift_schedule" {
  description = "How often the scheduler looks for clusters whose drift check is due."
  type        = string
  default     = "rate(15 minutes)"
}

variable "sweep_schedule" {
  description = "How often the sweeper re-enqueues undispatched operations and clears dead runners' locks."
  type        = string
  default     = "rate(2 minutes)"
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

variable "api_rate_limit" {
  description = "Steady-state requests per second the HTTP API accepts."
  type        = number
  default     = 100
}

variable "api_burst_limit" {
  description = "Burst of requests the HTTP API accepts above the rate limit."
  type        = number
  default     = 200
}

variable "state_retention_days" {
  description = "Days a replaced Terraform state version is kept (restores go back this far)."
  type        = number
  default     = 30
}

variable "artifacts_retention_days" {
  description = "Days log archives, debug logs and spilled events are kept."
  type        = number
  default     = 30
}

# ---- alarm thresholds (infra/README.md, Operations guide) ----------------------------------------------------

variable "failure_rate_percent" {
  description = "Alarm when more than this percentage of the operations ended in 15 minutes failed."
  type        = number
  default     = 25
}

variable "failure_rate_min_operations" {
  description = "The failure rate alarm counts only 15-minute periods in which at least this many operations ended."
  type        = number
  default     = 4
}

variable "stuck_operation_secs" {
  description = "Alarm when the oldest open operation is older than this many seconds."
  type        = number
  default     = 7200
}

variable "jobs_queue_age_secs" {
  description = "Alarm when the jobs queue's oldest message is older than this many seconds."
  type        = number
  default     = 600
}

variable "lambda_errors_threshold" {
  description = "Alarm when a function fails more than this many invocations in 5 minutes."
  type        = number
  default     = 0
}

variable "lambda_throttles_threshold" {
  description = "Alarm when a function is throttled more than this many times in 5 minutes."
  type        = number
  default     = 0
}

variable "runner_start_failures_threshold" {
  description = "Alarm when more than this many runner tasks fail to start in 15 minutes."
  type        = number
  default     = 0
}

variable "logs_saved_query" {
  description = "Whether to save the Logs Insights query \"everything about operation X\" (an emulator without the API: false)."
  type        = bool
  default     = true
}

# ---- web console (modules/console) -----------------------------------------------------------------------

variable "console" {
  description = <<-EOT
    The web console on CloudFront (console at /, the HTTP API at /v1/*, one origin). Off unless enabled: it needs
    a built console (`cd console && npm ci && npm run build`) and the plan refuses a dist_dir without index.html.
    Users log in at jwt_issuer (the JWT authorizer's issuer, so the API accepts the console's tokens) as the
    client oidc_client_id (null: jwt_audience[0]; its tokens must carry one of jwt_audience as aud/client_id).
    dist_dir is relative to this directory, like lambda_zip_dir. certificate_arn (ACM, us-east-1) with aliases
    serves it on your own names with TLS 1.2 as the minimum; waf_web_acl_arn puts a WAFv2 web ACL (scope
    CLOUDFRONT) in front of it and /v1/*.
  EOT
  type = object({
    enabled           = optional(bool, false)
    dist_dir          = optional(string, "../../console/dist")
    oidc_client_id    = optional(string)
    connect_src_extra = optional(list(string), [])
    price_class       = optional(string, "PriceClass_100")
    certificate_arn   = optional(string)
    aliases           = optional(list(string), [])
    waf_web_acl_arn   = optional(string)
  })
  default  = {}
  nullable = false
}

# ---- Strato as an OIDC issuer (modules/issuer) -----------------------------------------------------------

variable "oidc_issuer" {
  description = <<-EOT
    Strato as an OpenID Connect issuer: each run gets short-lived identity tokens (RS256, signed by a KMS key)
    that tenants' clouds exchange for credentials (AWS AssumeRoleWithWebIdentity, GCP workload identity
    federation, Azure federated credentials), so no tenant stores cloud keys. On unless enabled = false: its
    discovery document and JWKS are static objects behind their own CloudFront distribution, and the issuer URL
    (output oidc_issuer) is STRATO_OIDC_ISSUER of the dispatcher and the api. Tenants' clouds trust that URL:
    give it your own name (certificate_arn, ACM in us-east-1, with aliases; the first alias is the issuer's
    host) before tenants configure trust, because the *.cloudfront.net name changes if the distribution is
    ever re-created. keys / signing_key: the signing key generations and the one that signs (rotation:
    infra/README.md). Off: runs get no identity tokens, exactly as before.
  EOT
  type = object({
    enabled         = optional(bool, true)
    keys            = optional(list(string), ["1"])
    signing_key     = optional(string, "1")
    price_class     = optional(string, "PriceClass_100")
    certificate_arn = optional(string)
    aliases         = optional(list(string), [])
    waf_web_acl_arn = optional(string)
  })
  default  = {}
  nullable = false
}
