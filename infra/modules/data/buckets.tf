# S3 buckets, exactly as strato_aws::resources::BUCKETS defines them: public access blocked, TLS only,
# default encryption (Strato's key with bucket keys for state and artifacts), versioning and lifecycle.
locals {
  buckets = {
    # Published template bundles (immutable, sha256-verified).
    templates = { versioned = true, kms = false }
    # Terraform state: versioned so a corrupted state can be restored (GET /v1/clusters/{id}/state-versions).
    state = { versioned = true, kms = true }
    # Log archives, debug logs, spilled events (never saved plans: they hold every input).
    artifacts = { versioned = false, kms = true }
  }
}

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_18:The state bucket logs to the access-logs bucket (aws_s3_bucket_logging.state); templates (published bundles) and artifacts (Strato's own log archives) are written and read by Strato's roles only.
  #checkov:skip=CKV_AWS_21:templates and state are versioned (aws_s3_bucket_versioning.this, per bucket: checkov cannot resolve the for_each); artifacts expire after artifacts_retention_days by design.
  #checkov:skip=CKV_AWS_144:One region by design; state history is kept by versioning (restore API), not by replication.
  #checkov:skip=CKV_AWS_145:state and artifacts use Strato's key (aws_s3_bucket_server_side_encryption_configuration.this, per bucket: checkov cannot resolve the for_each); template bundles are not secret (SSE-S3).
  #checkov:skip=CKV_AWS_19:Every bucket has default encryption (SSE-KMS for state and artifacts, SSE-S3 for templates) in aws_s3_bucket_server_side_encryption_configuration.this, which checkov cannot resolve through the for_each.
  #checkov:skip=CKV2_AWS_61:templates keeps every published version (clusters pin them); state and artifacts have lifecycle rules (aws_s3_bucket_lifecycle_configuration.state / .artifacts).
  #checkov:skip=CKV2_AWS_62:Nothing consumes the buckets' events: Strato records its own writes.
  for_each = local.buckets

  bucket        = "${var.prefix}-${each.key}"
  force_destroy = var.force_destroy_buckets
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = { for k, b in local.buckets : k => b if b.versioned }

  bucket = aws_s3_bucket.this[each.key].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  for_each = local.buckets

  bucket = aws_s3_bucket.this[each.key].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = each.value.kms ? "aws:kms" : "AES256"
      kms_master_key_id = each.value.kms ? aws_kms_key.data.arn : null
    }
    # One KMS call per bucket key, not per object.
    bucket_key_enabled = each.value.kms
  }
}

# Replaced state versions expire `state_retention_days` after they stop being current; after a successful
# DELETE the runner removes the cluster's current state, so all of it is gone that many days later.
resource "aws_s3_bucket_lifecycle_configuration" "state" {
  bucket = aws_s3_bucket.this["state"].id

  rule {
    id     = "noncurrent-state"
    status = "Enabled"
    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.state_retention_days
    }

    # The delete marker a DELETE's runner leaves goes once no version is left behind it.
    expiration {
      expired_object_delete_marker = true
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_lifecycle_configuration" "artifacts" {
  bucket = aws_s3_bucket.this["artifacts"].id

  rule {
    id     = "expire-artifacts"
    status = "Enabled"
    filter {}

    expiration {
      days = var.artifacts_retention_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each = local.buckets

  bucket                  = aws_s3_bucket.this[each.key].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "this" {
  for_each = local.buckets

  bucket = aws_s3_bucket.this[each.key].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

# TLS only. Applied after the public access block: S3 refuses concurrent changes to one bucket's policy and
# its access block.
resource "aws_s3_bucket_policy" "tls_only" {
  for_each = local.buckets

  bucket = aws_s3_bucket.this[each.key].id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "TlsOnly"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = [aws_s3_bucket.this[each.key].arn, "${aws_s3_bucket.this[each.key].arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })

  depends_on = [aws_s3_bucket_public_access_block.this]
}

# ---- server access logs of the state bucket ------------------------------------------------------------
# Who read, wrote or deleted which tenant's state, when (S3 server access logging). Not one of Strato's data
# buckets (the code never reads it). SSE-S3: S3's log delivery cannot write to an SSE-KMS bucket.
resource "aws_s3_bucket" "access_logs" {
  #checkov:skip=CKV_AWS_18:The access-logs bucket itself: logging it would log the log delivery.
  #checkov:skip=CKV_AWS_21:Log objects are written once and expire after access_log_retention_days.
  #checkov:skip=CKV_AWS_144:One region by design.
  #checkov:skip=CKV_AWS_145:S3 server access log delivery cannot write to an SSE-KMS bucket (SSE-S3 only).
  #checkov:skip=CKV2_AWS_62:Nothing consumes the bucket's events.
  bucket        = "${var.prefix}-access-logs"
  force_destroy = var.force_destroy_buckets
}

resource "aws_s3_bucket_server_side_encryption_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id

  rule {
    id     = "expire-access-logs"
    status = "Enabled"
    filter {}

    expiration {
      days = var.access_log_retention_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

resource "aws_s3_bucket_public_access_block" "access_logs" {
  bucket                  = aws_s3_bucket.access_logs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

# TLS only; S3's log delivery writes the state bucket's logs (ACLs are disabled: the policy grants it). The
# delivery statement comes first: moto's PutBucketLogging fails (500) on a statement before it whose
# Principal is "*".
resource "aws_s3_bucket_policy" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "StateBucketLogDelivery"
        Effect    = "Allow"
        Principal = { Service = "logging.s3.amazonaws.com" }
        Action    = "s3:PutObject"
        Resource  = "${aws_s3_bucket.access_logs.arn}/state/*"
        Condition = {
          ArnLike      = { "aws:SourceArn" = aws_s3_bucket.this["state"].arn }
          StringEquals = { "aws:SourceAccount" = local.account }
        }
      },
      {
        Sid       = "TlsOnly"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.access_logs.arn, "${aws_s3_bucket.access_logs.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
    ]
  })

  depends_on = [aws_s3_bucket_public_access_block.access_logs]
}

resource "aws_s3_bucket_logging" "state" {
  bucket        = aws_s3_bucket.this["state"].id
  target_bucket = aws_s3_bucket.access_logs.id
  target_prefix = "state/"

  depends_on = [aws_s3_bucket_policy.access_logs]
}
