output "cluster_arn" {
  description = "The runner's ECS cluster (STRATO_RUNNER_CLUSTER)."
  value       = aws_ecs_cluster.runner.arn
}

output "task_definition_arn" {
  description = "The runner's task definition, this revision (STRATO_RUNNER_TASK_DEFINITION)."
  value       = aws_ecs_task_definition.runner.arn
}

output "task_definition_family" {
  description = "The task definition's family (RunTask is allowed on all its revisions)."
  value       = aws_ecs_task_definition.runner.family
}

output "container" {
  description = "Name of the runner container (STRATO_RUNNER_CONTAINER)."
  value       = local.container
}

output "task_role_arn" {
  description = "The runner task's role: the principal tenants' target roles trust (STRATO_RUNNER_ROLE_ARN)."
  value       = aws_iam_role.task.arn
}

output "execution_role_arn" {
  description = "The role ECS starts runner tasks with."
  value       = aws_iam_role.execution.arn
}

output "state_role_arn" {
  description = "The per-run role of the engine's S3 backend (STRATO_STATE_ROLE_ARN)."
  value       = aws_iam_role.state.arn
}

output "engine_role_arn" {
  description = "The per-run role of the engine's providers (STRATO_ENGINE_ROLE_ARN)."
  value       = aws_iam_role.engine.arn
}

output "log_group" {
  description = "The runner tasks' log group."
  value       = aws_cloudwatch_log_group.runner.name
}

output "repository_url" {
  description = "ECR repository to push the runner image to (`docker push <url>:<tag>`)."
  value       = aws_ecr_repository.runner.repository_url
}

output "image" {
  description = "The image the task definition runs."
  value       = local.image
}

output "engine_boundary_arn" {
  description = "The permissions boundary of the engine role and of every role or user its templates create in this account."
  value       = aws_iam_policy.engine_boundary.arn
}
