# Secrets the functions read by reference: their environment holds `NAME_ARN`, never the value, and each
# function reads the value once at cold start (strato_aws::secret_env). The runner gets the agent secret
# through ECS `secrets`. Each role may read only its own (functions and runner modules). Encrypted with
# Secrets Manager's AWS-managed key: no KMS grant is needed to read them.

variable "prefix" {
  description = "Deployment prefix: secrets are named strato/<prefix>/<name>."
  type        = string
}

variable "ws_jwt_secret" {
  description = "HS256 key of WebSocket tickets, at least 32 bytes (`openssl rand -hex 32`): the api signs them (POST /v1/ws-tickets), the ws function checks them at `$connect?token=`."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.ws_jwt_secret) >= 32
    error_message = "The ws_jwt_secret must be at least 32 bytes of random data (for example: openssl rand -hex 32)."
  }
}

variable "run_proof_secret" {
  description = "Key of the runners' run proofs (dispatcher signs, status checks), at least 32 bytes."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.run_proof_secret) >= 32
    error_message = "The run_proof_secret must be at least 32 bytes, e.g. from openssl rand -hex 32."
  }
}

variable "agent_token_secret" {
  description = "Secret the cluster agents' one-time registration tokens are derived from (api and runner). Empty: no secret, templates with an agent are refused."
  type        = string
  default     = ""
  sensitive   = true
}

variable "recovery_window_days" {
  description = "Days a deleted secret can be restored (0: deleted at once, for test deployments)."
  type        = number
  default     = 7
}

locals {
  agent_enabled = nonsensitive(var.agent_token_secret != "")
  secrets = merge(
    {
      ws-jwt-secret    = { value = var.ws_jwt_secret, description = "Strato: HS256 key of WebSocket tickets (api signs, ws checks)" }
      run-proof-secret = { value = var.run_proof_secret, description = "Strato: key of runners' run proofs (dispatcher signs, status checks)" }
    },
    local.agent_enabled ? {
      agent-token-secret = { value = var.agent_token_secret, description = "Strato: root of cluster agents' registration tokens (api, runner)" }
    } : {},
  )
}

resource "aws_secretsmanager_secret" "this" {
  #checkov:skip=CKV2_AWS_57:Rotation is a two-key overlap the operator runs (put-secret-value; verifiers accept AWSPREVIOUS): the values are random keys, no rotation Lambda is needed (infra/README.md, Rotating secrets).
  #checkov:skip=CKV_AWS_149:The AWS-managed key aws/secretsmanager: each role may read only its own secret; Strato's data key would add Decrypt grants to roles that have no other use for it.
  for_each = nonsensitive(toset(keys(local.secrets)))

  name                    = "strato/${var.prefix}/${each.key}"
  description             = local.secrets[each.key].description
  recovery_window_in_days = var.recovery_window_days
}

resource "aws_secretsmanager_secret_version" "this" {
  for_each = aws_secretsmanager_secret.this

  secret_id     = each.value.id
  secret_string = local.secrets[each.key].value
}

output "ws_jwt_arn" {
  description = "ARN of the WebSocket ticket key (STRATO_JWT_SECRET_ARN of api and ws)."
  value       = aws_secretsmanager_secret.this["ws-jwt-secret"].arn
}

output "run_proof_arn" {
  description = "ARN of the run-proof key (STRATO_RUN_PROOF_SECRET_ARN of dispatcher and status)."
  value       = aws_secretsmanager_secret.this["run-proof-secret"].arn
}

output "agent_token_arn" {
  description = "ARN of the agent token secret, null when agent_token_secret is empty."
  value       = local.agent_enabled ? aws_secretsmanager_secret.this["agent-token-secret"].arn : null
}
