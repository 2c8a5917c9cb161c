# One dashboard of the vital signs: operations (outcomes, failure rate, categories, durations, waits, steps),
# the control plane's own health (queues, functions, runner starts) and the live-log and webhook paths. EMF
# metrics whose dimensions vary (template, kind, ...) are charted with one Metrics Insights query per widget
# (a widget can carry only one); dimensionless ones as plain metrics.

locals {
  schema = {
    ended     = "SCHEMA(\"Strato\", kind, outcome, provider, template)"
    failures  = "SCHEMA(\"Strato\", category, kind)"
    by_kind   = "SCHEMA(\"Strato\", kind)"
    steps     = "SCHEMA(\"Strato\", kind, outcome, step)"
    retries   = "SCHEMA(\"Strato\", kind, step)"
    outcome   = "SCHEMA(\"Strato\", outcome)"
    status    = "SCHEMA(\"Strato\", status)"
    reason    = "SCHEMA(\"Strato\", reason)"
    templates = "SCHEMA(\"Strato\", template)"
    health    = "SCHEMA(\"Strato\", from, to)"
    rollouts  = "SCHEMA(\"Strato\", rollout, status)"
  }

  # title → one Metrics Insights query.
  insights = [
    ["Operations ended, by outcome", "SELECT SUM(OperationsEnded) FROM ${local.schema.ended} GROUP BY outcome"],
    ["Failures, by category", "SELECT SUM(OperationFailures) FROM ${local.schema.failures} GROUP BY category"],
    ["Operation duration (ms, avg), by kind", "SELECT AVG(OperationDuration) FROM ${local.schema.ended} GROUP BY kind"],
    ["Queued → runner task started (ms, avg), by kind", "SELECT AVG(QueueWaitDispatch) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Dispatched → runner process start (ms, avg), by kind", "SELECT AVG(QueueWaitStart) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Runner start → first log line (ms, avg), by kind", "SELECT AVG(QueueWaitFirstLog) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Step duration (ms, avg), by step", "SELECT AVG(StepDuration) FROM ${local.schema.steps} GROUP BY step"],
    ["Step retries, by step", "SELECT SUM(StepRetries) FROM ${local.schema.retries} GROUP BY step"],
    ["Cleanups of failed creates, by outcome", "SELECT SUM(Cleanups) FROM ${local.schema.outcome} GROUP BY outcome"],
    ["Open operations, by status", "SELECT MAX(OperationsActive) FROM ${local.schema.status} GROUP BY status"],
    ["Operations parked, by reason", "SELECT SUM(OperationsParked) FROM ${local.schema.reason} GROUP BY reason"],
    ["Webhook deliveries, by outcome", "SELECT SUM(WebhookDeliveries) FROM ${local.schema.outcome} GROUP BY outcome"],
    ["Drift found, by template", "SELECT SUM(DriftFound) FROM ${local.schema.templates} GROUP BY template"],
    ["Cluster health changes, by new status", "SELECT SUM(ClusterHealthChanges) FROM ${local.schema.health} GROUP BY to"],
    ["Rollout clusters, by rollout and member status", "SELECT MAX(RolloutMembers) FROM ${local.schema.rollouts} GROUP BY rollout, status"],
    ["Runner wall time (ms, avg), by kind", "SELECT AVG(RunnerWallTime) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Runner overhead outside the engine, wall (ms, avg)", "SELECT AVG(RunnerOverheadWall) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Runner overhead outside the engine, CPU (ms, avg)", "SELECT AVG(RunnerOverheadCpu) FROM ${local.schema.by_kind} GROUP BY kind"],
    ["Engine CPU (ms, avg), by kind", "SELECT AVG(EngineCpu) FROM ${local.schema.by_kind} GROUP BY kind"],
  ]

  # title → plain metrics ([namespace, name, dimension name, value, ..., { stat }]).
  plain = [
    ["Oldest open operation (s)", [[local.namespace, "OldestOpenOperationAge", { stat = "Maximum" }]]],
    ["Lock hand-off latency (ms)", [
      [local.namespace, "LockHandoffLatency", { stat = "Average" }],
      [local.namespace, "LockHandoffLatency", { stat = "p90" }],
    ]],
    ["Live log lines", [
      [local.namespace, "LogLinesShipped", { stat = "Sum" }],
      [local.namespace, "LogLinesSkipped", { stat = "Sum" }],
    ]],
    ["Audit entries not recorded", [[local.namespace, "AuditWriteFailures", { stat = "Sum" }]]],
    ["Rollout inputs not queued", [[local.namespace, "RolloutInputsLost", { stat = "Sum" }]]],
    ["Log fan-out latency (ms)", [
      [local.namespace, "LogFanoutLatency", { stat = "Average" }],
      [local.namespace, "LogFanoutLatency", { stat = "p90" }],
    ]],
    ["Jobs queue: oldest message (s)", [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", local.jobs_queue_name, { stat = "Maximum" }]]],
    ["Dead-letter queues: messages", [
      for k in sort(keys(var.queues)) : ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", element(split("/", var.queues[k].dlq_url), length(split("/", var.queues[k].dlq_url)) - 1), { stat = "Maximum", label = "${k} DLQ" }]
    ]],
    ["Function errors", [
      for k in sort(keys(var.functions)) : ["AWS/Lambda", "Errors", "FunctionName", var.functions[k].name, { stat = "Sum", label = k }]
    ]],
    ["Function throttles", [
      for k in sort(keys(var.functions)) : ["AWS/Lambda", "Throttles", "FunctionName", var.functions[k].name, { stat = "Sum", label = k }]
    ]],
    ["Runner tasks that failed to start", [["AWS/Events", "MatchedEvents", "RuleName", aws_cloudwatch_event_rule.runner_failed_to_start.name, { stat = "Sum" }]]],
  ]

  failure_rate_widget = {
    title = "Failed operations (%)"
    metrics = concat(
      [for o in local.outcomes : [local.namespace, "OperationOutcomes", "outcome", o, { id = "ended_${o}", stat = "Sum", visible = false }]],
      [[{ id = "rate", expression = local.failure_rate_queries[length(local.failure_rate_queries) - 1].expression, label = "Failed operations (%)" }]],
    )
  }

  widget_properties = concat(
    [{ title = local.failure_rate_widget.title, metrics = local.failure_rate_widget.metrics, period = var.failure_rate_period_secs }],
    [for w in local.insights : { title = w[0], metrics = [[{ id = "q1", expression = w[1], label = w[0] }]], period = 300 }],
    [for w in local.plain : { title = w[0], metrics = w[1], period = 300 }],
  )
}

resource "aws_cloudwatch_dashboard" "strato" {
  dashboard_name = "${var.prefix}-strato"
  dashboard_body = jsonencode({
    widgets = [for i, p in local.widget_properties : {
      type   = "metric"
      x      = (i % 3) * 8
      y      = floor(i / 3) * 6
      width  = 8
      height = 6
      properties = {
        title   = p.title
        region  = var.region
        view    = "timeSeries"
        stacked = false
        period  = p.period
        metrics = p.metrics
      }
    }]
  })
}
