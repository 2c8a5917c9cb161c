variable "prefix" {
  description = "Deployment prefix: the signing key's alias is `alias/{prefix}-oidc`, the bucket `{prefix}-oidc`, the signer the role `{prefix}-dispatcher`."
  type        = string
}

variable "keys" {
  description = "Names of the signing key generations: one RSA_2048 KMS key each, every one published in the JWKS. Rotation adds a name, moves signing_key to it, and later drops the old name (infra/README.md)."
  type        = list(string)
  default     = ["1"]

  validation {
    condition     = length(var.keys) > 0 && length(var.keys) == length(distinct(var.keys)) && alltrue([for k in var.keys : can(regex("^[a-z0-9-]{1,20}$", k))])
    error_message = "keys must be 1 or more distinct names of 1-20 characters a-z, 0-9 and '-'."
  }
}

variable "signing_key" {
  description = "Which of `keys` signs the runs' tokens (the alias points at it; the dispatcher and api get its ARN). The others are only published."
  type        = string
  default     = "1"
}

variable "deletion_window_days" {
  description = "Days a dropped signing key waits before deletion (7-30). Tokens it signed last at most an hour."
  type        = number
  default     = 30
}

variable "cache_max_age_secs" {
  description = "Cache-Control max-age of the two documents (CloudFront and the clouds' fetchers): how long a newly published key may stay unseen."
  type        = number
  default     = 300
}

variable "price_class" {
  description = "CloudFront price class (edge locations used)."
  type        = string
  default     = "PriceClass_100"
}

variable "certificate_arn" {
  description = "ACM certificate (us-east-1) for `aliases`: the issuer is then https://<aliases[0]> (TLS 1.2 minimum, SNI). Null: the distribution's *.cloudfront.net name."
  type        = string
  default     = null

  validation {
    condition     = var.certificate_arn == null || can(regex("^arn:aws[a-z-]*:acm:us-east-1:[0-9]{12}:certificate/.+$", var.certificate_arn))
    error_message = "The certificate_arn must be an ACM certificate ARN in us-east-1 (CloudFront reads certificates there only)."
  }
}

variable "aliases" {
  description = "The issuer's own host names, covered by certificate_arn; the first is the issuer URL's host. Empty: the distribution's *.cloudfront.net name."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.aliases) == 0 || var.certificate_arn != null
    error_message = "The aliases need a certificate_arn that covers them."
  }
}

variable "waf_web_acl_arn" {
  description = "ARN of a WAFv2 web ACL (scope CLOUDFRONT) in front of the issuer. Null: none."
  type        = string
  default     = null

  validation {
    condition     = var.waf_web_acl_arn == null || can(regex("^arn:aws[a-z-]*:wafv2:us-east-1:[0-9]{12}:global/webacl/.+$", var.waf_web_acl_arn))
    error_message = "The waf_web_acl_arn must be a WAFv2 web ACL ARN of scope CLOUDFRONT."
  }
}

variable "force_destroy_bucket" {
  description = "Destroy empties the bucket (its two documents are rebuilt from the keys anyway)."
  type        = bool
  default     = true
}
