//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, COORDINATION, QUEUE_URLS, Resource::*, call, concat, total};

/// The store's and the queues' shared pieces, then this function's own calls.
pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);

const PARTS: &[&[AwsCall]] = &[COORDINATION, QUEUE_URLS, OWN];

const OWN: &[AwsCall] = &[
    call("dynamodb:Query", Index("operations", "by_cluster")),
    // Drift checks: ACTIVE clusters due (a Query, never a Scan); the sweeper: every tenant's slots (one Scan
    // of the small locks table, filtered to `slots#` items).
    call("dynamodb:Query", Index("clusters", "by_state")),
    call("dynamodb:Scan", Table("locks")),
    call("sqs:SendMessage", Queue("events")),
    // Expiry: clusters due (the sparse by_expiry index, never a Scan); their cluster.expiring events.
    call("dynamodb:Query", Index("clusters", "by_expiry")),
    call("sqs:SendMessage", Queue("webhooks")),
    // Silent cluster agents: the sparse by_agent_seen index (never a Scan); their cluster.health_changed.
    call("dynamodb:Query", Index("clusters", "by_agent_seen")),
    // Rollouts whose soak ended (the Scan of locks above, filtered to due rollouts): their ticks.
    call("sqs:SendMessage", Queue("rollouts")),
    // WebSocket connections past API Gateway's 2 h limit, with their subscriptions.
    call("dynamodb:Query", Index("connections", "by_expiry")),
    call("dynamodb:Query", Table("connections")),
    call("dynamodb:BatchWriteItem", Table("connections")),
    call("dynamodb:DeleteItem", Table("connections")),
    // Terraform state locks left by dead runners: found by a Scan, re-read, deleted (lock items only).
    call("dynamodb:Scan", Table("tf-locks")),
    call("dynamodb:GetItem", Table("tf-locks")),
    call(
        "dynamodb:DeleteItem",
        TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*.tfstate",
        },
    ),
    // Whether a runner task still runs.
    call("ecs:DescribeTasks", RunnerCluster),
    call("ecs:ListTasks", RunnerCluster),
    // The audit log: what this function does on its own (principal `strato:<function>`), appended only.
    call("dynamodb:PutItem", Table("audit")),
];
