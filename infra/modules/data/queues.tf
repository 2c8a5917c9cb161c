# SQS queues, each with its DLQ, exactly as strato_aws::resources::QUEUES defines them. A message moves to
# the DLQ after max_receive_count deliveries; DLQs keep 14 days. Queues are encrypted with SQS-managed keys.
locals {
  queues = {
    # Jobs for the dispatcher. FIFO grouped by cluster id: one cluster's jobs stay in order; senders set an
    # explicit deduplication id (operation + wake reason).
    jobs = { fifo = true, high_throughput = false, visibility_timeout = 60, max_receive_count = 5 }
    # Runner events (steps, heartbeats, results) and ECS Task State Change events, for the status function.
    events = { fifo = false, high_throughput = false, visibility_timeout = 60, max_receive_count = 5 }
    # Live log frames from the runners and the status function, for log-fanout. FIFO grouped by operation
    # (deduplication id from the frame): one operation's frames stay in order whatever the fan-out's
    # concurrency. High-throughput mode: quotas per message group, not per queue.
    logs = { fifo = true, high_throughput = true, visibility_timeout = 30, max_receive_count = 3 }
    # Tenant webhook notifications: one POST attempt per delivery, so maxReceiveCount is the number of
    # attempts. The last failed attempt is recorded on the operation and acknowledged; only a message that
    # could not be handled at all (bad body, the store down) reaches the DLQ.
    webhooks = { fifo = false, high_throughput = false, visibility_timeout = 60, max_receive_count = 5 }
    # A rollout's inputs (a member's ended run from the status function, a tick from the scheduler), drained
    # by the api function. FIFO grouped by rollout (one rollout's inputs applied in order); senders set an
    # explicit deduplication id (the operation, or the tick's minute).
    # 35 s: above the api's 29 s timeout (its HTTP API integration's limit).
    rollouts = { fifo = true, high_throughput = false, visibility_timeout = 35, max_receive_count = 5 }
  }
}

resource "aws_sqs_queue" "dlq" {
  for_each = local.queues

  name                      = each.value.fifo ? "${var.prefix}-${each.key}-dlq.fifo" : "${var.prefix}-${each.key}-dlq"
  fifo_queue                = each.value.fifo
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "this" {
  for_each = local.queues

  name                       = each.value.fifo ? "${var.prefix}-${each.key}.fifo" : "${var.prefix}-${each.key}"
  fifo_queue                 = each.value.fifo
  deduplication_scope        = each.value.high_throughput ? "messageGroup" : null
  fifo_throughput_limit      = each.value.high_throughput ? "perMessageGroupId" : null
  visibility_timeout_seconds = each.value.visibility_timeout
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq[each.key].arn
    maxReceiveCount     = each.value.max_receive_count
  })
}

# A message in a DLQ means a job, event, log batch or webhook notification failed every delivery.
resource "aws_cloudwatch_metric_alarm" "dlq_not_empty" {
  for_each = local.queues

  alarm_name          = "${var.prefix}-${each.key}-dlq-not-empty"
  alarm_description   = "Messages in ${aws_sqs_queue.dlq[each.key].name}: they failed every delivery (see the consumer's logs)."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = aws_sqs_queue.dlq[each.key].name }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}
