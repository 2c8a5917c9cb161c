//! The one definition of Strato's AWS resources: tables (keys, indexes, TTL), queues (FIFO or not, DLQs) and
//! buckets. Tests, devstack and the `infra/` check all read these definitions; nothing else names a resource.

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDef {
    pub name: &'static str,
    pub pk: &'static str,
    pub sk: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    pub logical: &'static str,
    pub pk: &'static str,
    pub sk: Option<&'static str>,
    pub indexes: &'static [IndexDef],
    /// Attribute holding an epoch-seconds expiry. Code still compares it with now: TTL deletion lags.
    pub ttl: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueDef {
    pub logical: &'static str,
    pub fifo: bool,
    pub visibility_timeout_secs: u32,
    /// Deliveries before a message moves to the queue's DLQ.
    pub max_receive_count: u32,
    /// FIFO high-throughput mode: deduplication and the throughput quota per message group rather than
    /// per queue (SQS's 300 sends/s per queue would otherwise cap every operation's live logs together).
    pub high_throughput: bool,
}

impl QueueDef {
    /// How long the queue's consumer may run per batch: below the visibility timeout, so a batch never
    /// becomes visible (and is delivered again) while its first delivery is still being processed. Lambda
    /// stops the function at this timeout; devstack does the same.
    pub const fn consumer_timeout_secs(&self) -> u32 {
        self.visibility_timeout_secs * 5 / 6
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketDef {
    pub logical: &'static str,
    pub versioned: bool,
    /// Default encryption with Strato's customer-managed KMS key ([`Names::kms_alias`]) and bucket keys, rather
    /// than the S3-managed key (in AWS; the moto test bed keeps SSE-S3).
    pub kms: bool,
    /// What the bucket's lifecycle rule expires.
    pub expires: Expiry,
}

/// A bucket's lifecycle rule (`infra/modules/data`, days configurable there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    Never,
    /// Replaced versions, `state_retention_days` after they stop being current.
    NoncurrentVersions,
    /// Objects, `artifacts_retention_days` after they are written.
    Objects,
}

/// All key attributes are strings (ids, timestamps in RFC 3339, state names).
pub const TABLES: &[TableDef] = &[
    TableDef {
        logical: "clusters",
        pk: "tenant_id",
        sk: Some("cluster_id"),
        indexes: &[
            // Drift scheduling: ACTIVE clusters ordered by when their next check is due (no Scan).
            IndexDef {
                name: "by_state",
                pk: "state",
                sk: Some("next_drift_check_at"),
            },
            // Lookup by id alone (ECS events and the agent API know no tenant).
            IndexDef {
                name: "by_cluster_id",
                pk: "cluster_id",
                sk: None,
            },
            IndexDef {
                name: "by_agent_token",
                pk: "agent_token_hash",
                sk: None,
            },
            // Expiry: sparse (`expiry_bucket` is set only on clusters with an expiry that are not being
            // deleted), ordered by expiry time, so the scheduler finds due clusters with a Query.
            IndexDef {
                name: "by_expiry",
                pk: "expiry_bucket",
                sk: Some("expires_at"),
            },
            // Silent agents: sparse (`agent_watch` is set only while a registered agent is expected to
            // report and its cluster is not marked silent yet), ordered by the agent's last report.
            IndexDef {
                name: "by_agent_seen",
                pk: "agent_watch",
                sk: Some("agent_last_seen"),
            },
        ],
        ttl: None,
    },
    TableDef {
        logical: "operations",
        pk: "operation_id",
        sk: None,
        indexes: &[
            IndexDef {
                name: "by_cluster",
                pk: "cluster_id",
                sk: Some("created_at"),
            },
            // Sparse: `open_status` is set only while an operation is not terminal. The sweeper finds
            // undispatched and stuck operations here.
            IndexDef {
                name: "open",
                pk: "open_status",
                sk: Some("updated_at"),
            },
            // Sparse too: `open_cluster` (the cluster id) is set only while an operation is not terminal.
            // Every decision about one cluster reads what is open here, never the cluster's whole history.
            IndexDef {
                name: "open_by_cluster",
                pk: "open_cluster",
                sk: Some("created_at"),
            },
        ],
        // Finished operations expire (`retain_until`, set when an operation ends).
        ttl: Some("retain_until"),
    },
    // Cluster locks with fencing tokens, tenant concurrency counters.
    TableDef {
        logical: "locks",
        pk: "lock_id",
        sk: None,
        indexes: &[],
        ttl: None,
    },
    TableDef {
        logical: "idempotency",
        pk: "idempotency_key",
        sk: None,
        indexes: &[],
        ttl: Some("expires_at"),
    },
    // WebSocket connections (pk = conn#id) and subscriptions (pk = op#id, sk = conn#id).
    TableDef {
        logical: "connections",
        pk: "pk",
        sk: Some("sk"),
        // Connection items only (sparse): the sweeper finds those past API Gateway's 2 h limit with a Query.
        indexes: &[IndexDef {
            name: "by_expiry",
            pk: "expiry_bucket",
            sk: Some("expires_on"),
        }],
        ttl: Some("expires_at"),
    },
    // Terraform's own S3-backend lock table; the key name is fixed by Terraform.
    TableDef {
        logical: "tf-locks",
        pk: "LockID",
        sk: None,
        indexes: &[],
        ttl: None,
    },
    TableDef {
        logical: "templates",
        pk: "name",
        sk: Some("version"),
        indexes: &[],
        ttl: None,
    },
    TableDef {
        logical: "tenants",
        pk: "tenant_id",
        sk: None,
        indexes: &[],
        ttl: None,
    },
    // The audit log, append-only (IAM grants PutItem and Query only). `entry_id` = time#uuid sorts by time;
    // the indexes' keys are `tenant#cluster` and `tenant#principal`, so each filter is a Query of one tenant.
    TableDef {
        logical: "audit",
        pk: "tenant_id",
        sk: Some("entry_id"),
        indexes: &[
            IndexDef {
                name: "by_cluster",
                pk: "cluster_key",
                sk: Some("entry_id"),
            },
            IndexDef {
                name: "by_actor",
                pk: "actor_key",
                sk: Some("entry_id"),
            },
        ],
        ttl: Some("expires_at"),
    },
];

pub const QUEUES: &[QueueDef] = &[
    // FIFO grouped by cluster id: one cluster's jobs stay in order.
    QueueDef {
        logical: "jobs",
        fifo: true,
        visibility_timeout_secs: 60,
        max_receive_count: 5,
        high_throughput: false,
    },
    QueueDef {
        logical: "events",
        fifo: false,
        visibility_timeout_secs: 60,
        max_receive_count: 5,
        high_throughput: false,
    },
    // FIFO grouped by operation: one operation's frames reach the fan-out in order however many
    // invocations run, and a batch holds consecutive flushes to merge. High-throughput mode in infra/.
    QueueDef {
        logical: "logs",
        fifo: true,
        visibility_timeout_secs: 30,
        max_receive_count: 3,
        high_throughput: true,
    },
    // Tenant webhook notifications, out of the state machine's path: one POST attempt per delivery, so
    // `max_receive_count` is the number of attempts; the last one records the failure on the operation.
    QueueDef {
        logical: "webhooks",
        fifo: false,
        visibility_timeout_secs: 60,
        max_receive_count: 5,
        high_throughput: false,
    },
    // A rollout's inputs (a member's ended run, the scheduler's tick), drained by the api function, which
    // starts the runs they decide: FIFO grouped by rollout, so one rollout's inputs are applied in order.
    // 35 s: the api's 29 s timeout is its consumer timeout (5/6 of it).
    QueueDef {
        logical: "rollouts",
        fifo: true,
        visibility_timeout_secs: 35,
        max_receive_count: 5,
        high_throughput: false,
    },
];

pub const BUCKETS: &[BucketDef] = &[
    BucketDef {
        logical: "templates",
        versioned: true,
        kms: false,
        expires: Expiry::Never,
    },
    // Terraform state: versioned so a corrupted state can be restored; replaced versions expire.
    BucketDef {
        logical: "state",
        versioned: true,
        kms: true,
        expires: Expiry::NoncurrentVersions,
    },
    // Log archives, debug logs, spilled events (never saved plans).
    BucketDef {
        logical: "artifacts",
        versioned: false,
        kms: true,
        expires: Expiry::Objects,
    },
];

pub fn table(logical: &str) -> &'static TableDef {
    TABLES
        .iter()
        .find(|t| t.logical == logical)
        .unwrap_or_else(|| panic!("no table named {logical}"))
}

pub fn queue(logical: &str) -> &'static QueueDef {
    QUEUES
        .iter()
        .find(|q| q.logical == logical)
        .unwrap_or_else(|| panic!("no queue named {logical}"))
}

