//! The AWS calls the runner's code (and its engine's S3 backend) makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/runner/iam.tf` lacks.

use strato_calls::{AwsCall, QUEUE_URLS, Resource::*, call, concat, total};

/// Every queue's URL (QueueUrls::resolve at start), then the calls of its own.
pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);

const PARTS: &[&[AwsCall]] = &[QUEUE_URLS, OWN];

const OWN: &[AwsCall] = &[
    // The operation, its cluster, template and tenant budget, and its lock's fencing token.
    call("dynamodb:GetItem", Table("operations")),
    call("dynamodb:GetItem", Table("clusters")),
    call("dynamodb:GetItem", Table("templates")),
    call("dynamodb:GetItem", Table("tenants")),
    call("dynamodb:GetItem", Table("locks")),
    call("dynamodb:Query", Index("clusters", "by_cluster_id")),
    // The cluster's open operations, when a state lock is held (the state-lock verdict).
    call("dynamodb:Query", Index("operations", "open_by_cluster")),
    // Reports and log lines.
    call("sqs:SendMessage", Queue("events")),
    call("sqs:SendMessage", Queue("logs")),
    call("s3:GetObject", Object("templates", "bundles/*")),
    // Log archives, debug logs, final events too large for SQS.
    // A later run of an operation continues its log after the last archived line.
    call("s3:ListBucket", Bucket("artifacts")),
    call("s3:PutObject", Object("artifacts", "logs/*")),
    call("s3:PutObject", Object("artifacts", "debug/*")),
    call("s3:PutObject", Object("artifacts", "events/*")),
    // Plans saved (sealed) for approval, and fetched by the run that applies the approved one.
    call("s3:PutObject", Object("artifacts", "plans/*")),
    call("s3:GetObject", Object("artifacts", "plans/*")),
    // Sensitive outputs, under the deployment's own path.
    call("secretsmanager:CreateSecret", Secret("clusters/*")),
    call("secretsmanager:PutSecretValue", Secret("clusters/*")),
    call("secretsmanager:GetSecretValue", Secret("clusters/*")),
    call("secretsmanager:DeleteSecret", Secret("clusters/*")),
    // Tenants' target accounts (trust.rs), and the run's own roles (lifecycle/access.rs), each assumed with a
    // session policy scoped to the run's cluster.
    call("sts:AssumeRole", TargetRoles),
    call("sts:AssumeRole", RunRoles),
    // Sealed values (the spec's sensitive variables, the tenant's external id) are opened here.
    call("kms:Decrypt", DataKey),
    call("kms:GenerateDataKey", DataKey),
];

/// The calls made with the run's **state role** session (never the task role): Terraform's S3 backend (the
/// engine, a separate process whose calls the recorder does not see) on the cluster's state and its lock and
/// digest items, and the runner's own check of a leftover lock. `infra_apply` evaluates them against
/// `aws_iam_role_policy.runner_state`, and the per-run session policy against another tenant's state.
pub const STATE_ROLE_CALLS: &[AwsCall] = &[
    call("s3:ListBucket", Bucket("state")),
    call("s3:GetObject", Object("state", "tenants/*")),
    call("s3:PutObject", Object("state", "tenants/*")),
    call("s3:DeleteObject", Object("state", "tenants/*")),
    call(
        "dynamodb:GetItem",
        TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*",
        },
    ),
    call(
        "dynamodb:PutItem",
        TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*",
        },
    ),
    call(
        "dynamodb:DeleteItem",
        TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*",
        },
    ),
    // State objects are SSE-KMS under the data key (through S3).
    call("kms:Decrypt", DataKey),
    call("kms:GenerateDataKey", DataKey),
];
