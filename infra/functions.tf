# The seven control-plane Lambdas: one zip per function from `cargo lambda build --release --output-format zip`,
# an OS-only runtime running the `bootstrap` binary, one role each with only what that function calls.

locals {
  account   = data.aws_caller_identity.current.account_id
  partition = data.aws_partition.current.partition

  # The WebSocket API's stage, and its @connections management endpoint (ws and log-fanout post frames there).
  ws_stage               = "live"
  ws_management_endpoint = "https://${aws_apigatewayv2_api.ws.id}.execute-api.${var.region}.amazonaws.com/${local.ws_stage}"

  # Per function: crate/binary name (the zip's directory) and timeout. A function fed by a queue must finish
  # within the queue's visibility timeout (jobs, events, webhooks: 60 s; logs: 30 s), which AWS also enforces.
  functions = {
    api          = { binary = "strato-api", timeout = 29 } # HTTP API integrations time out at 30 s
    dispatcher   = { binary = "strato-dispatcher", timeout = 50 }
    status       = { binary = "strato-status", timeout = 50 }
    ws           = { binary = "strato-ws", timeout = 29 } # WebSocket integrations time out at 29 s
    "log-fanout" = { binary = "strato-log-fanout", timeout = 25 }
    scheduler    = { binary = "strato-scheduler", timeout = 300 }
    webhooks     = { binary = "strato-webhooks", timeout = 50 }
  }

  # Environment exactly as each function's `Config::from_lookup` reads it (README "Configuration"); the
  # infra check feeds these maps to those functions. Secrets appear only as `NAME_ARN` references
  # (secrets.tf), resolved by the function at cold start.
  common_env = {
    STRATO_RESOURCE_PREFIX = var.prefix
    RUST_LOG               = var.log_level
  }
  function_env = {
    api = merge(
      {
        STRATO_TENANT_CLAIM = var.tenant_claim
        # WebSocket tickets (POST /v1/ws-tickets) are signed with what the ws function checks.
        STRATO_JWT_SECRET_ARN = aws_secretsmanager_secret.ws_jwt.arn
        # The principal tenants' target roles trust (GET /v1/tenant/target-access): runner.tf's task role,
        # spelled out so the value is known at plan time.
        STRATO_RUNNER_ROLE_ARN = "arn:${local.partition}:iam::${local.account}:role/${var.prefix}-runner-task"
      },
      { for k, v in {
        STRATO_JWT_ISSUER   = var.jwt_issuer
        STRATO_JWT_AUDIENCE = var.jwt_audience[0]
      } : k => v if var.ws_jwt_check_claims },
      # Unset when empty: templates with a cluster agent are then refused with a clear error.
      local.agent_secret_enabled ? { STRATO_AGENT_TOKEN_SECRET_ARN = aws_secretsmanager_secret.agent_token[0].arn } : {},
    )
    dispatcher = {
      STRATO_RUNNER_CLUSTER          = aws_ecs_cluster.runner.arn
      STRATO_RUNNER_TASK_DEFINITION  = aws_ecs_task_definition.runner.arn
      STRATO_RUNNER_CONTAINER        = local.runner_container
      STRATO_RUNNER_SUBNETS          = join(",", var.runner_subnets)
      STRATO_RUNNER_SECURITY_GROUPS  = join(",", var.runner_security_groups)
      STRATO_RUNNER_ASSIGN_PUBLIC_IP = var.runner_assign_public_ip ? "true" : "false"
      # Each runner is started with a proof of its run made with this key; status checks it on every event.
      STRATO_RUN_PROOF_SECRET_ARN = aws_secretsmanager_secret.run_proof.arn
    }
    status = {
      STRATO_RUN_PROOF_SECRET_ARN = aws_secretsmanager_secret.run_proof.arn
    }
    ws = merge(
      {
        STRATO_JWT_SECRET_ARN         = aws_secretsmanager_secret.ws_jwt.arn
        STRATO_TENANT_CLAIM           = var.tenant_claim
        STRATO_WS_MANAGEMENT_ENDPOINT = local.ws_management_endpoint
      },
      { for k, v in {
        STRATO_JWT_ISSUER   = var.jwt_issuer
        STRATO_JWT_AUDIENCE = var.jwt_audience[0]
      } : k => v if var.ws_jwt_check_claims },
    )
    "log-fanout" = {
      STRATO_WS_MANAGEMENT_ENDPOINT = local.ws_management_endpoint
    }
    scheduler = {
      STRATO_RUNNER_CLUSTER       = aws_ecs_cluster.runner.arn
      STRATO_DRIFT_BATCH          = var.drift_batch
      STRATO_SWEEP_GRACE_SECS     = var.sweep_grace_secs
      STRATO_HEARTBEAT_STALE_SECS = var.heartbeat_stale_secs
    }
    webhooks = {}
  }
}

