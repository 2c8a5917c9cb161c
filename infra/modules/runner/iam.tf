data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  partition = data.aws_partition.current.partition
  account   = data.aws_caller_identity.current.account_id

  ddb_read = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"]
  # A table and its indexes.
  table_resources = { for k, t in var.tables : k => [t.arn, "${t.arn}/index/*"] }

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
resource "aws_iam_role" "execution" {
  name               = "${var.prefix}-runner-execution"
  assume_role_policy = local.ecs_tasks_trust
}

resource "aws_iam_role_policy" "execution" {
  name = "${var.prefix}-runner-execution"
  role = aws_iam_role.execution.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          # No resource level for the registry login.
          Sid      = "RegistryLogin"
          Effect   = "Allow"
          Action   = ["ecr:GetAuthorizationToken"]
          Resource = "*"
        },
        {
          Sid      = "PullImage"
          Effect   = "Allow"
          Action   = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
          Resource = aws_ecr_repository.runner.arn
        },
        {
          Sid      = "Logs"
          Effect   = "Allow"
          Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
          Resource = "${aws_cloudwatch_log_group.runner.arn}:*"
        },
      ],
      local.agent_enabled ? [{
        Sid      = "AgentTokenSecret"
        Effect   = "Allow"
        Action   = ["secretsmanager:GetSecretValue"]
        Resource = var.agent_token_secret_arn
      }] : [],
    )
  })
}

# What the runner itself may do: its control-plane work. The engine (Terraform and every module and provider
# in it) never gets these credentials: it runs as the engine role (or the target account's) and its backend
# as the state role, each assumed per run.
resource "aws_iam_role" "task" {
  name               = "${var.prefix}-runner-task"
  assume_role_policy = local.ecs_tasks_trust
}

resource "aws_iam_role_policy" "task" {
  name = "${var.prefix}-runner-task"
  role = aws_iam_role.task.id
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
          Resource = "${var.buckets["templates"].arn}/*"
        },
        {
          # Log archives, debug logs, spilled events.
          Sid      = "Artifacts"
          Effect   = "Allow"
          Action   = ["s3:ListBucket", "s3:GetObject", "s3:PutObject"]
          Resource = [var.buckets["artifacts"].arn, "${var.buckets["artifacts"].arn}/*"]
        },
        {
          # Opens sealed values (sensitive variables, the tenant's external id); reads and writes SSE-KMS
          # state and artifacts.
          Sid      = "DataKey"
          Effect   = "Allow"
          Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
          Resource = var.kms_key_arn
        },
        {
          # strato_aws::queues::QueueUrls resolves every queue at start.
          Sid      = "ResolveQueueUrls"
          Effect   = "Allow"
          Action   = ["sqs:GetQueueUrl"]
          Resource = [for q in values(var.queues) : q.arn]
        },
        {
          Sid      = "EventsAndLogs"
          Effect   = "Allow"
          Action   = ["sqs:SendMessage"]
          Resource = [var.queues["events"].arn, var.queues["logs"].arn]
        },
        {
          # Sensitive outputs go to Secrets Manager only, under the deployment's own path.
          Sid    = "OutputSecrets"
          Effect = "Allow"
          Action = ["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:GetSecretValue",
          "secretsmanager:DeleteSecret", "secretsmanager:DescribeSecret", "secretsmanager:TagResource"]
          Resource = "arn:${local.partition}:secretsmanager:${var.region}:${local.account}:secret:strato/${var.prefix}/clusters/*"
        },
        {
          # Per run: the state role (scoped to the cluster's state by a session policy) and the engine role.
          Sid      = "RunRoles"
          Effect   = "Allow"
          Action   = ["sts:AssumeRole"]
          Resource = [aws_iam_role.state.arn, aws_iam_role.engine.arn]
        },
      ],
      local.xray_enabled ? [{
        # The daemon sidecar runs as the task role (X-Ray has no resource level).
        Sid      = "Traces"
        Effect   = "Allow"
        Action   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
        Resource = "*"
      }] : [],
      length(var.target_role_arns) > 0 ? [{
        Sid      = "TargetAccounts"
        Effect   = "Allow"
        Action   = ["sts:AssumeRole"]
        Resource = var.target_role_arns
      }] : [],
    )
  })
}

# ---- the run's roles: assumed by the task role only, once per run, each with a session policy ------------

locals {
  task_trust = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { AWS = aws_iam_role.task.arn }
      Action    = "sts:AssumeRole"
    }]
  })
}

# The S3 backend's role on the platform's state bucket. Each run's session is narrowed to its own cluster's
# state objects and lock/digest items (strato_domain::run_access::state_session_policy).
resource "aws_iam_role" "state" {
  name                 = "${var.prefix}-runner-state"
  assume_role_policy   = local.task_trust
  max_session_duration = 3600
}

