output "alarms" {
  description = "Every alarm this module defines: alarm name → what it watches."
  value = merge(
    {
      (aws_cloudwatch_metric_alarm.failure_rate.alarm_name)           = "failure rate (Strato OperationOutcomes)"
      (aws_cloudwatch_metric_alarm.operation_stuck.alarm_name)        = "Strato OldestOpenOperationAge"
      (aws_cloudwatch_metric_alarm.jobs_queue_age.alarm_name)         = "AWS/SQS ApproximateAgeOfOldestMessage"
      (aws_cloudwatch_metric_alarm.runner_failed_to_start.alarm_name) = "AWS/Events MatchedEvents"
    },
    { for k, a in aws_cloudwatch_metric_alarm.lambda : a.alarm_name => "AWS/Lambda ${a.metric_name}" },
  )
}

output "dashboard" {
  description = "The CloudWatch dashboard's name."
  value       = aws_cloudwatch_dashboard.strato.dashboard_name
}

output "operation_query" {
  description = "Name of the saved Logs Insights query \"everything about operation X\"."
  value       = one(aws_cloudwatch_query_definition.operation[*].name)
}