resource "aws_cloudwatch_log_group" "function" {
  for_each = local.functions

  name              = "/aws/lambda/${var.prefix}-${each.key}"
  retention_in_days = var.log_retention_days
}

resource "aws_iam_role" "function" {
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

resource "aws_iam_role_policy" "function" {
  for_each = local.functions

  name = "${var.prefix}-${each.key}"
  role = aws_iam_role.function[each.key].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [{
        Sid      = "OwnLogs"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "${aws_cloudwatch_log_group.function[each.key].arn}:*"
      }],
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

resource "aws_lambda_function" "fn" {
  for_each = local.functions

  function_name    = "${var.prefix}-${each.key}"
  role             = aws_iam_role.function[each.key].arn
  filename         = "${var.lambda_zip_dir}/${each.value.binary}/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_zip_dir}/${each.value.binary}/bootstrap.zip")
  handler          = "bootstrap"
  runtime          = var.lambda_runtime
  # Provider 3.39 has no `architectures` argument, so the functions run on x86_64 (build with --x86-64).
  memory_size = var.lambda_memory_mb
  timeout     = each.value.timeout

  environment {
    variables = merge(local.common_env, local.function_env[each.key])
  }

  depends_on = [aws_cloudwatch_log_group.function, aws_iam_role_policy.function]
}

# ---- triggers --------------------------------------------------------------------------------------------

# SQS → function mappings with partial batch responses (ReportBatchItemFailures): the consumers return the
# failed messages' ids, and only those are redelivered (then moved to the DLQ). AWS provider 3.39 cannot set
# FunctionResponseTypes on aws_lambda_event_source_mapping, and without it Lambda would treat a partial
# failure as success and delete the failed messages, so the mappings are created through CloudFormation,
# which sets it server-side whatever the provider version.
locals {
  event_sources = {
    jobs   = { queue_arn = aws_sqs_queue.jobs.arn, function = "dispatcher", batch_size = 10 }
    events = { queue_arn = aws_sqs_queue.events.arn, function = "status", batch_size = 10 }
    logs   = { queue_arn = aws_sqs_queue.logs.arn, function = "log-fanout", batch_size = 10 }
    # strato_webhooks::BATCH_SIZE: a batch of hanging receivers (5 s each) still ends within the timeout.
    webhooks = { queue_arn = aws_sqs_queue.webhooks.arn, function = "webhooks", batch_size = 5 }
  }
}

resource "aws_cloudformation_stack" "event_sources" {
  name = "${var.prefix}-event-sources"
  template_body = jsonencode({
    AWSTemplateFormatVersion = "2010-09-09"
    Description              = "Strato SQS event source mappings (partial batch responses)"
    Resources = { for queue, m in local.event_sources : "${title(queue)}EventSource" => {
      Type = "AWS::Lambda::EventSourceMapping"
      Properties = {
        EventSourceArn        = m.queue_arn
        FunctionName          = aws_lambda_function.fn[m.function].arn
        BatchSize             = m.batch_size
        FunctionResponseTypes = ["ReportBatchItemFailures"]
        Enabled               = true
      }
    } }
  })

  # The mapping is checked against the function role's SQS permissions when it is created.
  depends_on = [aws_iam_role_policy.function]
}

# EventBridge schedules → scheduler, with the constant input the function expects.
resource "aws_cloudwatch_event_rule" "schedule" {
  for_each = {
    drift = var.drift_schedule
    sweep = var.sweep_schedule
  }

  name                = "${var.prefix}-${each.key}"
  description         = "Strato scheduler tick: ${each.key}"
  schedule_expression = each.value
}

resource "aws_cloudwatch_event_target" "schedule" {
  for_each = aws_cloudwatch_event_rule.schedule

  rule  = each.value.name
  arn   = aws_lambda_function.fn["scheduler"].arn
  input = jsonencode({ task = each.key })
}

resource "aws_lambda_permission" "schedule" {
  for_each = aws_cloudwatch_event_rule.schedule

  statement_id  = "schedule-${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.fn["scheduler"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = each.value.arn
}
