# Strato as an OIDC issuer, as the clouds see it: `<issuer>/.well-known/openid-configuration` and
# `<issuer>/.well-known/jwks.json`, two static JSON objects written by Terraform from the signing keys' public
# halves into a private bucket and served by CloudFront (Origin Access Control). Static on purpose: a cloud
# verifying a run's token then depends on neither the api function (cold starts, errors), nor the HTTP API's
# throttling (which tenants' traffic shares), nor any tenant data; the documents change only when the keys or
# the issuer URL do, i.e. at an apply.

locals {
  # CloudFront's managed policies (fixed ids, the same in every account).
  caching_optimized       = "658327ea-f89d-4fab-a63d-7e88639e58f6" # honours the objects' Cache-Control
  security_headers_policy = "67f7725c-6f97-4210-82d7-5512b31e9d03" # SecurityHeadersPolicy: HSTS, nosniff, framing

  origin = "issuer-bucket"
  issuer = length(var.aliases) > 0 ? "https://${var.aliases[0]}" : "https://${aws_cloudfront_distribution.issuer.domain_name}"

  # The DER header of an RSA-2048 SubjectPublicKeyInfo up to and including the modulus' sign byte (33 bytes,
  # so exactly 44 base64 characters). The 256 modulus bytes follow: base64 characters 44..385, which are the
  # modulus' own unpadded base64 because the byte after it (0x02, the exponent's tag) has a zero high nibble.
  # key.tf's postcondition refuses any other shape. e = 65537 is "AQAB".
  rsa2048_spki_prefix = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
  # One JWK per generation, the signing one first: what strato_domain::identity::jwk::Jwk::from_spki_der makes
  # of the same DER (the infra_apply test compares them), kid its RFC 7638 thumbprint.
  jwks = [for g in concat([var.signing_key], [for k in var.keys : k if k != var.signing_key]) : {
    kty = "RSA"
    use = "sig"
    alg = "RS256"
    kid = local.kid[g]
    n   = local.n[g]
    e   = "AQAB"
  }]
  n = { for g, k in data.aws_kms_public_key.published :
    g => replace(replace(substr(k.public_key, 44, 342), "+", "-"), "/", "_")
  }
  kid = { for g, n in local.n :
    g => trimsuffix(replace(replace(base64sha256("{\"e\":\"AQAB\",\"kty\":\"RSA\",\"n\":\"${n}\"}"), "+", "-"), "/", "_"), "=")
  }

  # strato_domain::identity::jwk::discovery, field for field (the infra_apply test compares them).
  discovery = {
    issuer                                = local.issuer
    jwks_uri                              = "${local.issuer}/.well-known/jwks.json"
    response_types_supported              = ["id_token"]
    subject_types_supported               = ["public"]
    id_token_signing_alg_values_supported = ["RS256"]
    claims_supported = [
      "iss", "sub", "aud", "iat", "nbf", "exp", "jti",
      "strato_tenant", "strato_cluster", "strato_operation", "strato_stage",
    ]
    scopes_supported = ["openid"]
  }
}

# ---- bucket ----------------------------------------------------------------------------------------------

resource "aws_s3_bucket" "issuer" {
  #checkov:skip=CKV_AWS_18:Two public documents written by Terraform, read only through CloudFront (OAC).
  #checkov:skip=CKV_AWS_21:The documents are rebuilt from the keys at every apply: versions would keep retired keys.
  #checkov:skip=CKV_AWS_144:Two documents rebuilt from the keys: nothing to replicate.
  #checkov:skip=CKV_AWS_145:SSE-S3: the documents are public keys; CloudFront (OAC) reads them without a key policy.
  #checkov:skip=CKV2_AWS_61:The two objects are replaced by the apply that writes them.
  #checkov:skip=CKV2_AWS_62:Nothing consumes the bucket's events.
  bucket        = "${var.prefix}-oidc"
  force_destroy = var.force_destroy_bucket
}

