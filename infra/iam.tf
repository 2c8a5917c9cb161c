# Least-privilege statements per function (the runner's task role is in runner.tf). Each function gets the
# tables, queues, buckets and APIs its code calls, and nothing account-wide except where AWS has no resource
# level (ecs:ListTasks, limited to the runner cluster by condition).

locals {
  ddb_read  = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"]
  ddb_write = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"]

  # A table and its indexes.
  table_resources = { for name, t in {
    clusters    = aws_dynamodb_table.clusters
    operations  = aws_dynamodb_table.operations
    locks       = aws_dynamodb_table.locks
    idempotency = aws_dynamodb_table.idempotency
    connections = aws_dynamodb_table.connections
    "tf-locks"  = aws_dynamodb_table.tf_locks
    templates   = aws_dynamodb_table.templates
    tenants     = aws_dynamodb_table.tenants
  } : name => [t.arn, "${t.arn}/index/*"] }

  queue_arns = [aws_sqs_queue.jobs.arn, aws_sqs_queue.events.arn, aws_sqs_queue.logs.arn, aws_sqs_queue.webhooks.arn]
  consume    = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]

  # Every function that resolves the queue URLs at start (shared::queues::QueueUrls).
  resolve_queues = {
    Sid      = "ResolveQueueUrls"
    Effect   = "Allow"
    Action   = ["sqs:GetQueueUrl"]
    Resource = local.queue_arns
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

  manage_connections = {
    Sid      = "PostToConnections"
    Effect   = "Allow"
    Action   = ["execute-api:ManageConnections"]
    Resource = "${aws_apigatewayv2_api.ws.execution_arn}/${local.ws_stage}/*/@connections/*"
  }

  artifacts_read = {
    Sid      = "ArtifactsRead"
    Effect   = "Allow"
    Action   = ["s3:GetObject", "s3:ListBucket"]
    Resource = [aws_s3_bucket.artifacts.arn, "${aws_s3_bucket.artifacts.arn}/*"]
  }

  # Objects in the state and artifacts buckets are SSE-KMS: reading one needs kms:Decrypt on the key.
  data_key_decrypt = {
    Sid      = "DataKeyDecrypt"
    Effect   = "Allow"
    Action   = ["kms:Decrypt"]
    Resource = aws_kms_key.data.arn
  }

  # Secrets a function reads by reference at cold start (secrets.tf, strato_aws::secret_env), by name.
  secret_arn = "arn:${local.partition}:secretsmanager:${var.region}:${local.account}:secret:strato/${var.prefix}"
  read_secrets = {
    api        = concat(["${local.secret_arn}/ws-jwt-secret-*"], local.agent_secret_enabled ? ["${local.secret_arn}/agent-token-secret-*"] : [])
    ws         = ["${local.secret_arn}/ws-jwt-secret-*"]
    dispatcher = ["${local.secret_arn}/run-proof-secret-*"]
    status     = ["${local.secret_arn}/run-proof-secret-*"]
    # The others read none.
    scheduler    = []
    webhooks     = []
    "log-fanout" = []
  }

  function_statements = {
    api = concat(local.store, [
      {
        # Seals sensitive variables and issues tenants' external ids (GenerateDataKey), opens the external id
        # it shows (Decrypt); state restores copy SSE-KMS objects (both).
        Sid      = "DataKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = aws_kms_key.data.arn
      },
      {
        Sid      = "Idempotency"
        Effect   = "Allow"
        Action   = concat(local.ddb_read, local.ddb_write)
        Resource = local.table_resources["idempotency"]
      },
      local.resolve_queues,
      {
        Sid      = "SendJobsAndAgentEvents"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [aws_sqs_queue.jobs.arn, aws_sqs_queue.events.arn]
      },
      {
        # GET /v1/templates and an unknown template's suggestions scan the catalog.
        Sid      = "TemplatesCatalog"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan"]
        Resource = aws_dynamodb_table.templates.arn
      },
      {
        # State versions: list them (bucket), read the chosen and the current one, copy one back as current.
        Sid      = "StateVersionsList"
        Effect   = "Allow"
        Action   = ["s3:ListBucketVersions"]
        Resource = aws_s3_bucket.state.arn
      },
      {
        Sid      = "StateVersions"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"]
        Resource = "${aws_s3_bucket.state.arn}/tenants/*"
      },
      {
        # A restore records Terraform's digest of the restored state: PutItem of `<bucket>/tenants/*-md5`
        # items of the lock table only, never a lock.
        Sid       = "StateDigests"
        Effect    = "Allow"
        Action    = ["dynamodb:PutItem"]
        Resource  = aws_dynamodb_table.tf_locks.arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${aws_s3_bucket.state.bucket}/tenants/*-md5"] } }
      },
    ])

    dispatcher = concat(local.store, [
      local.resolve_queues,
      {
        Sid      = "ConsumeJobs"
        Effect   = "Allow"
        Action   = local.consume
        Resource = aws_sqs_queue.jobs.arn
      },
      {
        # Wake the next queued operation when a lock is released.
        Sid      = "SendJobs"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = aws_sqs_queue.jobs.arn
      },
      {
        Sid       = "RunRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:RunTask"]
        Resource  = "arn:${local.partition}:ecs:${var.region}:${local.account}:task-definition/${aws_ecs_task_definition.runner.family}:*"
        Condition = { ArnEquals = { "ecs:cluster" = aws_ecs_cluster.runner.arn } }
      },
      {
        # A redelivered job adopts the task its first delivery started.
        Sid       = "FindRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:ListTasks", "ecs:DescribeTasks"]
        Resource  = "*"
        Condition = { ArnEquals = { "ecs:cluster" = aws_ecs_cluster.runner.arn } }
      },
      {
        Sid       = "PassRunnerRoles"
        Effect    = "Allow"
        Action    = ["iam:PassRole"]
        Resource  = [aws_iam_role.runner_task.arn, aws_iam_role.runner_execution.arn]
        Condition = { StringEquals = { "iam:PassedToService" = "ecs-tasks.amazonaws.com" } }
      },
    ])

    status = concat(local.store, [
      local.resolve_queues,
      {
        Sid      = "ConsumeEvents"
        Effect   = "Allow"
        Action   = local.consume
        Resource = aws_sqs_queue.events.arn
      },
      {
        # Wake the next queued operation; status frames to the live log stream; its own delayed timers
        # (the agent's configure deadline) back on the events queue; drift notifications for the webhooks
        # function.
        Sid      = "SendJobsFramesTimersAndWebhooks"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [aws_sqs_queue.jobs.arn, aws_sqs_queue.logs.arn, aws_sqs_queue.events.arn, aws_sqs_queue.webhooks.arn]
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
        Resource = aws_sqs_queue.webhooks.arn
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
        Resource = aws_sqs_queue.logs.arn
      },
      local.manage_connections,
    ]

    scheduler = concat(local.store, [
      local.resolve_queues,
      {
        Sid      = "SendJobsAndEvents"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [aws_sqs_queue.jobs.arn, aws_sqs_queue.events.arn]
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
        Resource = aws_dynamodb_table.locks.arn
      },
      {
        # Terraform state locks left by dead runners: found and re-read…
        Sid      = "StaleStateLocksRead"
        Effect   = "Allow"
        Action   = ["dynamodb:Scan", "dynamodb:GetItem"]
        Resource = aws_dynamodb_table.tf_locks.arn
      },
      {
        # …and deleted: lock items only (`<bucket>/tenants/….tfstate`), never a digest.
        Sid       = "StaleStateLocksDelete"
        Effect    = "Allow"
        Action    = ["dynamodb:DeleteItem"]
        Resource  = aws_dynamodb_table.tf_locks.arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["${aws_s3_bucket.state.bucket}/tenants/*.tfstate"] } }
      },
      {
        Sid       = "CheckRunnerTasks"
        Effect    = "Allow"
        Action    = ["ecs:DescribeTasks", "ecs:ListTasks"]
        Resource  = "*"
        Condition = { ArnEquals = { "ecs:cluster" = aws_ecs_cluster.runner.arn } }
      },
    ])
  }
}
