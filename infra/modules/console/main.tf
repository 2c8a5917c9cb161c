# The web console: the built single-page app (console/dist) in a private bucket, served by CloudFront through
# Origin Access Control, with the HTTP API behind the same distribution at /v1/* so the console and the API
# share one origin (no CORS). console.json tells the console where the WebSocket API is and how users log in.

locals {
  # CloudFront's managed policies (fixed ids, the same in every account; no lookup needed at plan time).
  # https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/using-managed-cache-policies.html
  managed_cache_policy = {
    caching_optimized = "658327ea-f89d-4fab-a63d-7e88639e58f6" # CachingOptimized: honours the objects' Cache-Control
    caching_disabled  = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" # CachingDisabled
  }
  # AllViewerExceptHostHeader: every viewer header (Authorization, Idempotency-Key, If-Match…), cookie and query
  # string, but not Host (API Gateway answers 403 to a Host that is not its own).
  managed_origin_request_policy_all_viewer_except_host = "b689b0a8-53d0-40ab-baf2-68738e2966ac"

  s3_origin  = "console-bucket"
  api_origin = "http-api"

  api_host    = regex("^https://([^/]+)$", var.http_api_endpoint)[0]
  ws_host     = regex("^[a-z]+://([^/]+)", var.websocket_url)[0]
  issuer_host = regex("^https://([^/]+)", var.oidc_issuer)[0]

  # The console's own scripts and styles only; the API on the same origin, the WebSocket API and the identity
  # provider (discovery, token endpoint) for fetch/WebSocket; no framing, no <base>, forms to itself.
  csp = join("; ", [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    join(" ", concat(["connect-src 'self'", "wss://${local.ws_host}", "https://${local.issuer_host}"], var.connect_src_extra)),
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ])

  # Every file of the build but a console.json of its own (the deployment writes that one).
  files = setsubtract(fileset(var.dist_dir, "**"), ["console.json"])

  content_types = {
    html        = "text/html; charset=utf-8"
    js          = "text/javascript; charset=utf-8"
    mjs         = "text/javascript; charset=utf-8"
    css         = "text/css; charset=utf-8"
    json        = "application/json"
    map         = "application/json"
    webmanifest = "application/manifest+json"
    svg         = "image/svg+xml"
    png         = "image/png"
    jpg         = "image/jpeg"
    jpeg        = "image/jpeg"
    gif         = "image/gif"
    webp        = "image/webp"
    avif        = "image/avif"
    ico         = "image/x-icon"
    woff        = "font/woff"
    woff2       = "font/woff2"
    ttf         = "font/ttf"
    otf         = "font/otf"
    wasm        = "application/wasm"
    txt         = "text/plain; charset=utf-8"
    xml         = "application/xml"
  }

  # Vite names assets/* by content hash: cached for a year, never revalidated. Everything else (index.html,
  # which names the assets, favicon…) is revalidated on every load.
  immutable  = "public, max-age=31536000, immutable"
  revalidate = "no-cache"
}

# ---- bucket ----------------------------------------------------------------------------------------------

resource "aws_s3_bucket" "console" {
  #checkov:skip=CKV_AWS_18:Public static files of the build, read only through CloudFront (OAC); each build is an apply.
  #checkov:skip=CKV_AWS_21:A new build is a new apply: versions would keep stale assets.
  #checkov:skip=CKV_AWS_144:Static files rebuilt from the repository: nothing to replicate.
  #checkov:skip=CKV_AWS_145:SSE-S3: the files are the public console; CloudFront (OAC) reads them without a key policy.
  #checkov:skip=CKV2_AWS_61:Objects are replaced and deleted by the apply that uploads a build.
  #checkov:skip=CKV2_AWS_62:Nothing consumes the bucket's events.
  bucket        = "${var.prefix}-console"
  force_destroy = var.force_destroy_bucket
}

