# EventBridge Scheduler ticks for the scheduler function (drift checks, the sweeper), and the EventBridge rule
# that sends the runner cluster's stopped tasks to the events queue (a runner task that stops without a final
# report fails its operation).

variable "prefix" {
  description = "Deployment prefix: schedules, the rule and the role are named after it."
  type        = string
}

variable "scheduler_function_arn" {
  description = "ARN of the scheduler function."
  type        = string
}

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

variable "runner_cluster_arn" {
  description = "The runner's ECS cluster."
  type        = string
}

variable "events_queue" {
  description = "The events queue (the data module's queues[\"events\"]): { url, arn }."
  type        = object({ url = string, arn = string })
}

locals {
  ticks = {
    drift = var.drift_schedule
    sweep = var.sweep_schedule
  }
}

resource "aws_scheduler_schedule_group" "this" {
  name = "${var.prefix}-strato"
}

resource "aws_iam_role" "scheduler" {
  name = "${var.prefix}-scheduler-invoke"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
      # Scheduler names its schedule group as the source.
      Condition = { ArnEquals = { "aws:SourceArn" = aws_scheduler_schedule_group.this.arn } }
    }]
  })
}

resource "aws_iam_role_policy" "scheduler" {
  name = "${var.prefix}-scheduler-invoke"
  role = aws_iam_role.scheduler.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid      = "InvokeScheduler"
      Effect   = "Allow"
      Action   = ["lambda:InvokeFunction"]
      Resource = var.scheduler_function_arn
    }]
  })
}

resource "aws_scheduler_schedule" "tick" {
  #checkov:skip=CKV_AWS_297:The schedules' input is a constant tick ({"tick": "drift"}): nothing to protect with a customer-managed key.
  for_each = local.ticks

  name                = "${var.prefix}-${each.key}"
  group_name          = aws_scheduler_schedule_group.this.name
  description         = "Strato scheduler tick: ${each.key}"
  schedule_expression = each.value

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = var.scheduler_function_arn
    role_arn = aws_iam_role.scheduler.arn
    # strato_scheduler::Tick.
    input = jsonencode({ task = each.key })

    # A missed tick is harmless (the next one does its work): no retries piling up behind a slow one.
    retry_policy {
      maximum_retry_attempts       = 0
      maximum_event_age_in_seconds = 60
    }
  }
}

# ---- runner task state changes → events queue ------------------------------------------------------------

resource "aws_cloudwatch_event_rule" "runner_task_stopped" {
  name        = "${var.prefix}-runner-task-stopped"
  description = "Strato runner tasks that stopped, for the status function"
  event_pattern = jsonencode({
    source        = ["aws.ecs"]
    "detail-type" = ["ECS Task State Change"]
    detail = {
      clusterArn = [var.runner_cluster_arn]
      lastStatus = ["STOPPED"]
    }
  })
}

resource "aws_cloudwatch_event_target" "runner_task_stopped" {
  rule = aws_cloudwatch_event_rule.runner_task_stopped.name
  arn  = var.events_queue.arn
}

# EventBridge may send exactly this rule's events to the events queue.
resource "aws_sqs_queue_policy" "events_from_eventbridge" {
  queue_url = var.events_queue.url
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EcsTaskStateChanges"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sqs:SendMessage"
      Resource  = var.events_queue.arn
      Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.runner_task_stopped.arn } }
    }]
  })
}

output "schedules" {
  description = "Tick → schedule name."
  value       = { for k, s in aws_scheduler_schedule.tick : k => s.name }
}

output "task_stopped_rule" {
  description = "The EventBridge rule feeding stopped runner tasks to the events queue."
  value       = aws_cloudwatch_event_rule.runner_task_stopped.name
}