resource "aws_iam_role_policy" "state" {
  name = "${var.prefix}-runner-state"
  role = aws_iam_role.state.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "TenantState"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
        Resource = "${var.buckets["state"].arn}/tenants/*"
      },
      {
        # Which prefix a run may list is its session policy's business (its own cluster's only).
        Sid      = "ListState"
        Effect   = "Allow"
        Action   = ["s3:ListBucket"]
        Resource = var.buckets["state"].arn
      },
      {
        # Terraform's lock and digest items of tenants' states only.
        Sid       = "StateLocks"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"]
        Resource  = var.tables["tf-locks"].arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${var.buckets["state"].name}/tenants/*"] } }
      },
      {
        # State objects are SSE-KMS under Strato's data key (the session allows it through S3 only).
        Sid      = "StateKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = var.kms_key_arn
      },
    ]
  })
}

# What templates may create in the platform account (clusters without a target account): the operator's
# engine_policy_arns. Each run's session denies every resource of this deployment, by ARN pattern and by its
# `strato:deployment` tag, and IAM writes onto roles or users without the boundary below
# (strato_domain::run_access::engine_session_policy), whatever those policies allow. The role carries the
# boundary too, so the same holds for a session without a session policy.
resource "aws_iam_role" "engine" {
  name                 = "${var.prefix}-runner-engine"
  assume_role_policy   = local.task_trust
  max_session_duration = 3600
  permissions_boundary = aws_iam_policy.engine_boundary.arn
}

locals {
  # The deployment's resources by ARN pattern: the same list as engine_session_policy's.
  own_resources = [
    "arn:${local.partition}:s3:::${var.prefix}-*",
    "arn:${local.partition}:dynamodb:*:*:table/${var.prefix}-*",
    "arn:${local.partition}:sqs:*:*:${var.prefix}-*",
    "arn:${local.partition}:secretsmanager:*:*:secret:strato/${var.prefix}/*",
    "arn:${local.partition}:iam::*:role/${var.prefix}-*",
    "arn:${local.partition}:iam::*:policy/${var.prefix}-*",
    "arn:${local.partition}:lambda:*:*:function:${var.prefix}-*",
    "arn:${local.partition}:ecs:*:*:*/${var.prefix}-*",
    "arn:${local.partition}:ecr:*:*:repository/${var.prefix}-*",
    "arn:${local.partition}:logs:*:*:log-group:*/${var.prefix}-*",
    "arn:${local.partition}:kms:*:*:alias/${var.prefix}-*",
    "arn:${local.partition}:events:*:*:rule/${var.prefix}-*",
    "arn:${local.partition}:scheduler:*:*:schedule/*/${var.prefix}-*",
  ]
  boundary_name = "${var.prefix}-engine-boundary"
}

# The permissions boundary of the engine role and of every IAM role or user a template creates in the
# platform account (the engine session refuses CreateRole/CreateUser and policy writes onto identities
# without it; templates set it from their managed `permissions_boundary` variable). It allows anything
# but what the engine session denies, so an identity a module creates can never reach the deployment
# either, nor create an identity that could.
resource "aws_iam_policy" "engine_boundary" {
  #checkov:skip=CKV_AWS_62:A permissions boundary grants nothing: it caps the engine role's and its templates' roles' own policies ("*" minus the deployment's resources).
  #checkov:skip=CKV_AWS_63:A permissions boundary grants nothing: it caps the engine role's and its templates' roles' own policies ("*" minus the deployment's resources).
  #checkov:skip=CKV_AWS_289:A permissions boundary grants nothing; IAM writes through it need the boundary on the identity written to.
  #checkov:skip=CKV_AWS_290:A permissions boundary grants nothing: what may be written is the identity's own policies' business, within this cap.
  #checkov:skip=CKV2_AWS_40:A permissions boundary grants nothing; IAM writes through it need the boundary on the identity written to.
  name        = local.boundary_name
  description = "Boundary of the ${var.prefix} engine role and every role its templates create: nothing of the deployment's own"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid      = "WhatTheIdentitysPoliciesAllow"
        Effect   = "Allow"
        Action   = "*"
        Resource = "*"
      },
      {
        Sid      = "NothingOfStratosOwn"
        Effect   = "Deny"
        Action   = "*"
        Resource = local.own_resources
      },
      {
        Sid       = "NothingTaggedStratos"
        Effect    = "Deny"
        Action    = "*"
        Resource  = "*"
        Condition = { StringEquals = { "aws:ResourceTag/strato:deployment" = var.prefix } }
      },
      {
        Sid    = "IdentitiesOnlyWithinTheBoundary"
        Effect = "Deny"
        Action = ["iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:AttachRolePolicy", "iam:PutRolePolicy",
        "iam:CreateUser", "iam:PutUserPermissionsBoundary", "iam:AttachUserPolicy", "iam:PutUserPolicy"]
        Resource  = "*"
        Condition = { StringNotLike = { "iam:PermissionsBoundary" = "arn:${local.partition}:iam::*:policy/${local.boundary_name}" } }
      },
      {
        Sid      = "BoundariesStay"
        Effect   = "Deny"
        Action   = ["iam:DeleteRolePermissionsBoundary", "iam:DeleteUserPermissionsBoundary"]
        Resource = "*"
      },
    ]
  })
}

resource "aws_iam_role_policy_attachment" "engine" {
  for_each = toset(var.engine_policy_arns)

  role       = aws_iam_role.engine.name
  policy_arn = each.value
}
