output "functions" {
  description = "Logical name → { name, arn, invoke_arn, role_arn }."
  value = { for k, f in aws_lambda_function.fn : k => {
    name       = f.function_name
    arn        = f.arn
    invoke_arn = f.invoke_arn
    role_arn   = aws_iam_role.fn[k].arn
  } }
}

output "log_groups" {
  description = "Logical name → the function's log group."
  value       = { for k, g in aws_cloudwatch_log_group.fn : k => g.name }
}
