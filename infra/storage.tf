# DynamoDB tables and S3 buckets, exactly as strato_shared::resources defines them (tests/tests/infra_check.rs
# compares the two). All keys are strings; on-demand billing; point-in-time recovery on.

# Clusters per tenant; by_state drives drift checks, by_cluster_id serves ECS events and the agent API.
resource "aws_dynamodb_table" "clusters" {
  name         = "${var.prefix}-clusters"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "tenant_id"
  range_key    = "cluster_id"

  attribute {
    name = "agent_token_hash"
    type = "S"
  }

  attribute {
    name = "cluster_id"
    type = "S"
  }

  attribute {
    name = "next_drift_check_at"
    type = "S"
  }

  attribute {
    name = "state"
    type = "S"
  }

  attribute {
    name = "tenant_id"
    type = "S"
  }

  global_secondary_index {
    name            = "by_state"
    hash_key        = "state"
    range_key       = "next_drift_check_at"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "by_cluster_id"
    hash_key        = "cluster_id"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "by_agent_token"
    hash_key        = "agent_token_hash"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Operations; `open` is sparse (only non-terminal operations) and feeds the sweeper.
resource "aws_dynamodb_table" "operations" {
  name         = "${var.prefix}-operations"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "operation_id"

  attribute {
    name = "cluster_id"
    type = "S"
  }

  attribute {
    name = "created_at"
    type = "S"
  }

  attribute {
    name = "open_status"
    type = "S"
  }

  attribute {
    name = "operation_id"
    type = "S"
  }

  attribute {
    name = "updated_at"
    type = "S"
  }

  global_secondary_index {
    name            = "by_cluster"
    hash_key        = "cluster_id"
    range_key       = "created_at"
    projection_type = "ALL"
  }

  global_secondary_index {
    name            = "open"
    hash_key        = "open_status"
    range_key       = "updated_at"
    projection_type = "ALL"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Cluster locks with fencing tokens, tenant concurrency slots, name reservations.
resource "aws_dynamodb_table" "locks" {
  name         = "${var.prefix}-locks"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "lock_id"

  attribute {
    name = "lock_id"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Idempotency-Key replays (24 h).
resource "aws_dynamodb_table" "idempotency" {
  name         = "${var.prefix}-idempotency"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "idempotency_key"

  attribute {
    name = "idempotency_key"
    type = "S"
  }

  # Code compares expires_at with now itself: TTL deletion lags up to 48 h.
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

# WebSocket connections (conn#id) and subscriptions (op#id / conn#id).
resource "aws_dynamodb_table" "connections" {
  name         = "${var.prefix}-connections"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"
  range_key    = "sk"

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  attribute {
    name = "expiry_bucket"
    type = "S"
  }

  attribute {
    name = "expires_on"
    type = "S"
  }

  # Sparse: only connection items carry expiry_bucket; the sweeper Queries it for connections past 2 h.
  global_secondary_index {
    name            = "by_expiry"
    hash_key        = "expiry_bucket"
    range_key       = "expires_on"
    projection_type = "ALL"
  }

  # Code compares expires_at with now itself: TTL deletion lags up to 48 h.
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Terraform's S3-backend lock table (the key name is fixed by Terraform).
resource "aws_dynamodb_table" "tf_locks" {
  name         = "${var.prefix}-tf-locks"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "LockID"

  attribute {
    name = "LockID"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Published template versions.
resource "aws_dynamodb_table" "templates" {
  name         = "${var.prefix}-templates"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "name"
  range_key    = "version"

  attribute {
    name = "name"
    type = "S"
  }

  attribute {
    name = "version"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# Tenant quotas, counters and budgets.
resource "aws_dynamodb_table" "tenants" {
  name         = "${var.prefix}-tenants"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "tenant_id"

  attribute {
    name = "tenant_id"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }
}
# ---- Strato's data key ------------------------------------------------------------------------------------

# Customer-managed, rotated yearly: the state and artifacts buckets' default encryption, and the key-encryption
# key of sealed values in DynamoDB (sensitive variables, tenants' issued external ids: AES-256-GCM under a
# data key from GenerateDataKey, strato_domain::sealed). The code names it by its alias (Names::kms_alias).
# The default key policy: the account's IAM policies (iam.tf, runner.tf) decide who may use it.
resource "aws_kms_key" "data" {
  description             = "${var.prefix} data key (state, artifacts, sealed values)"
  enable_key_rotation     = true
  deletion_window_in_days = 30
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.prefix}-data"
  target_key_id = aws_kms_key.data.key_id
}

# ---- buckets ---------------------------------------------------------------------------------------------

# Published template bundles (immutable, sha256-verified).
resource "aws_s3_bucket" "templates" {
  bucket = "${var.prefix}-templates"

  versioning {
    enabled = true
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }
}

# Terraform state: versioned so a corrupted state can be restored (GET /v1/clusters/{id}/state-versions).
# Encrypted with Strato's key (bucket keys: one KMS call per bucket key, not per object). Replaced versions
# expire `state_retention_days` after they stop being current; after a successful DELETE the runner removes
# the cluster's current state, so all of it is gone that many days later.
resource "aws_s3_bucket" "state" {
  bucket = "${var.prefix}-state"

  versioning {
    enabled = true
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm     = "aws:kms"
        kms_master_key_id = aws_kms_key.data.arn
      }
      bucket_key_enabled = true
    }
  }

  lifecycle_rule {
    id      = "noncurrent-state"
    enabled = true

    noncurrent_version_expiration {
      days = var.state_retention_days
    }

    # The delete marker a DELETE's runner leaves goes once no version is left behind it.
    expiration {
      expired_object_delete_marker = true
    }

    abort_incomplete_multipart_upload_days = 7
  }
}

# Log archives, debug logs, spilled events (never saved plans: they hold every input). Expire after
# `artifacts_retention_days`.
resource "aws_s3_bucket" "artifacts" {
  bucket = "${var.prefix}-artifacts"

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm     = "aws:kms"
        kms_master_key_id = aws_kms_key.data.arn
      }
      bucket_key_enabled = true
    }
  }

  lifecycle_rule {
    id      = "expire-artifacts"
    enabled = true

    expiration {
      days = var.artifacts_retention_days
    }

    abort_incomplete_multipart_upload_days = 7
  }
}

resource "aws_s3_bucket_public_access_block" "all" {
  for_each = {
    templates = aws_s3_bucket.templates.id
    state     = aws_s3_bucket.state.id
    artifacts = aws_s3_bucket.artifacts.id
  }

  bucket                  = each.value
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# TLS only. Applied after the public access block: S3 refuses concurrent changes to one bucket's policy
# and its access block.
resource "aws_s3_bucket_policy" "tls_only" {
  for_each = {
    templates = aws_s3_bucket.templates
    state     = aws_s3_bucket.state
    artifacts = aws_s3_bucket.artifacts
  }

  bucket = each.value.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "TlsOnly"
      Effect    = "Deny"
      Principal = "*"
      Action    = "s3:*"
      Resource  = [each.value.arn, "${each.value.arn}/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })

  depends_on = [aws_s3_bucket_public_access_block.all]
}
