variable "prefix" {
  description = "Deployment prefix: the bucket is `{prefix}-console` (bucket names are global)."
  type        = string
}

variable "dist_dir" {
  description = "The built console (`cd console && npm ci && npm run build` writes console/dist): index.html and assets/*. Relative paths are relative to the root module's working directory."
  type        = string

  validation {
    condition     = fileexists("${var.dist_dir}/index.html")
    error_message = "No index.html in dist_dir: build the console first (cd console && npm ci && npm run build), or point dist_dir at its dist directory."
  }
}

variable "http_api_endpoint" {
  description = "The HTTP API's endpoint (https://<id>.execute-api.<region>.amazonaws.com, stage $default): the origin of /v1/*."
  type        = string

  validation {
    condition     = can(regex("^https://[^/]+$", var.http_api_endpoint))
    error_message = "http_api_endpoint must be https://<host> with no path (the HTTP API's $default stage)."
  }
}

variable "websocket_url" {
  description = "The WebSocket API's URL (wss://<host>/<stage>), written into console.json and allowed by the CSP's connect-src."
  type        = string

  validation {
    # wss:// in AWS; moto reports its WebSocket APIs' endpoints as https://. The CSP allows wss://<host>.
    condition     = can(regex("^(wss|https)://[^/]+", var.websocket_url))
    error_message = "websocket_url must start with wss://<host>."
  }
}

variable "oidc_issuer" {
  description = "OIDC issuer the console logs users in with: the HTTP API's JWT authorizer issuer, so the API accepts the console's tokens."
  type        = string

  validation {
    condition     = can(regex("^https://[^/]+", var.oidc_issuer))
    error_message = "oidc_issuer must be an https:// URL."
  }
}

variable "oidc_client_id" {
  description = "OIDC client id of the console (a public client, authorization code + PKCE); its tokens' aud/client_id must be one of the JWT authorizer's audiences."
  type        = string
}

variable "connect_src_extra" {
  description = "More CSP connect-src sources, e.g. the identity provider's token endpoint host when it is not the issuer's host (https://oauth2.googleapis.com)."
  type        = list(string)
  default     = []
}

variable "price_class" {
  description = "CloudFront price class (edge locations used)."
  type        = string
  default     = "PriceClass_100"
}

variable "force_destroy_bucket" {
  description = "Destroy empties the bucket (its objects are all rebuilt from dist_dir anyway)."
  type        = bool
  default     = true
}