resource "aws_s3_bucket_public_access_block" "console" {
  bucket                  = aws_s3_bucket.console.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "console" {
  bucket = aws_s3_bucket.console.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

# SSE-S3: CloudFront's OAC reads it without a KMS key policy (the files are public through CloudFront anyway).
resource "aws_s3_bucket_server_side_encryption_configuration" "console" {
  bucket = aws_s3_bucket.console.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

# TLS only; CloudFront (this distribution alone, through OAC) may read objects and list the bucket, so a
# missing file is a 404 rather than a 403. Applied after the public access block (S3 refuses concurrent changes).
resource "aws_s3_bucket_policy" "console" {
  bucket = aws_s3_bucket.console.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "TlsOnly"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.console.arn, "${aws_s3_bucket.console.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "CloudFrontReadsObjects"
        Effect    = "Allow"
        Principal = { Service = "cloudfront.amazonaws.com" }
        Action    = "s3:GetObject"
        Resource  = "${aws_s3_bucket.console.arn}/*"
        Condition = { StringEquals = { "AWS:SourceArn" = aws_cloudfront_distribution.console.arn } }
      },
      {
        Sid       = "CloudFrontListsBucket"
        Effect    = "Allow"
        Principal = { Service = "cloudfront.amazonaws.com" }
        Action    = "s3:ListBucket"
        Resource  = aws_s3_bucket.console.arn
        Condition = { StringEquals = { "AWS:SourceArn" = aws_cloudfront_distribution.console.arn } }
      },
    ]
  })

  depends_on = [aws_s3_bucket_public_access_block.console]
}

# ---- files -----------------------------------------------------------------------------------------------

resource "aws_s3_object" "file" {
  for_each = local.files

  bucket        = aws_s3_bucket.console.id
  key           = each.value
  source        = "${var.dist_dir}/${each.value}"
  source_hash   = filemd5("${var.dist_dir}/${each.value}")
  content_type  = lookup(local.content_types, lower(reverse(split(".", each.value))[0]), "application/octet-stream")
  cache_control = startswith(each.value, "assets/") ? local.immutable : local.revalidate

  depends_on = [aws_s3_bucket_ownership_controls.console, aws_s3_bucket_server_side_encryption_configuration.console]
}

# Where the WebSocket API is and how users log in (the console fetches it at start; devstack serves its own).
resource "aws_s3_object" "config" {
  bucket        = aws_s3_bucket.console.id
  key           = "console.json"
  content_type  = "application/json"
  cache_control = local.revalidate
  content = jsonencode({
    ws_endpoint = var.websocket_url
    auth = {
      kind      = "oidc"
      issuer    = var.oidc_issuer
      client_id = var.oidc_client_id
      scope     = "openid"
    }
  })

  depends_on = [aws_s3_bucket_ownership_controls.console, aws_s3_bucket_server_side_encryption_configuration.console]
}

# ---- CloudFront ------------------------------------------------------------------------------------------

