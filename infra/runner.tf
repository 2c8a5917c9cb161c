# The runner: an ECS cluster and a Fargate task definition the dispatcher starts one task of per operation
# (RunTask with STRATO_OPERATION_ID / STRATO_FENCING_TOKEN as container overrides).

locals {
  # Must match the dispatcher's STRATO_RUNNER_CONTAINER (its overrides name the container).
  runner_container = "runner"

  agent_secret_enabled = nonsensitive(var.agent_token_secret != "")

  # The runner's environment as runner/src/config.rs reads it (STRATO_TERRAFORM comes from the image).
  runner_env = {
    STRATO_RESOURCE_PREFIX   = var.prefix
    STRATO_CONTROL_PLANE_URL = aws_apigatewayv2_api.http.api_endpoint
    STRATO_TIME_LIMIT_SECS   = tostring(var.runner_time_limit_secs) # ECS wants strings
    STRATO_STATE_KMS_KEY     = aws_kms_key.data.arn                 # state written SSE-KMS
    # The engine never runs as the task role: these two roles are assumed per run, with session policies
    # scoped to the run's cluster (runner/src/lifecycle/access.rs, strato_domain::run_access).
    STRATO_ENGINE_ROLE_ARN = aws_iam_role.runner_engine.arn
    STRATO_STATE_ROLE_ARN  = aws_iam_role.runner_state.arn
  }
}

resource "aws_ecs_cluster" "runner" {
  name = "${var.prefix}-runner"

  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_cloudwatch_log_group" "runner" {
  name              = "/ecs/${var.prefix}-runner"
  retention_in_days = var.log_retention_days
}

# The agent registration secret reaches the task through ECS secrets, not its (describable) definition.
resource "aws_secretsmanager_secret" "agent_token" {
  count = local.agent_secret_enabled ? 1 : 0

  name                    = "strato/${var.prefix}/agent-token-secret"
  recovery_window_in_days = 7
}

resource "aws_secretsmanager_secret_version" "agent_token" {
  count = local.agent_secret_enabled ? 1 : 0

  secret_id     = aws_secretsmanager_secret.agent_token[0].id
  secret_string = var.agent_token_secret
}

resource "aws_ecs_task_definition" "runner" {
  family                   = "${var.prefix}-runner"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.runner_cpu
  memory                   = var.runner_memory_mb
  execution_role_arn       = aws_iam_role.runner_execution.arn
  task_role_arn            = aws_iam_role.runner_task.arn

  container_definitions = jsonencode([{
    name        = local.runner_container
    image       = var.runner_image
    essential   = true
    memory      = var.runner_memory_mb
    environment = [for name, value in local.runner_env : { name = name, value = value }]
    secrets = local.agent_secret_enabled ? [{
      name      = "STRATO_AGENT_TOKEN_SECRET"
      valueFrom = aws_secretsmanager_secret.agent_token[0].arn
    }] : []
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
  }])
}

# ---- roles -----------------------------------------------------------------------------------------------

locals {
  ecs_tasks_trust = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "ecs-tasks.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

# Used by ECS to start the task: pull the image, write its logs, read its secret.
resource "aws_iam_role" "runner_execution" {
  name               = "${var.prefix}-runner-execution"
  assume_role_policy = local.ecs_tasks_trust
}

resource "aws_iam_role_policy" "runner_execution" {
  name = "${var.prefix}-runner-execution"
  role = aws_iam_role.runner_execution.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          Sid      = "PullImage"
          Effect   = "Allow"
          Action   = ["ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
          Resource = "*"
        },
        {
          Sid      = "Logs"
          Effect   = "Allow"
          Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
          Resource = "${aws_cloudwatch_log_group.runner.arn}:*"
        },
      ],
      local.agent_secret_enabled ? [{
        Sid      = "AgentTokenSecret"
        Effect   = "Allow"
        Action   = ["secretsmanager:GetSecretValue"]
        Resource = aws_secretsmanager_secret.agent_token[0].arn
      }] : [],
    )
  })
}

# What the runner itself may do: its control-plane work. The engine (Terraform and every module and provider
# in it) never gets these credentials: it runs as the engine role (or the target account's) and its backend
# as the state role, each assumed per run.
resource "aws_iam_role" "runner_task" {
  name               = "${var.prefix}-runner-task"
  assume_role_policy = local.ecs_tasks_trust
}

