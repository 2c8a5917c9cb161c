# Alarms on Strato's vital signs, a dashboard of its metrics, and a saved Logs Insights query for one
# operation. The Strato/* metrics are the functions' and the runner's EMF lines (docs/metrics.md); the rest
# are AWS's own (SQS, Lambda, EventBridge). Every alarm notifies var.alarm_actions when it fires and recovers.

locals {
  namespace       = "Strato"
  jobs_queue_name = var.queues["jobs"].name

  # Failed / ended operations, in percent, over periods where enough ended to mean something. OperationOutcomes
  # (OperationsEnded by `outcome` alone, docs/metrics.md) is what makes this plain metric math: an alarm can
  # neither SEARCH nor combine Metrics Insights queries.
  outcomes = ["failed", "succeeded", "cancelled"]
  failure_rate_queries = concat(
    [for o in local.outcomes : {
      id     = "ended_${o}"
      metric = ["OperationOutcomes", "outcome", o]
    }],
    [{
      id         = "rate"
      expression = "IF(FILL(ended_failed, 0) + FILL(ended_succeeded, 0) + FILL(ended_cancelled, 0) >= ${var.failure_rate_min_operations}, 100 * FILL(ended_failed, 0) / (FILL(ended_failed, 0) + FILL(ended_succeeded, 0) + FILL(ended_cancelled, 0)), 0)"
      label      = "Failed operations (%)"
    }],
  )

  # Per function: failed invocations and throttles.
  lambda_alarms = merge([for k, f in var.functions : {
    "${k}-errors"    = { function = f.name, metric = "Errors", threshold = var.lambda_errors_threshold, what = "invocations failed (an unhandled error, a timeout or a crash)" }
    "${k}-throttles" = { function = f.name, metric = "Throttles", threshold = var.lambda_throttles_threshold, what = "invocations were throttled (concurrency exhausted)" }
  }]...)
}

resource "aws_cloudwatch_metric_alarm" "failure_rate" {
  alarm_name          = "${var.prefix}-operations-failure-rate"
  alarm_description   = "More than ${var.failure_rate_percent}% of the operations that ended in ${var.failure_rate_period_secs / 60} minutes failed (at least ${var.failure_rate_min_operations} ended). See infra/README.md, Operations guide."
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.failure_rate_percent
  evaluation_periods  = 1
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dynamic "metric_query" {
    for_each = local.failure_rate_queries
    content {
      id          = metric_query.value.id
      expression  = lookup(metric_query.value, "expression", null)
      label       = lookup(metric_query.value, "label", null)
      return_data = lookup(metric_query.value, "expression", null) != null

      dynamic "metric" {
        for_each = lookup(metric_query.value, "metric", null) == null ? [] : [metric_query.value.metric]
        content {
          namespace   = local.namespace
          metric_name = metric.value[0]
          dimensions  = { (metric.value[1]) = metric.value[2] }
          stat        = "Sum"
          period      = var.failure_rate_period_secs
        }
      }
    }
  }
}

