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
