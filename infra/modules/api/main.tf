# API Gateway: the tenants' HTTP API (payload v2, JWT authorizer) in front of the api function, and the
# WebSocket API (route selection on `action`) in front of the ws function. Access logs are JSON lines that
# join the functions' logs: `integrationRequestId` is the Lambda request id of the invocation.

locals {
  ws_stage = "live"

  # Everything under /v1 needs a JWT (a tenant's; on /v1/admin the platform operator's, told apart by the api
  # function: its audience, no tenant claim, `platform:admin`), except the cluster agent's calls, which carry the agent's own
  # token (checked by the api function); /healthz and the OIDC issuer's two documents (clouds fetch them
  # anonymously to verify runs' identity tokens) are open. API Gateway picks the most specific route.
  http_routes = {
    "ANY /v1/{proxy+}"                      = true
    "GET /healthz"                          = false
    "GET /.well-known/openid-configuration" = false
    "GET /.well-known/jwks.json"            = false
    "POST /v1/agent/register"               = false
    "POST /v1/agent/heartbeat"              = false
    "POST /v1/agent/credential"             = false
  }

  # `$connect?token=<JWT>` is checked by the ws function itself (a browser cannot set headers on it).
  ws_routes = ["$connect", "$disconnect", "subscribe", "unsubscribe", "ping"]

  access_log_common = {
    requestId               = "$context.requestId"
    extendedRequestId       = "$context.extendedRequestId"
    integrationRequestId    = "$context.integration.requestId"
    integrationStatus       = "$context.integration.status"
    integrationLatencyMs    = "$context.integration.latency"
    integrationErrorMessage = "$context.integrationErrorMessage"
    errorMessage            = "$context.error.message"
    sourceIp                = "$context.identity.sourceIp"
    requestTime             = "$context.requestTimeEpoch"
    status                  = "$context.status"
  }
}

# ---- HTTP API --------------------------------------------------------------------------------------------

resource "aws_apigatewayv2_api" "http" {
  name          = "${var.prefix}-http"
  protocol_type = "HTTP"
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  api_id           = aws_apigatewayv2_api.http.id
  name             = "${var.prefix}-jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]

  jwt_configuration {
    issuer   = var.jwt_issuer
    audience = var.jwt_audience
  }
}

resource "aws_apigatewayv2_integration" "api" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_method     = "POST"
  integration_uri        = var.api_function.invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "http" {
  #checkov:skip=CKV_AWS_309:Routes without the JWT authorizer are public by design: /healthz, the OIDC issuer's discovery document and JWKS, and the agent routes, which check the agent's token in the api function.
  for_each = local.http_routes

  api_id             = aws_apigatewayv2_api.http.id
  route_key          = each.key
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = each.value ? "JWT" : "NONE"
  authorizer_id      = each.value ? aws_apigatewayv2_authorizer.jwt.id : null
}

resource "aws_cloudwatch_log_group" "http_access" {
  #checkov:skip=CKV_AWS_338:Retention is the operator's log_retention_days (default 30: operational logs; the audit log is the DynamoDB audit table with its own retention).
  name              = "/aws/apigateway/${var.prefix}-http"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_apigatewayv2_stage" "http" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    throttling_rate_limit  = var.rate_limit
    throttling_burst_limit = var.burst_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.http_access.arn
    format = jsonencode(merge(local.access_log_common, {
      routeKey        = "$context.routeKey"
      httpMethod      = "$context.httpMethod"
      path            = "$context.path"
      latencyMs       = "$context.responseLatency"
      authorizerError = "$context.authorizer.error"
      tenant          = "$context.authorizer.claims.${var.tenant_claim}"
    }))
  }
}

resource "aws_lambda_permission" "http" {
  statement_id  = "http-api"
  action        = "lambda:InvokeFunction"
  function_name = var.api_function.name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}

# ---- WebSocket API ---------------------------------------------------------------------------------------

resource "aws_apigatewayv2_api" "ws" {
  name                       = "${var.prefix}-ws"
  protocol_type              = "WEBSOCKET"
  route_selection_expression = "$request.body.action"
}

resource "aws_apigatewayv2_integration" "ws" {
  api_id             = aws_apigatewayv2_api.ws.id
  integration_type   = "AWS_PROXY"
  integration_method = "POST"
  integration_uri    = var.ws_function.invoke_arn
}

resource "aws_apigatewayv2_route" "ws" {
  #checkov:skip=CKV_AWS_309:The ws function checks the $connect ticket (HS256, audience strato-ws, 5 minutes); later routes run on that authenticated connection.
  for_each = toset(local.ws_routes)

  api_id             = aws_apigatewayv2_api.ws.id
  route_key          = each.key
  target             = "integrations/${aws_apigatewayv2_integration.ws.id}"
  authorization_type = "NONE"
}

# WebSocket stages do not auto-deploy: a new deployment whenever a route or the integration changes.
resource "aws_apigatewayv2_deployment" "ws" {
  count = var.ws_deployment ? 1 : 0

  api_id = aws_apigatewayv2_api.ws.id
  triggers = {
    redeployment = sha1(jsonencode([
      aws_apigatewayv2_integration.ws.integration_uri,
      [for r in aws_apigatewayv2_route.ws : [r.route_key, r.target]],
    ]))
  }

  lifecycle {
    create_before_destroy = true
  }

  depends_on = [aws_apigatewayv2_route.ws]
}

resource "aws_cloudwatch_log_group" "ws_access" {
  #checkov:skip=CKV_AWS_338:Retention is the operator's log_retention_days (default 30: operational logs; the audit log is the DynamoDB audit table with its own retention).
  name              = "/aws/apigateway/${var.prefix}-ws"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_apigatewayv2_stage" "ws" {
  #checkov:skip=CKV2_AWS_51:Clients are browsers and CLIs authenticated by tickets; a client certificate would only authenticate API Gateway to a backend, and the backend is a Lambda integration.
  api_id        = aws_apigatewayv2_api.ws.id
  name          = local.ws_stage
  deployment_id = var.ws_deployment ? aws_apigatewayv2_deployment.ws[0].id : null

  default_route_settings {
    throttling_rate_limit  = var.ws_rate_limit
    throttling_burst_limit = var.ws_burst_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.ws_access.arn
    format = jsonencode(merge(local.access_log_common, {
      routeKey     = "$context.routeKey"
      eventType    = "$context.eventType"
      connectionId = "$context.connectionId"
    }))
  }
}

resource "aws_lambda_permission" "ws" {
  statement_id  = "ws-api"
  action        = "lambda:InvokeFunction"
  function_name = var.ws_function.name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.ws.execution_arn}/*/*"
}
