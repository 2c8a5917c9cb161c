variable "prefix" {
  description = "Prefix of every table, queue and bucket (STRATO_RESOURCE_PREFIX): `{prefix}-{logical}`. Bucket names are global."
  type        = string

  validation {
    # The rule of strato_aws::resources::Names: the functions refuse any other prefix at start.
    condition     = can(regex("^[a-z][a-z0-9-]{1,29}$", var.prefix))
    error_message = "The prefix must be 2-30 characters of a-z, 0-9 and '-', starting with a letter."
  }
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

variable "alarm_actions" {
  description = "ARNs (e.g. an SNS topic) notified when a DLQ receives messages. Empty: the alarms only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "kms_deletion_window_days" {
  description = "Days the data key waits before deletion once destroyed (7-30)."
  type        = number
  default     = 30
}

variable "force_destroy_buckets" {
  description = "Let `terraform destroy` delete non-empty buckets (all state history with them). For test deployments only."
  type        = bool
  default     = false
}

variable "access_log_retention_days" {
  description = "Days the state bucket's server access logs are kept (the access-logs bucket)."
  type        = number
  default     = 365
}
