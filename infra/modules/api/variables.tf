variable "prefix" {
  description = "Deployment prefix: APIs are `{prefix}-http` and `{prefix}-ws`."
  type        = string
}

variable "region" {
  description = "AWS region of the deployment (the @connections endpoint's host)."
  type        = string
}

variable "jwt_issuer" {
  description = "OIDC issuer URL whose tokens the HTTP API's JWT authorizer accepts (API Gateway fetches its JWKS)."
  type        = string
}

variable "jwt_audience" {
  description = "Audiences (client ids) the JWT authorizer accepts."
  type        = list(string)

  validation {
    condition     = length(var.jwt_audience) > 0
    error_message = "At least one audience is needed for the JWT authorizer."
  }
}

variable "tenant_claim" {
  description = "JWT claim holding the tenant id (written into the access logs)."
  type        = string
  default     = "tenant_id"
}

variable "api_function" {
  description = "The api function: { name, invoke_arn }."
  type        = object({ name = string, invoke_arn = string })
}

variable "ws_function" {
  description = "The ws function: { name, invoke_arn }."
  type        = object({ name = string, invoke_arn = string })
}

variable "rate_limit" {
  description = "Steady-state requests per second the HTTP API accepts (all routes together)."
  type        = number
  default     = 100
}

variable "burst_limit" {
  description = "Burst of requests the HTTP API accepts above the rate limit."
  type        = number
  default     = 200
}

variable "ws_rate_limit" {
  description = "Steady-state WebSocket messages per second (all connections together)."
  type        = number
  default     = 50
}

variable "ws_burst_limit" {
  description = "Burst of WebSocket messages above ws_rate_limit."
  type        = number
  default     = 100
}

variable "log_retention_days" {
  description = "Retention of the access log groups."
  type        = number
  default     = 30
}

variable "ws_deployment" {
  description = "Deploy the WebSocket stage explicitly (always, on AWS). False only on an emulator without API Gateway v2 deployments (moto): the stage then has no deployment."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "Strato's data key (the data module's `kms_key_arn`): the log groups' encryption."
  type        = string
}
