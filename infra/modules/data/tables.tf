# DynamoDB tables, exactly as strato_aws::resources::TABLES defines them (the infra_apply test compares the
# applied tables with it). All keys are strings; on-demand billing; point-in-time recovery on; encrypted with Strato's data key.
locals {
  tables = {
    # Clusters per tenant; by_state drives drift checks, by_cluster_id serves ECS events and the agent API,
    # by_expiry (sparse) finds clusters due to expire, by_agent_seen (sparse) clusters whose agent went silent.
    clusters = {
      hash_key  = "tenant_id"
      range_key = "cluster_id"
      indexes = {
        by_state       = { hash_key = "state", range_key = "next_drift_check_at" }
        by_cluster_id  = { hash_key = "cluster_id", range_key = null }
        by_agent_token = { hash_key = "agent_token_hash", range_key = null }
        by_expiry      = { hash_key = "expiry_bucket", range_key = "expires_at" }
        by_agent_seen  = { hash_key = "agent_watch", range_key = "agent_last_seen" }
      }
      ttl = null
    }
    # Operations; `open` and `open_by_cluster` are sparse (only non-terminal operations): the first feeds the
    # sweeper, the second every decision about one cluster. Finished operations carry `retain_until` (TTL):
    # DynamoDB deletes them after the functions' STRATO_OPERATION_RETENTION_DAYS.
    operations = {
      hash_key  = "operation_id"
      range_key = null
      indexes = {
        by_cluster      = { hash_key = "cluster_id", range_key = "created_at" }
        open            = { hash_key = "open_status", range_key = "updated_at" }
        open_by_cluster = { hash_key = "open_cluster", range_key = "created_at" }
      }
      ttl = "retain_until"
    }
    # Cluster locks with fencing tokens, tenant concurrency slots, name reservations.
    locks = { hash_key = "lock_id", range_key = null, indexes = {}, ttl = null }
    # Idempotency-Key replays (24 h). Code compares expires_at with now itself: TTL deletion lags up to 48 h.
    idempotency = { hash_key = "idempotency_key", range_key = null, indexes = {}, ttl = "expires_at" }
    # WebSocket connections (conn#id) and subscriptions (op#id / conn#id). by_expiry is sparse: only
    # connection items carry expiry_bucket; the sweeper Queries it for connections past 2 h.
    connections = {
      hash_key  = "pk"
      range_key = "sk"
      indexes   = { by_expiry = { hash_key = "expiry_bucket", range_key = "expires_on" } }
      ttl       = "expires_at"
    }
    # Terraform's S3-backend lock table (the key name is fixed by Terraform).
    tf-locks = { hash_key = "LockID", range_key = null, indexes = {}, ttl = null }
    # Published template versions.
    templates = { hash_key = "name", range_key = "version", indexes = {}, ttl = null }
    # Tenant quotas, counters and budgets.
    tenants = { hash_key = "tenant_id", range_key = null, indexes = {}, ttl = null }
    # The audit log, append-only: functions may PutItem (and the api Query), nothing may update or delete
    # (infra/modules/functions/iam.tf). entry_id = time#uuid; the indexes serve ?cluster= and ?actor=.
    audit = {
      hash_key  = "tenant_id"
      range_key = "entry_id"
      indexes = {
        by_cluster = { hash_key = "cluster_key", range_key = "entry_id" }
        by_actor   = { hash_key = "actor_key", range_key = "entry_id" }
      }
      ttl = "expires_at"
    }
  }

  # Every key attribute of a table and its indexes (DynamoDB refuses definitions of anything else).
  table_attributes = { for name, t in local.tables : name => sort(distinct(compact(concat(
    [t.hash_key, t.range_key],
    flatten([for i in values(t.indexes) : [i.hash_key, i.range_key]]),
  )))) }
}

resource "aws_dynamodb_table" "this" {
  for_each = local.tables

  name         = "${var.prefix}-${each.key}"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = each.value.hash_key
  range_key    = each.value.range_key

  dynamic "attribute" {
    for_each = local.table_attributes[each.key]
    content {
      name = attribute.value
      type = "S"
    }
  }

  dynamic "global_secondary_index" {
    for_each = each.value.indexes
    content {
      name            = global_secondary_index.key
      hash_key        = global_secondary_index.value.hash_key
      range_key       = global_secondary_index.value.range_key
      projection_type = "ALL"
    }
  }

  dynamic "ttl" {
    for_each = each.value.ttl == null ? [] : [each.value.ttl]
    content {
      attribute_name = ttl.value
      enabled        = true
    }
  }

  point_in_time_recovery {
    enabled = true
  }

  # Strato's own key rather than an AWS-owned one: its use is logged and governed by the key policy.
  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.data.arn
  }
}