# The scheduler's sweep reports the age of the oldest open operation; an operation that neither runs nor
# ends for this long is stuck (a lost job, a runner that never reported, a lock never handed on).
resource "aws_cloudwatch_metric_alarm" "operation_stuck" {
  alarm_name          = "${var.prefix}-operation-stuck"
  alarm_description   = "An operation has been open (queued, dispatched or running) for more than ${var.stuck_operation_secs} s. See infra/README.md, Operations guide."
  namespace           = local.namespace
  metric_name         = "OldestOpenOperationAge"
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 2
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.stuck_operation_secs
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "jobs_queue_age" {
  alarm_name          = "${var.prefix}-jobs-queue-age"
  alarm_description   = "The oldest message in ${local.jobs_queue_name} is older than ${var.jobs_queue_age_secs} s: the dispatcher is not consuming jobs. See infra/README.md, Operations guide."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = local.jobs_queue_name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.jobs_queue_age_secs
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "lambda" {
  for_each = local.lambda_alarms

  alarm_name          = "${var.prefix}-${each.key}"
  alarm_description   = "More than ${each.value.threshold} ${each.value.function} ${each.value.what} in 5 minutes. See infra/README.md, Operations guide."
  namespace           = "AWS/Lambda"
  metric_name         = each.value.metric
  dimensions          = { FunctionName = each.value.function }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = each.value.threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

# ---- runner tasks that fail to start -----------------------------------------------------------------------
# ECS reports a task that never started (image pull, ENI, secrets, capacity after placement) as STOPPED with
# stopCode TaskFailedToStart. The rule counts them (AWS/Events MatchedEvents) and keeps each event in a log
# group, where its stoppedReason says why.

resource "aws_cloudwatch_event_rule" "runner_failed_to_start" {
  name        = "${var.prefix}-runner-failed-to-start"
  description = "Strato runner tasks that failed to start"
  event_pattern = jsonencode({
    source        = ["aws.ecs"]
    "detail-type" = ["ECS Task State Change"]
    detail = {
      clusterArn = [var.runner_cluster_arn]
      lastStatus = ["STOPPED"]
      stopCode   = ["TaskFailedToStart"]
    }
  })
}

resource "aws_cloudwatch_log_group" "runner_failed_to_start" {
  #checkov:skip=CKV_AWS_338:Retention is the operator's log_retention_days (default 30: operational logs; the audit log is the DynamoDB audit table with its own retention).
  name              = "/aws/events/${var.prefix}-runner-failed-to-start"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_cloudwatch_event_target" "runner_failed_to_start" {
  rule = aws_cloudwatch_event_rule.runner_failed_to_start.name
  arn  = aws_cloudwatch_log_group.runner_failed_to_start.arn
}

# EventBridge may write this rule's events into that log group only.
resource "aws_cloudwatch_log_resource_policy" "runner_failed_to_start" {
  policy_name = "${var.prefix}-runner-failed-to-start"
  policy_document = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EventBridgeWritesFailedStarts"
      Effect    = "Allow"
      Principal = { Service = ["events.amazonaws.com", "delivery.logs.amazonaws.com"] }
      Action    = ["logs:CreateLogStream", "logs:PutLogEvents"]
      Resource  = "${aws_cloudwatch_log_group.runner_failed_to_start.arn}:*"
      Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.runner_failed_to_start.arn } }
    }]
  })
}

resource "aws_cloudwatch_metric_alarm" "runner_failed_to_start" {
  alarm_name          = "${var.prefix}-runner-failed-to-start"
  alarm_description   = "More than ${var.runner_start_failures_threshold} runner tasks failed to start in 15 minutes (their events are in ${aws_cloudwatch_log_group.runner_failed_to_start.name}). See infra/README.md, Operations guide."
  namespace           = "AWS/Events"
  metric_name         = "MatchedEvents"
  dimensions          = { RuleName = aws_cloudwatch_event_rule.runner_failed_to_start.name }
  statistic           = "Sum"
  period              = 900
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.runner_start_failures_threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

# ---- "everything about operation X" --------------------------------------------------------------------------
# Every function and the runner log one flattened JSON object per line carrying `operation_id` (and
# `tenant_id`, `cluster_id`, `trace_id`): replace the placeholder with the operation's id and run it.

resource "aws_cloudwatch_query_definition" "operation" {
  count = var.saved_query ? 1 : 0

  name = "Strato/${var.prefix}/everything about operation X"
  log_group_names = concat(
    [for k in sort(keys(var.function_log_groups)) : var.function_log_groups[k]],
    [var.runner_log_group],
  )
  query_string = <<-EOT
    fields @timestamp, @log, level, operation_kind, step, attempt, message, tenant_id, cluster_id, trace_id
    | filter operation_id = "op-REPLACE-ME"
    | sort @timestamp asc
    | limit 10000
  EOT
}
