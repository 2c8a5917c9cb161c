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

variable "certificate_arn" {
  description = "ACM certificate (us-east-1) for `aliases`: viewers then need TLS 1.2 or later (TLSv1.2_2021, SNI). Null: CloudFront's default *.cloudfront.net certificate."
  type        = string
  default     = null

  validation {
    condition     = var.certificate_arn == null || can(regex("^arn:aws[a-z-]*:acm:us-east-1:[0-9]{12}:certificate/.+$", var.certificate_arn))
    error_message = "The certificate_arn must be an ACM certificate ARN in us-east-1 (CloudFront reads certificates there only)."
  }
}

variable "aliases" {
  description = "The console's own host names (CNAMEs), covered by `certificate_arn`. Empty: the distribution's *.cloudfront.net name."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.aliases) == 0 || var.certificate_arn != null
    error_message = "The aliases need a certificate_arn that covers them."
  }
}

variable "waf_web_acl_arn" {
  description = "ARN of a WAFv2 web ACL (scope CLOUDFRONT) to put in front of the console and the API's /v1/* path. Null: none."
  type        = string
  default     = null

  validation {
    condition     = var.waf_web_acl_arn == null || can(regex("^arn:aws[a-z-]*:wafv2:us-east-1:[0-9]{12}:global/webacl/.+$", var.waf_web_acl_arn))
    error_message = "The waf_web_acl_arn must be a WAFv2 web ACL ARN of scope CLOUDFRONT (arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>)."
  }
}
