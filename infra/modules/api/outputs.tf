output "http_api_url" {
  description = "Base URL of the tenants' HTTP API (also the runner's STRATO_CONTROL_PLANE_URL)."
  value       = aws_apigatewayv2_api.http.api_endpoint
}

output "websocket_url" {
  description = "WebSocket URL for live logs: connect with ?token=<ticket from POST /v1/ws-tickets>."
  value       = "${aws_apigatewayv2_api.ws.api_endpoint}/${local.ws_stage}"
}

output "ws" {
  description = "What the ws and log-fanout functions need: the @connections endpoint, execution ARN and stage."
  value = {
    management_endpoint = "https://${aws_apigatewayv2_api.ws.id}.execute-api.${var.region}.amazonaws.com/${local.ws_stage}"
    execution_arn       = aws_apigatewayv2_api.ws.execution_arn
    stage               = local.ws_stage
  }
}

output "http_access_log_group" {
  description = "The HTTP API's access log group."
  value       = aws_cloudwatch_log_group.http_access.name
}
