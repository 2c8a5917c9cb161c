# The seven control-plane Lambdas: one arm64 zip per function (cargo-lambda's layout), the OS-only
# provided.al2023 runtime running `bootstrap`, JSON logs into their own log group, X-Ray tracing, one role each
# with only what that function calls (iam.tf), and the SQS mappings with partial batch responses.

locals {
  # Per function: crate/binary name (the zip's directory) and timeout. A function fed by a queue must finish
  # within the queue's visibility timeout (jobs, events, webhooks: 60 s; logs: 30 s; rollouts: 35 s), which AWS also enforces;
  # devstack stops a batch at the same timeout (strato_aws::resources::QueueDef::consumer_timeout_secs).
  functions = {
    api          = { binary = "strato-api", timeout = 29 } # HTTP API integrations time out at 30 s
    dispatcher   = { binary = "strato-dispatcher", timeout = 50 }
    status       = { binary = "strato-status", timeout = 50 }
    ws           = { binary = "strato-ws", timeout = 29 } # WebSocket integrations time out at 29 s
    "log-fanout" = { binary = "strato-log-fanout", timeout = 25 }
    scheduler    = { binary = "strato-scheduler", timeout = 300 }
    webhooks     = { binary = "strato-webhooks", timeout = 50 }
  }

  agent_enabled = var.secrets.agent_token_arn != null
  check_claims  = var.ws_ticket_issuer != null

  # Environment exactly as each function's `Config::from_lookup` reads it (docs/configuration.md); the
  # infra_apply test feeds the applied maps to those functions. Secrets appear only as `NAME_ARN` references,
  # resolved by the function at cold start (strato_aws::secret_env).
  common_env = {
    STRATO_RESOURCE_PREFIX = var.prefix
    RUST_LOG               = var.log_level
  }
  # The functions that end operations or note on them set their expiry (the operations table's TTL).
  operation_env = { STRATO_OPERATION_RETENTION_DAYS = tostring(var.operation_retention_days) }
  ticket_claims = local.check_claims ? {
    STRATO_JWT_ISSUER   = var.ws_ticket_issuer
    STRATO_JWT_AUDIENCE = var.ws_ticket_audience
  } : {}
  # The functions that append to the audit log set its entries' expiry (DynamoDB TTL).
  audit_env = { STRATO_AUDIT_RETENTION_DAYS = tostring(var.audit_retention_days) }
  # The issuer, identical for both: the dispatcher names it in every token's `iss`, the api in the documents
  # and trust settings it shows (a verifier compares `iss` byte for byte). The key by ARN: a new signing key is
  # a new environment, so no warm process signs with it under the old key's kid (KmsSigner caches the public
  # half per process).
  oidc_env = var.oidc == null ? {} : {
    STRATO_OIDC_ISSUER      = var.oidc.issuer
    STRATO_OIDC_SIGNING_KEY = var.oidc.signing_key_arn
  }
  function_env = {
    api = merge(
      local.audit_env,
      local.operation_env,
      {
        STRATO_TENANT_CLAIM = var.tenant_claim
        # WebSocket tickets (POST /v1/ws-tickets) are signed with what the ws function checks.
        STRATO_JWT_SECRET_ARN = var.secrets.ws_jwt_arn
        # The principal tenants' target roles trust (GET /v1/tenant/target-access).
        STRATO_RUNNER_ROLE_ARN = var.runner.task_role_arn
      },
      local.ticket_claims,
      # Scopes match exactly under this prefix (an identity provider's resource-server identifier, e.g.
      # Cognito's `https://api.example.com/`); unset, the granted scopes are Strato's bare names.
      var.scope_prefix == "" ? {} : { STRATO_SCOPE_PREFIX = var.scope_prefix },
      # The platform operator's identity: /v1/admin routes need a token of this audience (or client id), no
      # tenant claim and the `platform:admin` scope. Unset: every /v1/admin route is refused (403).
      var.operator_audience == "" ? {} : { STRATO_OPERATOR_AUDIENCE = var.operator_audience },
      var.operator_issuer == "" ? {} : { STRATO_OPERATOR_ISSUER = var.operator_issuer },
      # Unset when off: templates with a cluster agent are then refused with a clear error.
      local.agent_enabled ? { STRATO_AGENT_TOKEN_SECRET_ARN = var.secrets.agent_token_arn } : {},
      local.oidc_env,
    )
    dispatcher = merge(local.audit_env, local.operation_env, local.oidc_env, {
      STRATO_RUNNER_CLUSTER          = var.runner.cluster_arn
      STRATO_RUNNER_TASK_DEFINITION  = var.runner.task_definition_arn
      STRATO_RUNNER_CONTAINER        = var.runner.container
      STRATO_RUNNER_SUBNETS          = join(",", var.runner.subnets)
      STRATO_RUNNER_SECURITY_GROUPS  = join(",", var.runner.security_groups)
      STRATO_RUNNER_ASSIGN_PUBLIC_IP = var.runner.assign_public_ip ? "true" : "false"
      # Each runner is started with a proof of its run made with this key; status checks it on every event.
      STRATO_RUN_PROOF_SECRET_ARN = var.secrets.run_proof_arn
    })
    status = merge(local.audit_env, local.operation_env, {
      STRATO_RUN_PROOF_SECRET_ARN = var.secrets.run_proof_arn
    })
    ws = merge(
      {
        STRATO_JWT_SECRET_ARN         = var.secrets.ws_jwt_arn
        STRATO_TENANT_CLAIM           = var.tenant_claim
        STRATO_WS_MANAGEMENT_ENDPOINT = var.ws.management_endpoint
      },
      local.ticket_claims,
    )
    "log-fanout" = {
      STRATO_WS_MANAGEMENT_ENDPOINT = var.ws.management_endpoint
    }
    scheduler = merge(local.audit_env, local.operation_env, {
      STRATO_RUNNER_CLUSTER       = var.runner.cluster_arn
      STRATO_DRIFT_BATCH          = tostring(var.drift_batch)
      STRATO_SWEEP_GRACE_SECS     = tostring(var.sweep_grace_secs)
      STRATO_HEARTBEAT_STALE_SECS = tostring(var.heartbeat_stale_secs)
    })
    webhooks = local.operation_env
  }
}

