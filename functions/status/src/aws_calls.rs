//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_aws::calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_aws::calls::{AwsCall, Resource::*, call};

pub const AWS_CALLS: &[AwsCall] = &[
    // The store (strato_aws::store) and the shared coordination rules (cluster locks, tenant slots and
    // counters, operations hand-off); transactions count as their items' actions.
    call("dynamodb:GetItem", Table("clusters")),
    call("dynamodb:PutItem", Table("clusters")),
    call("dynamodb:UpdateItem", Table("clusters")),
    call("dynamodb:Query", Index("clusters", "by_cluster_id")),
    call("dynamodb:GetItem", Table("operations")),
    call("dynamodb:PutItem", Table("operations")),
    call("dynamodb:Query", Index("operations", "open_by_cluster")),
    call("dynamodb:Query", Index("operations", "open")),
    call("dynamodb:GetItem", Table("locks")),
    call("dynamodb:PutItem", Table("locks")),
    call("dynamodb:UpdateItem", Table("locks")),
    call("dynamodb:DeleteItem", Table("locks")),
    call("dynamodb:GetItem", Table("tenants")),
    call("dynamodb:UpdateItem", Table("tenants")),
    call("dynamodb:GetItem", Table("templates")),
    // QueueUrls::resolve at start: every queue's URL.
    call("sqs:GetQueueUrl", Queue("jobs")),
    call("sqs:GetQueueUrl", Queue("events")),
    call("sqs:GetQueueUrl", Queue("logs")),
    call("sqs:GetQueueUrl", Queue("webhooks")),
    // Wakes the next operation; status frames to the live log stream; its own delayed timers (the agent's
    // configure deadline) back on events; drift notifications for the webhooks function.
    call("sqs:SendMessage", Queue("jobs")),
    call("sqs:SendMessage", Queue("logs")),
    call("sqs:SendMessage", Queue("events")),
    call("sqs:SendMessage", Queue("webhooks")),
    // Retries later by changing a message's visibility (a report arriving before its operation is saved).
    call("sqs:ChangeMessageVisibility", Queue("events")),
    // Reads the run's log archive (its `complete` marker, the last lines for the failure summary).
    call("s3:ListBucket", Bucket("artifacts")),
    call("s3:GetObject", Object("artifacts", "logs/*")),
    // A final event too large for SQS, stored by the runner (strato_aws::spill).
    call("s3:GetObject", Object("artifacts", "events/*")),
    // The artifacts bucket is SSE-KMS: S3 decrypts with the reader's kms:Decrypt (not recorded: S3 calls KMS).
    call("kms:Decrypt", DataKey),
    // The run-proof key, by reference, read once at cold start (strato_aws::secret_env).
    call("secretsmanager:GetSecretValue", Secret("run-proof-secret")),
    // The audit log: a drift reconcile it queues (principal `strato:status`), appended only.
    call("dynamodb:PutItem", Table("audit")),
];