resource "aws_iam_role_policy" "runner_task" {
  name = "${var.prefix}-runner-task"
  role = aws_iam_role.runner_task.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          # Reads the operation, cluster, template, tenant budget and its lock's fencing token.
          Sid      = "StoreRead"
          Effect   = "Allow"
          Action   = local.ddb_read
          Resource = flatten([for t in ["operations", "clusters", "templates", "tenants", "locks"] : local.table_resources[t]])
        },
        {
          Sid      = "TemplateBundles"
          Effect   = "Allow"
          Action   = ["s3:GetObject"]
          Resource = "${aws_s3_bucket.templates.arn}/*"
        },
        {
          # Log archives, debug logs, spilled events.
          Sid      = "Artifacts"
          Effect   = "Allow"
          Action   = ["s3:ListBucket", "s3:GetObject", "s3:PutObject"]
          Resource = [aws_s3_bucket.artifacts.arn, "${aws_s3_bucket.artifacts.arn}/*"]
        },
        {
          # Opens sealed values (sensitive variables, the tenant's external id); reads and writes SSE-KMS
          # state and artifacts.
          Sid      = "DataKey"
          Effect   = "Allow"
          Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
          Resource = aws_kms_key.data.arn
        },
        local.resolve_queues,
        {
          Sid      = "EventsAndLogs"
          Effect   = "Allow"
          Action   = ["sqs:SendMessage"]
          Resource = [aws_sqs_queue.events.arn, aws_sqs_queue.logs.arn]
        },
        {
          # Sensitive outputs go to Secrets Manager only, under the deployment's own path.
          Sid    = "OutputSecrets"
          Effect = "Allow"
          Action = ["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:GetSecretValue",
          "secretsmanager:DeleteSecret", "secretsmanager:DescribeSecret", "secretsmanager:TagResource"]
          Resource = "arn:${local.partition}:secretsmanager:${var.region}:${local.account}:secret:strato/${var.prefix}/clusters/*"
        },
      ],
      [{
        # Per run: the state role (scoped to the cluster's state by a session policy) and the engine role.
        Sid      = "RunRoles"
        Effect   = "Allow"
        Action   = ["sts:AssumeRole"]
        Resource = [aws_iam_role.runner_state.arn, aws_iam_role.runner_engine.arn]
      }],
      length(var.target_role_arns) > 0 ? [{
        Sid      = "TargetAccounts"
        Effect   = "Allow"
        Action   = ["sts:AssumeRole"]
        Resource = var.target_role_arns
      }] : [],
    )
  })
}

# ---- the run's roles: assumed by the task role only, once per run, each with a session policy ----------------
locals {
  runner_task_trust = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { AWS = aws_iam_role.runner_task.arn }
      Action    = "sts:AssumeRole"
    }]
  })
}

# The S3 backend's role on the platform's state bucket. Each run's session is narrowed to its own cluster's
# state objects and lock/digest items (strato_domain::run_access::state_session_policy).
resource "aws_iam_role" "runner_state" {
  name                 = "${var.prefix}-runner-state"
  assume_role_policy   = local.runner_task_trust
  max_session_duration = 3600
}

resource "aws_iam_role_policy" "runner_state" {
  name = "${var.prefix}-runner-state"
  role = aws_iam_role.runner_state.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "TenantState"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
        Resource = "${aws_s3_bucket.state.arn}/tenants/*"
      },
      {
        # Which prefix a run may list is its session policy's business (its own cluster's only).
        Sid      = "ListState"
        Effect   = "Allow"
        Action   = ["s3:ListBucket"]
        Resource = aws_s3_bucket.state.arn
      },
      {
        # Terraform's lock and digest items of tenants' states only.
        Sid       = "StateLocks"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"]
        Resource  = aws_dynamodb_table.tf_locks.arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${aws_s3_bucket.state.bucket}/tenants/*"] } }
      },
      {
        # State objects are SSE-KMS under Strato's data key (the session allows it through S3 only).
        Sid      = "StateKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = aws_kms_key.data.arn
      },
    ]
  })
}

# What templates may create in the platform account (clusters without a target account): the operator's
# runner_policy_arns. Each run's session denies every table, queue, bucket and secret of this deployment
# (strato_domain::run_access::engine_session_policy), whatever those policies allow.
resource "aws_iam_role" "runner_engine" {
  name                 = "${var.prefix}-runner-engine"
  assume_role_policy   = local.runner_task_trust
  max_session_duration = 3600
}

resource "aws_iam_role_policy_attachment" "runner_engine" {
  for_each = toset(var.runner_policy_arns)

  role       = aws_iam_role.runner_engine.name
  policy_arn = each.value
}

# ---- task state changes → events queue -------------------------------------------------------------------

# A runner task that stops without a final report fails its operation (status reads these from `events`).
resource "aws_cloudwatch_event_rule" "runner_task_stopped" {
  name        = "${var.prefix}-runner-task-stopped"
  description = "Strato runner tasks that stopped, for the status function"
  event_pattern = jsonencode({
    source        = ["aws.ecs"]
    "detail-type" = ["ECS Task State Change"]
    detail = {
      clusterArn = [aws_ecs_cluster.runner.arn]
      lastStatus = ["STOPPED"]
    }
  })
}

resource "aws_cloudwatch_event_target" "runner_task_stopped" {
  rule = aws_cloudwatch_event_rule.runner_task_stopped.name
  arn  = aws_sqs_queue.events.arn
}
