variable "prefix" {
  description = "Deployment prefix (STRATO_RESOURCE_PREFIX)."
  type        = string
}

variable "region" {
  description = "AWS region of the deployment (awslogs)."
  type        = string
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
  description = "Strato's data key (the data module's `kms_key_arn`)."
  type        = string
}

variable "agent_token_secret_arn" {
  description = "The agent token secret (secrets module), null when agents are off."
  type        = string
  default     = null
}

variable "control_plane_url" {
  description = "Base URL of the HTTP API (STRATO_CONTROL_PLANE_URL: the agent's registration URL)."
  type        = string
}

variable "image" {
  description = "Full image URI of the runner. Null: the module's ECR repository at `image_tag`."
  type        = string
  default     = null
}

variable "image_tag" {
  description = "Tag of the runner image in the module's ECR repository (tags are immutable: a new release gets a new tag)."
  type        = string
  default     = "initial"
}

variable "cpu" {
  description = "Fargate CPU units of a runner task."
  type        = number
  default     = 1024
}

variable "memory_mb" {
  description = "Fargate memory of a runner task (Terraform and its providers live in it)."
  type        = number
  default     = 2048
}

variable "xray_daemon_image" {
  description = "Image of the X-Ray daemon sidecar the runner sends its trace segment to (pin a version you have vetted). Null: no sidecar, the runner's segments are not sent."
  type        = string
  default     = "public.ecr.aws/xray/aws-xray-daemon:3.x"
}

variable "time_limit_secs" {
  description = "Per-operation time limit of the runner (STRATO_TIME_LIMIT_SECS). Under an hour: the run roles' sessions last one hour."
  type        = number
  default     = 1800

  validation {
    condition     = var.time_limit_secs > 0 && var.time_limit_secs < 3600
    error_message = "The time_limit_secs must be between 1 and 3599: a run's role sessions last one hour."
  }
}

variable "target_role_arns" {
  description = "Roles in tenants' target accounts the runner may assume (sts:AssumeRole). Empty: none."
  type        = list(string)
  default     = []
}

variable "engine_policy_arns" {
  description = "Managed policies attached to the engine role: what templates may create in this account (clusters without a target account). Empty: only target accounts work."
  type        = list(string)
  default     = []
}

variable "log_retention_days" {
  description = "Retention of the runner's log group."
  type        = number
  default     = 30
}

variable "ecr_keep_images" {
  description = "Tagged runner images the ECR lifecycle policy keeps (older ones expire; untagged ones after a day)."
  type        = number
  default     = 20
}

variable "force_delete_repository" {
  description = "Let `terraform destroy` delete the ECR repository with its images (test deployments)."
  type        = bool
  default     = false
}