resource "aws_cloudfront_origin_access_control" "console" {
  name                              = "${var.prefix}-console"
  description                       = "Strato console bucket"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

# The single-page app's routes: a path whose last segment has no extension (/clusters/abc) is the app's page.
# A viewer-request function on the console's behaviour only, not custom error responses: those apply to every
# origin of a distribution and would turn the API's own 403/404 answers into index.html.
resource "aws_cloudfront_function" "spa" {
  name    = "${var.prefix}-console-spa"
  runtime = "cloudfront-js-2.0"
  comment = "Strato console: app routes -> /index.html"
  publish = true
  code    = <<-JS
    function handler(event) {
      var request = event.request;
      var last = request.uri.substring(request.uri.lastIndexOf('/') + 1);
      if (last.indexOf('.') === -1) {
        request.uri = '/index.html';
      }
      return request;
    }
  JS
}

resource "aws_cloudfront_response_headers_policy" "console" {
  #checkov:skip=CKV_AWS_259:HSTS is sent (2 years, subdomains) without preload: entering a domain in the browsers' preload list is the domain owner's decision, and *.cloudfront.net is not ours.
  name    = "${var.prefix}-console"
  comment = "Strato console: CSP, HSTS, nosniff, no referrer, no framing"

  security_headers_config {
    content_security_policy {
      content_security_policy = local.csp
      override                = true
    }
    strict_transport_security {
      access_control_max_age_sec = 63072000
      include_subdomains         = true
      override                   = true
    }
    content_type_options {
      override = true
    }
    referrer_policy {
      referrer_policy = "no-referrer"
      override        = true
    }
    frame_options {
      frame_option = "DENY"
      override     = true
    }
  }
}

resource "aws_cloudfront_distribution" "console" {
  #checkov:skip=CKV_AWS_86:The API's requests are in the HTTP API's access logs; the rest are static files (standard logs need an ACL-enabled bucket).
  #checkov:skip=CKV_AWS_310:One origin per path (the bucket, the HTTP API), both regional services of the one region Strato runs in.
  #checkov:skip=CKV_AWS_374:Users are wherever tenants are; a geo restriction belongs in the operator's WAF web ACL (waf_web_acl_arn).
  #checkov:skip=CKV2_AWS_47:The web ACL is the operator's (waf_web_acl_arn); its rules (AWSManagedRulesKnownBadInputsRuleSet included) are chosen there.
  enabled             = true
  comment             = "${var.prefix} Strato console and API"
  default_root_object = "index.html"
  http_version        = "http2and3"
  is_ipv6_enabled     = true
  price_class         = var.price_class
  aliases             = var.aliases
  # A WAF web ACL (WAFv2, CLOUDFRONT scope) the operator manages, in front of the console and /v1/*.
  web_acl_id = var.waf_web_acl_arn

  origin {
    origin_id                = local.s3_origin
    domain_name              = aws_s3_bucket.console.bucket_regional_domain_name
    origin_access_control_id = aws_cloudfront_origin_access_control.console.id
  }

  origin {
    origin_id   = local.api_origin
    domain_name = local.api_host

    custom_origin_config {
      http_port              = 80
      https_port             = 443
      origin_protocol_policy = "https-only"
      origin_ssl_protocols   = ["TLSv1.2"]
      origin_read_timeout    = 30
    }
  }

  default_cache_behavior {
    target_origin_id           = local.s3_origin
    viewer_protocol_policy     = "redirect-to-https"
    allowed_methods            = ["GET", "HEAD", "OPTIONS"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = local.managed_cache_policy.caching_optimized
    response_headers_policy_id = aws_cloudfront_response_headers_policy.console.id

    function_association {
      event_type   = "viewer-request"
      function_arn = aws_cloudfront_function.spa.arn
    }
  }

  # The tenants' API: every method, nothing cached, every header but Host and every query string forwarded.
  ordered_cache_behavior {
    path_pattern               = "/v1/*"
    target_origin_id           = local.api_origin
    viewer_protocol_policy     = "https-only"
    allowed_methods            = ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = local.managed_cache_policy.caching_disabled
    origin_request_policy_id   = local.managed_origin_request_policy_all_viewer_except_host
    response_headers_policy_id = aws_cloudfront_response_headers_policy.console.id
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  # With the operator's certificate (ACM, us-east-1) the console is served on its own names, SNI only, and
  # viewers need TLS 1.2 or later; without one CloudFront's *.cloudfront.net certificate decides (it cannot
  # set a minimum protocol: AWS keeps TLSv1 there for old clients).
  viewer_certificate {
    cloudfront_default_certificate = var.certificate_arn == null
    acm_certificate_arn            = var.certificate_arn
    ssl_support_method             = var.certificate_arn == null ? null : "sni-only"
    minimum_protocol_version       = var.certificate_arn == null ? "TLSv1" : "TLSv1.2_2021"
  }
}
