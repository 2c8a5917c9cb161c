# ---- deployment ------------------------------------------------------------------------------------------

variable "prefix" {
  description = "Prefix of every table, queue, bucket, function and role (STRATO_RESOURCE_PREFIX). Bucket names are global, so pick one nobody else uses."
  type        = string

  validation {
    # The rule of strato_shared::resources::Names: the functions refuse any other prefix at start.
    condition     = can(regex("^[a-z][a-z0-9-]{1,29}$", var.prefix))
    error_message = "The prefix must be 2-30 characters of a-z, 0-9 and '-', starting with a letter."
  }
}

variable "region" {
  description = "AWS region of the control plane."
  type        = string
}

variable "tags" {
  description = "Extra tags on every resource."
  type        = map(string)
  default     = {}
}

variable "log_retention_days" {
  description = "Retention of the functions' and the runner's CloudWatch log groups."
  type        = number
  default     = 30
}

variable "log_level" {
  description = "RUST_LOG of the functions (tracing env filter)."
  type        = string
  default     = "info"
}

# ---- functions -------------------------------------------------------------------------------------------

variable "lambda_zip_dir" {
  description = "Where `cargo lambda build --release --output-format zip` wrote the functions: <dir>/strato-<function>/bootstrap.zip."
  type        = string
  default     = "../target/lambda"
}

variable "lambda_runtime" {
  description = "Lambda runtime of the functions (an OS-only runtime: the zip holds a `bootstrap` binary). AWS provider 3.39 does not know provided.al2023; with a newer provider set it here."
  type        = string
  default     = "provided.al2"

  validation {
    condition     = contains(["provided.al2", "provided.al2023"], var.lambda_runtime)
    error_message = "The runtime must be provided.al2 or provided.al2023."
  }
}

variable "lambda_memory_mb" {
  description = "Memory of each function (CPU grows with it)."
  type        = number
  default     = 256
}

# ---- authentication --------------------------------------------------------------------------------------

variable "jwt_issuer" {
  description = "OIDC issuer URL whose tokens the HTTP API's JWT authorizer accepts (API Gateway fetches its JWKS)."
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

variable "ws_jwt_secret" {
  description = "HS256 secret of WebSocket tickets, at least 32 bytes (e.g. `openssl rand -hex 32`): the api signs them (POST /v1/ws-tickets) and the ws function checks them at `$connect?token=` (STRATO_JWT_SECRET of both; both refuse to start with a shorter one). Stored in Secrets Manager (secrets.tf); the functions get its ARN and read it at cold start."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.ws_jwt_secret) >= 32
    error_message = "The ws_jwt_secret must be at least 32 bytes of random data (for example: openssl rand -hex 32)."
  }
}

variable "ws_jwt_check_claims" {
  description = "Whether WebSocket tickets carry (and the ws function requires) iss/aud = jwt_issuer / jwt_audience[0] (STRATO_JWT_ISSUER / STRATO_JWT_AUDIENCE) instead of the default audience `strato-ws`. Audience, scope `ws:connect` and a 5-minute life are checked either way."
  type        = bool
  default     = false
}

variable "run_proof_secret" {
  description = "Key of the runners' run proofs (STRATO_RUN_PROOF_SECRET, dispatcher and status only): each runner task is started with HMAC(key, operation, fencing token) and status refuses a runner event without its run's proof, so code inside one run cannot report for another. At least 32 bytes, e.g. `openssl rand -hex 32`. Stored in Secrets Manager (secrets.tf)."
  type        = string
  sensitive   = true
  validation {
    condition     = length(var.run_proof_secret) >= 32
    error_message = "The run_proof_secret must be at least 32 bytes, e.g. from openssl rand -hex 32."
  }
}

variable "agent_token_secret" {
  description = "Secret the cluster agents' one-time registration tokens are derived from (STRATO_AGENT_TOKEN_SECRET, api and runner). Empty: templates with an agent are refused."
  type        = string
  default     = ""
  sensitive   = true
}

# ---- runner (Fargate) ------------------------------------------------------------------------------------

variable "runner_image" {
  description = "Image URI of the runner (runner/Dockerfile), e.g. <account>.dkr.ecr.<region>.amazonaws.com/strato-runner:<tag>."
  type        = string
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
  description = "Fargate memory of a runner task (Terraform and its providers live in it)."
  type        = number
  default     = 2048
}

variable "runner_time_limit_secs" {
  description = "Per-operation time limit of the runner (STRATO_TIME_LIMIT_SECS). Under an hour: the run roles' sessions (state, engine) last one hour."
  type        = number
  default     = 1800
  validation {
    condition     = var.runner_time_limit_secs > 0 && var.runner_time_limit_secs < 3600
    error_message = "The runner_time_limit_secs must be between 1 and 3599: a run's role sessions last one hour."
  }
}

variable "target_role_arns" {
  description = "Roles in tenants' target accounts the runner may assume (sts:AssumeRole). Empty: none."
  type        = list(string)
  default     = []
}

variable "runner_policy_arns" {
  description = "Managed policies attached to the runner's engine role (the providers' identity for clusters provisioned without a target account, i.e. in this account (what the templates create: VPC, EKS, IAM…). Empty: only target accounts can be used."
  type        = list(string)
  default     = []
}

# ---- schedules -------------------------------------------------------------------------------------------

variable "drift_schedule" {
  description = "How often the scheduler looks for clusters whose drift check is due (each cluster is checked every 6 h, with jitter)."
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

# ---- operations ------------------------------------------------------------------------------------------

variable "alarm_actions" {
  description = "ARNs (e.g. an SNS topic) notified when a DLQ receives messages. Empty: the alarms only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "api_rate_limit" {
  description = "Steady-state requests per second the HTTP API accepts (all routes together)."
  type        = number
  default     = 100
}

variable "api_burst_limit" {
  description = "Burst of requests the HTTP API accepts above the rate limit."
  type        = number
  default     = 200
}

variable "state_retention_days" {
  description = "Days a replaced (noncurrent) Terraform state version is kept; after a cluster's DELETE its whole state is gone this long after. Restores can go back this far."
  type        = number
  default     = 30
}

variable "artifacts_retention_days" {
  description = "Days log archives, debug logs and spilled events are kept in the artifacts bucket."
  type        = number
  default     = 30
}
