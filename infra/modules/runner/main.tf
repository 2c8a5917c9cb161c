# The runner: an ECS cluster and an arm64 Fargate task definition the dispatcher starts one task of per
# operation (RunTask with STRATO_OPERATION_ID / STRATO_FENCING_TOKEN / the run proof as container overrides),
# the ECR repository its image lives in, and its roles.

locals {
  # Must match the dispatcher's STRATO_RUNNER_CONTAINER (its overrides name the container).
  container     = "runner"
  agent_enabled = var.agent_token_secret_arn != null
  # The X-Ray daemon sidecar the runner sends its run's segment to (strato_aws::xray); its memory comes out
  # of the task's, which the runner container otherwise has whole.
  xray_enabled   = var.xray_daemon_image != null
  xray_memory_mb = 64
  xray_env       = local.xray_enabled ? { AWS_XRAY_DAEMON_ADDRESS = "127.0.0.1:2000" } : {}
  image          = coalesce(var.image, "${aws_ecr_repository.runner.repository_url}:${var.image_tag}")

  # The runner's environment as runner/src/config.rs reads it (STRATO_TERRAFORM comes from the image).
  env = {
    STRATO_RESOURCE_PREFIX   = var.prefix
    STRATO_CONTROL_PLANE_URL = var.control_plane_url
    STRATO_TIME_LIMIT_SECS   = tostring(var.time_limit_secs) # ECS wants strings
    STRATO_STATE_KMS_KEY     = var.kms_key_arn               # state written SSE-KMS
    # The engine never runs as the task role: these two roles are assumed per run, with session policies
    # scoped to the run's cluster (runner/src/lifecycle/access.rs, strato_domain::run_access).
    STRATO_ENGINE_ROLE_ARN = aws_iam_role.engine.arn
    STRATO_STATE_ROLE_ARN  = aws_iam_role.state.arn
  }
}

resource "aws_ecr_repository" "runner" {
  #checkov:skip=CKV_AWS_136:Images hold no secrets (sensitive values reach the runner at run time); ECR encrypts them with AES-256.
  name                 = "${var.prefix}-runner"
  image_tag_mutability = "IMMUTABLE"
  force_delete         = var.force_delete_repository

  image_scanning_configuration {
    scan_on_push = true
  }

  encryption_configuration {
    encryption_type = "AES256"
  }
}

resource "aws_ecr_lifecycle_policy" "runner" {
  repository = aws_ecr_repository.runner.name
  policy = jsonencode({
    rules = [
      {
        rulePriority = 1
        description  = "Untagged layers of interrupted pushes"
        selection    = { tagStatus = "untagged", countType = "sinceImagePushed", countUnit = "days", countNumber = 1 }
        action       = { type = "expire" }
      },
      {
        rulePriority = 2
        description  = "Keep the newest ${var.ecr_keep_images} releases (rollback targets)"
        selection    = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = var.ecr_keep_images }
        action       = { type = "expire" }
      },
    ]
  })
}

resource "aws_ecs_cluster" "runner" {
  name = "${var.prefix}-runner"

  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_cloudwatch_log_group" "runner" {
  #checkov:skip=CKV_AWS_338:Retention is the operator's log_retention_days (default 30: operational logs; the audit log is the DynamoDB audit table with its own retention).
  name              = "/ecs/${var.prefix}-runner"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_ecs_task_definition" "runner" {
  family                   = "${var.prefix}-runner"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory_mb
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = aws_iam_role.task.arn

  runtime_platform {
    cpu_architecture        = "ARM64"
    operating_system_family = "LINUX"
  }

  # The runner first: the dispatcher's overrides name it, devstack runs the first container.
  container_definitions = jsonencode(concat([{
    name      = local.container
    image     = local.image
    essential = true
    # The task's memory less the sidecar's (a hard limit; RunTask in moto also needs it).
    memory      = var.memory_mb - (local.xray_enabled ? local.xray_memory_mb : 0)
    environment = [for name, value in merge(local.env, local.xray_env) : { name = name, value = value }]
    # The agent registration secret reaches the task through ECS secrets, not its (describable) definition.
    secrets = local.agent_enabled ? [{ name = "STRATO_AGENT_TOKEN_SECRET", valueFrom = var.agent_token_secret_arn }] : []
    # SIGTERM → the runner interrupts Terraform with SIGINT so state is written and the lock released; it
    # needs more than the default 30 s when a provider call is slow (120 s is Fargate's maximum).
    stopTimeout = 120
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.runner.name
        awslogs-region        = var.region
        awslogs-stream-prefix = "runner"
      }
    }
    }], local.xray_enabled ? [{
    # Not essential: a daemon that dies costs traces, never a run.
    name         = "xray-daemon"
    image        = var.xray_daemon_image
    essential    = false
    cpu          = 32
    memory       = local.xray_memory_mb
    portMappings = [{ containerPort = 2000, protocol = "udp" }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.runner.name
        awslogs-region        = var.region
        awslogs-stream-prefix = "xray"
      }
    }
  }] : []))
}