resource "aws_cloudwatch_log_group" "fn" {
  #checkov:skip=CKV_AWS_338:Retention is the operator's log_retention_days (default 30: operational logs; the audit log is the DynamoDB audit table with its own retention).
  for_each = local.functions

  name              = "/aws/lambda/${var.prefix}-${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_lambda_function" "fn" {
  #checkov:skip=CKV_AWS_116:The functions are invoked through SQS mappings (each queue has its DLQ), synchronously by API Gateway, or by EventBridge Scheduler (its retry policy): a function DLQ applies to none of these.
  #checkov:skip=CKV_AWS_117:The functions call AWS APIs only (TLS, IAM) and the webhooks function must reach tenants' public endpoints (its egress is guarded in code): a VPC adds NAT and endpoints, not protection.
  #checkov:skip=CKV_AWS_173:The environment holds no secret (secrets are ARNs read from Secrets Manager at start); Lambda encrypts it at rest with its AWS-managed key.
  for_each = local.functions

  function_name    = "${var.prefix}-${each.key}"
  role             = aws_iam_role.fn[each.key].arn
  filename         = "${var.lambda_zip_dir}/${each.value.binary}/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_zip_dir}/${each.value.binary}/bootstrap.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = var.memory_mb
  timeout          = each.value.timeout
  # -1: unreserved.
  reserved_concurrent_executions = lookup(var.reserved_concurrency, each.key, -1)
  # Optional: Lambda then refuses (Enforce) or flags (Warn) code not signed by the config's profiles.
  code_signing_config_arn = var.code_signing_config_arn

  environment {
    variables = merge(local.common_env, local.function_env[each.key])
  }

  # JSON lines (the functions' tracing output is JSON too), joinable with the HTTP API's access logs on the
  # request id.
  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.fn[each.key].name
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [aws_iam_role_policy.fn]
}

# ---- SQS → function, with partial batch responses ----------------------------------------------------------

locals {
  # The consumers return the failed messages' ids (ReportBatchItemFailures): only those are redelivered (and
  # moved to the DLQ after max_receive_count); without it a partial failure would delete the failed messages.
  event_sources = {
    jobs     = { function = "dispatcher", batch_size = 1 } # strato_dispatcher::BATCH_SIZE: a job's deliveries are its own attempts
    events   = { function = "status", batch_size = 10 }
    logs     = { function = "log-fanout", batch_size = 10 }
    webhooks = { function = "webhooks", batch_size = 5 } # strato_webhooks::BATCH_SIZE: hanging receivers fit the timeout
    # The api applies a rollout's inputs and starts the runs they decide; a few per invocation fit its 29 s.
    rollouts = { function = "api", batch_size = 5 }
  }
}

resource "aws_lambda_event_source_mapping" "queue" {
  for_each = local.event_sources

  event_source_arn        = var.queues[each.key].arn
  function_name           = aws_lambda_function.fn[each.value.function].arn
  batch_size              = each.value.batch_size
  function_response_types = ["ReportBatchItemFailures"]
  enabled                 = true

  # A capped function is polled with at most its reserved concurrency: batches wait in the queue rather than
  # being throttled (a throttled delivery still counts towards the DLQ).
  dynamic "scaling_config" {
    for_each = contains(keys(var.reserved_concurrency), each.value.function) ? [var.reserved_concurrency[each.value.function]] : []
    content {
      maximum_concurrency = scaling_config.value
    }
  }
}
