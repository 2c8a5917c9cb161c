# Least-privilege statements per function. Each function gets the tables, queues, buckets and APIs its code
# calls (its AWS_CALLS list, checked by the infra_apply test), and nothing account-wide except where AWS has
# no resource level (ecs:ListTasks limited to the runner cluster by condition; X-Ray).

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  partition = data.aws_partition.current.partition
  account   = data.aws_caller_identity.current.account_id

  ddb_read  = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"]
  ddb_write = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"]
  consume   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]

  # A table and its indexes.
  table_resources = { for k, t in var.tables : k => [t.arn, "${t.arn}/index/*"] }
  queue_arn       = { for k, q in var.queues : k => q.arn }
  state_bucket    = var.buckets["state"]
  artifacts       = var.buckets["artifacts"]

  # Every function that resolves the queue URLs at start (strato_aws::queues::QueueUrls).
  resolve_queues = {
    Sid      = "ResolveQueueUrls"
    Effect   = "Allow"
    Action   = ["sqs:GetQueueUrl"]
    Resource = values(local.queue_arn)
  }

  # The shared store (clusters, operations, locks, tenant counters; templates read-only).
  store = [
    {
      Sid      = "StoreReadWrite"
      Effect   = "Allow"
      Action   = concat(local.ddb_read, local.ddb_write)
      Resource = flatten([for t in ["clusters", "operations", "locks", "tenants"] : local.table_resources[t]])
    },
    {
      Sid      = "TemplatesRead"
      Effect   = "Allow"
      Action   = local.ddb_read
      Resource = local.table_resources["templates"]
    },
  ]

  # The audit log is append-only: a conditional PutItem of new entries, never UpdateItem or DeleteItem
  # (retention is the table's TTL). Only the api reads it (GET /v1/audit).
  audit_append = {
    Sid      = "AuditAppend"
    Effect   = "Allow"
    Action   = ["dynamodb:PutItem"]
    Resource = var.tables["audit"].arn
  }
  audit_read = {
    Sid      = "AuditRead"
    Effect   = "Allow"
    Action   = ["dynamodb:Query"]
    Resource = local.table_resources["audit"]
  }

  manage_connections = {
    Sid      = "PostToConnections"
    Effect   = "Allow"
    Action   = ["execute-api:ManageConnections"]
    Resource = "${var.ws.execution_arn}/${var.ws.stage}/*/@connections/*"
  }

  artifacts_read = {
    Sid      = "ArtifactsRead"
    Effect   = "Allow"
    Action   = ["s3:GetObject", "s3:ListBucket"]
    Resource = [local.artifacts.arn, "${local.artifacts.arn}/*"]
  }

  # Objects in the state and artifacts buckets are SSE-KMS: reading one needs kms:Decrypt on the key.
  data_key_decrypt = {
    Sid      = "DataKeyDecrypt"
    Effect   = "Allow"
    Action   = ["kms:Decrypt"]
    Resource = var.kms_key_arn
  }

  # Secrets a function reads by reference at cold start.
  read_secrets = {
    api          = compact([var.secrets.ws_jwt_arn, var.secrets.agent_token_arn])
    ws           = [var.secrets.ws_jwt_arn]
    dispatcher   = [var.secrets.run_proof_arn]
    status       = [var.secrets.run_proof_arn]
    scheduler    = []
    webhooks     = []
    "log-fanout" = []
  }

  ecs_cluster = { ArnEquals = { "ecs:cluster" = var.runner.cluster_arn } }

  # Strato as an OIDC issuer (var.oidc): the dispatcher mints each run's identity tokens (Sign, with the
  # key's public half for the kid) and seals them for the runner (a data key under {tenant, purpose:
  # run-identity}); the api reads the public half for its JWKS. Nothing when the issuer is off.
  oidc_statements = var.oidc == null ? { api = [], dispatcher = [] } : {
    api = [{
      Sid      = "SigningKeyPublicHalf"
      Effect   = "Allow"
      Action   = ["kms:GetPublicKey"]
      Resource = var.oidc.signing_key_arn
    }]
    dispatcher = [
      {
        Sid      = "SignRunTokens"
        Effect   = "Allow"
        Action   = ["kms:Sign", "kms:GetPublicKey"]
        Resource = var.oidc.signing_key_arn
      },
      {
        Sid      = "SealRunTokens"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey"]
        Resource = var.kms_key_arn
      },
    ]
  }

  function_statements = {
    api = concat(local.store, [
      local.audit_append,
      local.audit_read,
      {
        # Seals sensitive variables and issues tenants' external ids (GenerateDataKey), opens the external id
        # it shows (Decrypt); state restores copy SSE-KMS objects (both).
        Sid      = "DataKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = var.kms_key_arn
      },
      {
        Sid      = "Idempotency"
        Effect   = "Allow"
        Action   = concat(local.ddb_read, local.ddb_write)
        Resource = local.table_resources["idempotency"]
      },
      local.resolve_queues,
      {
        # Jobs; the agent's readiness for the status function; its cluster's health changes for the
        # webhooks function.
        Sid      = "SendJobsAndAgentEvents"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [local.queue_arn["jobs"], local.queue_arn["events"], local.queue_arn["webhooks"]]
      },
      {
        # The api also drains the rollouts queue (a rollout's inputs; the runs they decide start here).
        Sid      = "ConsumeRollouts"
        Effect   = "Allow"
        Action   = local.consume
        Resource = local.queue_arn["rollouts"]
      },
      {
        # GET /v1/templates and an unknown template's suggestions scan the catalog.
        Sid      = "TemplatesCatalog"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan"]
        Resource = var.tables["templates"].arn
      },
      {
        # The operator's template catalog: a version's standing set (UpdateItem), a version published
        # through the API (PutItem of a new catalog item, then the bundle object).
        Sid      = "OperatorTemplates"
        Effect   = "Allow"
        Action   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
        Resource = var.tables["templates"].arn
      },
      {
        Sid      = "OperatorBundles"
        Effect   = "Allow"
        Action   = ["s3:PutObject"]
        Resource = "${var.buckets["templates"].arn}/bundles/*"
      },
      {
        # GET /v1/admin/tenants and /v1/admin/clusters: one bounded Scan page (Limit) per request.
        Sid      = "OperatorListings"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan"]
        Resource = [var.tables["tenants"].arn, var.tables["clusters"].arn]
      },
      {
        # State versions: list them (bucket), read the chosen and the current one, copy one back as current.
        Sid      = "StateVersionsList"
        Effect   = "Allow"
        Action   = ["s3:ListBucketVersions"]
        Resource = local.state_bucket.arn
      },
      {
        Sid      = "StateVersions"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"]
        Resource = "${local.state_bucket.arn}/tenants/*"
      },
      {
        # A restore records Terraform's digest of the restored state: PutItem of `<bucket>/tenants/*-md5`
        # items of the lock table only, never a lock.
        Sid       = "StateDigests"
        Effect    = "Allow"
        Action    = ["dynamodb:PutItem"]
        Resource  = var.tables["tf-locks"].arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${local.state_bucket.name}/tenants/*-md5"] } }
      },
    ], local.oidc_statements.api)

    dispatcher = concat(local.store, local.oidc_statements.dispatcher, [
      local.audit_append,
      local.resolve_queues,
      {
        Sid      = "ConsumeJobs"
        Effect   = "Allow"
        Action   = local.consume
        Resource = local.queue_arn["jobs"]
      },
      {
        # Wake the next queued operation when a lock is released.
        Sid      = "SendJobs"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = local.queue_arn["jobs"]
      },
      {
        Sid       = "RunRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:RunTask"]
        Resource  = "arn:${local.partition}:ecs:${var.region}:${local.account}:task-definition/${var.runner.task_definition_family}:*"
        Condition = local.ecs_cluster
      },
      {
        # RunTask with tags (tenant, cluster, operation on each runner task) is authorized as TagResource too.
        Sid      = "TagRunnerTasks"
        Effect   = "Allow"
        Action   = ["ecs:TagResource"]
        Resource = "${replace(var.runner.cluster_arn, ":cluster/", ":task/")}/*"
      },
      {
        # A redelivered job adopts the task its first delivery started.
        Sid       = "FindRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:ListTasks", "ecs:DescribeTasks"]
        Resource  = "*"
        Condition = local.ecs_cluster
      },
      {
        Sid       = "PassRunnerRoles"
        Effect    = "Allow"
        Action    = ["iam:PassRole"]
        Resource  = [var.runner.task_role_arn, var.runner.execution_role_arn]
        Condition = { StringEquals = { "iam:PassedToService" = "ecs-tasks.amazonaws.com" } }
      },
    ])

    status = concat(local.store, [
      local.audit_append,
      local.resolve_queues,
      {
        Sid      = "ConsumeEvents"
        Effect   = "Allow"
        Action   = local.consume
        Resource = local.queue_arn["events"]
      },
      {
        # Wake the next queued operation; status frames to the live log stream; its own delayed timers (the
        # agent's configure deadline) back on the events queue; drift notifications for the webhooks function.
        Sid      = "SendJobsFramesTimersAndWebhooks"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [for q in ["jobs", "logs", "events", "webhooks", "rollouts"] : local.queue_arn[q]]
      },
      local.artifacts_read,
      local.data_key_decrypt,
    ])

    # Reads the tenant's webhook, notes each delivery's outcome on its operation, consumes its queue (its
    # back-offs change the message's visibility). Calls tenants' receivers over the internet: no VPC.
    webhooks = [
      {
        Sid      = "OperationNotes"
        Effect   = "Allow"
        Action   = concat(local.ddb_read, ["dynamodb:PutItem", "dynamodb:UpdateItem"])
        Resource = local.table_resources["operations"]
      },
      {
        Sid      = "TenantWebhooks"
        Effect   = "Allow"
        Action   = ["dynamodb:GetItem"]
        Resource = local.table_resources["tenants"]
      },
      local.resolve_queues,
      {
        Sid      = "ConsumeWebhooks"
        Effect   = "Allow"
        Action   = local.consume
        Resource = local.queue_arn["webhooks"]
      },
    ]

    ws = [
      {
        Sid      = "Connections"
        Effect   = "Allow"
        Action   = concat(local.ddb_read, local.ddb_write)
        Resource = local.table_resources["connections"]
      },
      {
        # Subscriptions are accepted only for the caller's tenant's operations.
        Sid      = "OperationsRead"
        Effect   = "Allow"
        Action   = local.ddb_read
        Resource = local.table_resources["operations"]
      },
      local.artifacts_read,
      local.data_key_decrypt,
      local.manage_connections,
    ]

    "log-fanout" = [
      {
        Sid      = "Connections"
        Effect   = "Allow"
        Action   = concat(local.ddb_read, local.ddb_write)
        Resource = local.table_resources["connections"]
      },
      {
        Sid      = "ConsumeLogs"
        Effect   = "Allow"
        Action   = local.consume
        Resource = local.queue_arn["logs"]
      },
      local.manage_connections,
    ]

    scheduler = concat(local.store, [
      local.audit_append,
      local.resolve_queues,
      {
        # Jobs and events; webhooks: the cluster.expiring events of clusters near their expiry; rollouts:
        # the tick of a rollout whose soak ended.
        Sid      = "SendJobsAndEvents"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [for q in ["jobs", "events", "webhooks", "rollouts"] : local.queue_arn[q]]
      },
      {
        # WebSocket connections past API Gateway's 2 h limit, with their subscriptions (by_expiry index).
        Sid      = "ExpiredConnections"
        Effect   = "Allow"
        Action   = ["dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem"]
        Resource = local.table_resources["connections"]
      },
      {
        # The sweeper's view of every tenant's slots: one Scan of the locks table.
        Sid      = "TenantSlots"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan"]
        Resource = var.tables["locks"].arn
      },
      {
        # Terraform state locks left by dead runners: found and re-read…
        Sid      = "StaleStateLocksRead"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan", "dynamodb:GetItem"]
        Resource = var.tables["tf-locks"].arn
      },
      {
        # …and deleted: lock items only (`<bucket>/tenants/….tfstate`), never a digest.
        Sid       = "StaleStateLocksDelete"
        Effect    = "Allow"
        Action    = ["dynamodb:DeleteItem"]
        Resource  = var.tables["tf-locks"].arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${local.state_bucket.name}/tenants/*.tfstate"] } }
      },
      {
        Sid       = "CheckRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:DescribeTasks", "ecs:ListTasks"]
        Resource  = "*"
        Condition = local.ecs_cluster
      },
    ])
  }
}

resource "aws_iam_role" "fn" {
  for_each = local.functions

  name = "${var.prefix}-${each.key}"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy" "fn" {
  for_each = local.functions

  name = "${var.prefix}-${each.key}"
  role = aws_iam_role.fn[each.key].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          Sid      = "OwnLogs"
          Effect   = "Allow"
          Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
          Resource = "${aws_cloudwatch_log_group.fn[each.key].arn}:*"
        },
        {
          # Active tracing: segments go to X-Ray (no resource level).
          Sid      = "Tracing"
          Effect   = "Allow"
          Action   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
          Resource = "*"
        },
      ],
      local.function_statements[each.key],
      [for arns in [local.read_secrets[each.key]] : {
        Sid      = "OwnSecrets"
        Effect   = "Allow"
        Action   = ["secretsmanager:GetSecretValue"]
        Resource = arns
      } if length(arns) > 0],
    )
  })
}
