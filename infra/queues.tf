# SQS queues, each with its DLQ, exactly as strato_shared::resources defines them (tests/tests/infra_check.rs
# compares the two). A message moves to the DLQ after max_receive_count deliveries; DLQs keep 14 days.

locals {
  dlq_retention_secs = 1209600
}

# Jobs for the dispatcher. FIFO grouped by cluster id: one cluster's jobs stay in order; senders set an
# explicit deduplication id (operation + wake reason).
resource "aws_sqs_queue" "jobs_dlq" {
  name                      = "${var.prefix}-jobs-dlq.fifo"
  fifo_queue                = true
  message_retention_seconds = local.dlq_retention_secs
}

resource "aws_sqs_queue" "jobs" {
  name                       = "${var.prefix}-jobs.fifo"
  fifo_queue                 = true
  visibility_timeout_seconds = 60
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.jobs_dlq.arn
    maxReceiveCount     = 5
  })
}

# Runner events (steps, heartbeats, results) and ECS Task State Change events, for the status function.
resource "aws_sqs_queue" "events_dlq" {
  name                      = "${var.prefix}-events-dlq"
  message_retention_seconds = local.dlq_retention_secs
}

resource "aws_sqs_queue" "events" {
  name                       = "${var.prefix}-events"
  visibility_timeout_seconds = 60
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.events_dlq.arn
    maxReceiveCount     = 5
  })
}

# EventBridge delivers ECS task state changes of the runner cluster to the events queue.
resource "aws_sqs_queue_policy" "events_from_eventbridge" {
  queue_url = aws_sqs_queue.events.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "EcsTaskStateChanges"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sqs:SendMessage"
      Resource  = aws_sqs_queue.events.arn
      Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.runner_task_stopped.arn } }
    }]
  })
}

# Live log batches from the runners, for log-fanout.
resource "aws_sqs_queue" "logs_dlq" {
  name                      = "${var.prefix}-logs-dlq"
  message_retention_seconds = local.dlq_retention_secs
}

resource "aws_sqs_queue" "logs" {
  name                       = "${var.prefix}-logs"
  visibility_timeout_seconds = 30
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.logs_dlq.arn
    maxReceiveCount     = 3
  })
}

# Tenant webhook notifications (drift found under the `notify` policy), queued by the status function for
# the webhooks function: one POST attempt per delivery, so maxReceiveCount is the number of attempts. The
# last failed attempt is recorded on the operation and acknowledged; only a message that could not be
# handled at all (bad body, the store down) reaches the DLQ.
resource "aws_sqs_queue" "webhooks_dlq" {
  name                      = "${var.prefix}-webhooks-dlq"
  message_retention_seconds = local.dlq_retention_secs
}

resource "aws_sqs_queue" "webhooks" {
  name                       = "${var.prefix}-webhooks"
  visibility_timeout_seconds = 60
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.webhooks_dlq.arn
    maxReceiveCount     = 5
  })
}

# A message in a DLQ means a job, event, log batch or webhook notification failed every delivery: someone should look.
resource "aws_cloudwatch_metric_alarm" "dlq_not_empty" {
  for_each = {
    jobs     = aws_sqs_queue.jobs_dlq.name
    events   = aws_sqs_queue.events_dlq.name
    logs     = aws_sqs_queue.logs_dlq.name
    webhooks = aws_sqs_queue.webhooks_dlq.name
  }

  alarm_name          = "${var.prefix}-${each.key}-dlq-not-empty"
  alarm_description   = "Messages in ${each.value}: they failed every delivery (see the consumer's logs)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}