resource "aws_s3_bucket_public_access_block" "issuer" {
  bucket                  = aws_s3_bucket.issuer.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

# TLS only; this distribution alone (OAC) reads objects and lists the bucket (a missing path is a 404).
# Applied after the documents' first upload: an emulator reached over plain HTTP (moto, the apply test)
# enforces the TLS-only statement; in AWS the provider always writes over HTTPS.
resource "aws_s3_bucket_policy" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "TlsOnly"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.issuer.arn, "${aws_s3_bucket.issuer.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "CloudFrontReadsObjects"
        Effect    = "Allow"
        Principal = { Service = "cloudfront.amazonaws.com" }
        Action    = "s3:GetObject"
        Resource  = "${aws_s3_bucket.issuer.arn}/*"
        Condition = { StringEquals = { "AWS:SourceArn" = aws_cloudfront_distribution.issuer.arn } }
      },
      {
        Sid       = "CloudFrontListsBucket"
        Effect    = "Allow"
        Principal = { Service = "cloudfront.amazonaws.com" }
        Action    = "s3:ListBucket"
        Resource  = aws_s3_bucket.issuer.arn
        Condition = { StringEquals = { "AWS:SourceArn" = aws_cloudfront_distribution.issuer.arn } }
      },
    ]
  })

  depends_on = [aws_s3_bucket_public_access_block.issuer, aws_s3_object.discovery, aws_s3_object.jwks]
}

# ---- the two documents -----------------------------------------------------------------------------------

resource "aws_s3_object" "discovery" {
  bucket        = aws_s3_bucket.issuer.id
  key           = ".well-known/openid-configuration"
  content_type  = "application/json"
  cache_control = "public, max-age=${var.cache_max_age_secs}"
  content       = jsonencode(local.discovery)

  depends_on = [aws_s3_bucket_ownership_controls.issuer, aws_s3_bucket_server_side_encryption_configuration.issuer]
}

resource "aws_s3_object" "jwks" {
  bucket        = aws_s3_bucket.issuer.id
  key           = ".well-known/jwks.json"
  content_type  = "application/json"
  cache_control = "public, max-age=${var.cache_max_age_secs}"
  content       = jsonencode({ keys = local.jwks })

  depends_on = [aws_s3_bucket_ownership_controls.issuer, aws_s3_bucket_server_side_encryption_configuration.issuer]
}

# ---- CloudFront ------------------------------------------------------------------------------------------

resource "aws_cloudfront_origin_access_control" "issuer" {
  name                              = "${var.prefix}-oidc"
  description                       = "Strato OIDC issuer documents"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

resource "aws_cloudfront_distribution" "issuer" {
  #checkov:skip=CKV_AWS_86:Two public, static documents; who fetched a JWKS says nothing an operator acts on (standard logs need an ACL-enabled bucket).
  #checkov:skip=CKV_AWS_310:One origin, the bucket in Strato's one region.
  #checkov:skip=CKV_AWS_374:Clouds fetch the documents from wherever their verifiers run.
  #checkov:skip=CKV2_AWS_47:The web ACL is the operator's (waf_web_acl_arn); its managed rule groups are chosen there.
  #checkov:skip=CKV_AWS_68:A WAF web ACL is optional (waf_web_acl_arn): the documents are public keys, cached, read-only.
  #checkov:skip=CKV_AWS_305:No root object: the issuer serves its two /.well-known documents only.
  #checkov:skip=CKV_AWS_174:TLS 1.2 is the minimum with the operator's certificate; CloudFront's default *.cloudfront.net certificate cannot raise it.
  #checkov:skip=CKV2_AWS_32:AWS's managed SecurityHeadersPolicy is attached by its fixed id (response_headers_policy_id); checkov looks for a policy resource of this configuration.
  #checkov:skip=CKV2_AWS_42:The operator's certificate is optional (certificate_arn); without it the issuer is the *.cloudfront.net name.
  enabled         = true
  comment         = "${var.prefix} Strato OIDC issuer"
  http_version    = "http2and3"
  is_ipv6_enabled = true
  price_class     = var.price_class
  aliases         = var.aliases
  web_acl_id      = var.waf_web_acl_arn

  origin {
    origin_id                = local.origin
    domain_name              = aws_s3_bucket.issuer.bucket_regional_domain_name
    origin_access_control_id = aws_cloudfront_origin_access_control.issuer.id
  }

  # Read-only and cached: the objects' max-age decides (CachingOptimized honours it).
  default_cache_behavior {
    target_origin_id           = local.origin
    viewer_protocol_policy     = "https-only"
    allowed_methods            = ["GET", "HEAD"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = local.caching_optimized
    response_headers_policy_id = local.security_headers_policy
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    cloudfront_default_certificate = var.certificate_arn == null
    acm_certificate_arn            = var.certificate_arn
    ssl_support_method             = var.certificate_arn == null ? null : "sni-only"
    minimum_protocol_version       = var.certificate_arn == null ? "TLSv1" : "TLSv1.2_2021"
  }
}
