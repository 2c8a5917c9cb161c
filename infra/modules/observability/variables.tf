variable "prefix" {
  description = "Deployment prefix: alarms, the dashboard, the rule and the saved query are named after it."
  type        = string
}

variable "region" {
  description = "Region of the deployment (the dashboard's widgets)."
  type        = string
}

variable "functions" {
  description = "The functions module's functions: logical name → { name, ... } (Errors and Throttles alarms per function)."
  type        = map(object({ name = string }))
}

variable "function_log_groups" {
  description = "The functions module's log_groups: logical name → log group (the saved query reads them all)."
  type        = map(string)
}

variable "runner_log_group" {
  description = "The runner tasks' log group (the saved query reads it too)."
  type        = string
}

variable "runner_cluster_arn" {
  description = "The runner's ECS cluster: its tasks that fail to start are counted."
  type        = string
}

variable "queues" {
  description = "The data module's queues: logical name → { name, url, dlq_url, ... } (jobs queue age alarm; DLQ depth on the dashboard)."
  type        = map(object({ name = string, url = string, dlq_url = string }))
}

variable "alarm_actions" {
  description = "ARNs (e.g. an SNS topic) notified when an alarm fires and when it recovers. Empty: the alarms only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "log_retention_days" {
  description = "Retention of the log group that records runner tasks which failed to start."
  type        = number
  default     = 30
}

variable "saved_query" {
  description = "Whether to save the Logs Insights query \"everything about operation X\" (emulators without the API set false)."
  type        = bool
  default     = true
}

variable "failure_rate_percent" {
  description = "Alarm when more than this percentage of the operations that ended in a period failed."
  type        = number
  default     = 25

  validation {
    condition     = var.failure_rate_percent > 0 && var.failure_rate_percent <= 100
    error_message = "failure_rate_percent is a percentage: more than 0, at most 100."
  }
}

variable "failure_rate_min_operations" {
  description = "The failure rate counts only in periods where at least this many operations ended (one failure in two is noise)."
  type        = number
  default     = 4
}

variable "failure_rate_period_secs" {
  description = "Period of the failure rate (seconds, a multiple of 60)."
  type        = number
  default     = 900
}

variable "stuck_operation_secs" {
  description = "Alarm when the oldest open (queued, dispatched or running) operation is older than this."
  type        = number
  default     = 7200
}

variable "jobs_queue_age_secs" {
  description = "Alarm when the oldest message in the jobs queue is older than this (the dispatcher is not consuming)."
  type        = number
  default     = 600
}

variable "lambda_errors_threshold" {
  description = "Alarm when a function has more than this many errors (failed invocations) in 5 minutes."
  type        = number
  default     = 0
}

variable "lambda_throttles_threshold" {
  description = "Alarm when a function is throttled more than this many times in 5 minutes."
  type        = number
  default     = 0
}

variable "runner_start_failures_threshold" {
  description = "Alarm when more than this many runner tasks fail to start (ECS stopCode TaskFailedToStart) in 15 minutes."
  type        = number
  default     = 0
}

variable "kms_key_arn" {
  description = "Strato's data key (the data module's `kms_key_arn`): the log groups' encryption."
  type        = string
}
