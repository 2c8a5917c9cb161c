# Secrets the functions read by reference: their environment holds `NAME_ARN`, never the value, and each
# function reads the value once at cold start (strato_aws::secret_env). The runner gets its agent secret
# through ECS `secrets` (runner.tf). Each function's role may read only its own (iam.tf).

resource "aws_secretsmanager_secret" "ws_jwt" {
  name                    = "strato/${var.prefix}/ws-jwt-secret"
  description             = "Strato: HS256 key of WebSocket tickets (api signs, ws checks)"
  recovery_window_in_days = 7
}

resource "aws_secretsmanager_secret_version" "ws_jwt" {
  secret_id     = aws_secretsmanager_secret.ws_jwt.id
  secret_string = var.ws_jwt_secret
}

resource "aws_secretsmanager_secret" "run_proof" {
  name                    = "strato/${var.prefix}/run-proof-secret"
  description             = "Strato: key of runners' run proofs (dispatcher signs, status checks)"
  recovery_window_in_days = 7
}

resource "aws_secretsmanager_secret_version" "run_proof" {
  secret_id     = aws_secretsmanager_secret.run_proof.id
  secret_string = var.run_proof_secret
}