/// Physical names: `{prefix}-{logical}`, FIFO queues end in `.fifo`, DLQs add `-dlq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    prefix: String,
}

impl Names {
    /// The prefix is used in bucket names, so it is kept to lowercase letters, digits and '-'.
    pub fn new(prefix: impl Into<String>) -> Result<Self, Error> {
        let prefix = prefix.into();
        let ok = (2..=30).contains(&prefix.len())
            && prefix.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if ok {
            Ok(Self { prefix })
        } else {
            Err(Error::Config {
                what: "resource prefix",
                reason: format!("'{prefix}' must be 2-30 of a-z 0-9 -"),
            })
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn table(&self, logical: &str) -> String {
        format!("{}-{}", self.prefix, table(logical).logical)
    }

    pub fn queue(&self, logical: &str) -> String {
        let q = queue(logical);
        if q.fifo {
            format!("{}-{}.fifo", self.prefix, q.logical)
        } else {
            format!("{}-{}", self.prefix, q.logical)
        }
    }

    pub fn dlq(&self, logical: &str) -> String {
        let q = queue(logical);
        if q.fifo {
            format!("{}-{}-dlq.fifo", self.prefix, q.logical)
        } else {
            format!("{}-{}-dlq", self.prefix, q.logical)
        }
    }

    /// Strato's customer-managed KMS key (`infra/modules/data`): the data key of sealed values at rest and
    /// the buckets' default encryption. Functions and the runner name it by this alias.
    pub fn kms_alias(&self) -> String {
        format!("alias/{}-data", self.prefix)
    }

    /// Strato's token-signing key (`infra/modules/data`, RSA_2048 SIGN_VERIFY): it signs the runs' OIDC
    /// identity tokens; only the dispatcher may `Sign` with it, the api reads its public key for the JWKS.
    pub fn oidc_key_alias(&self) -> String {
        format!("alias/{}-oidc", self.prefix)
    }

    pub fn bucket(&self, logical: &str) -> String {
        let b = BUCKETS
            .iter()
            .find(|b| b.logical == logical)
            .unwrap_or_else(|| panic!("no bucket named {logical}"));
        format!("{}-{}", self.prefix, b.logical)
    }
}

mod create;
pub use create::{create_all, create_bucket, create_kms_key, create_signing_key};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_one_rule() {
        let n = Names::new("strato-dev").unwrap();
        assert_eq!(n.table("clusters"), "strato-dev-clusters");
        assert_eq!(n.queue("jobs"), "strato-dev-jobs.fifo");
        assert_eq!(n.dlq("jobs"), "strato-dev-jobs-dlq.fifo");
        assert_eq!(n.queue("events"), "strato-dev-events");
        assert_eq!(n.dlq("logs"), "strato-dev-logs-dlq.fifo");
        assert_eq!(n.dlq("webhooks"), "strato-dev-webhooks-dlq");
        assert_eq!(n.bucket("state"), "strato-dev-state");
        assert!(Names::new("Strato").is_err());
        assert!(Names::new("x").is_err());
    }

    #[test]
    fn definitions_are_consistent() {
        for t in TABLES {
            let mut index_names: Vec<_> = t.indexes.iter().map(|i| i.name).collect();
            index_names.dedup();
            assert_eq!(index_names.len(), t.indexes.len(), "{}", t.logical);
            assert!(t.logical.len() >= 3);
        }
        for q in QUEUES {
            assert!(
                q.max_receive_count >= 2,
                "every queue has a DLQ that only takes repeat failures"
            );
        }
        assert!(BUCKETS.iter().any(|b| b.logical == "state" && b.versioned));
    }
}
