//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, COORDINATION, QUEUE_URLS, Resource::*, call, concat, total};

/// The store's and the queues' shared pieces, then this function's own calls.
pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);

const PARTS: &[&[AwsCall]] = &[COORDINATION, QUEUE_URLS, OWN];

const OWN: &[AwsCall] = &[
    // Status frames to the live log stream; its own delayed timers (the agent's configure deadline) back on
    // events; drift notifications for the webhooks function.
    call("sqs:SendMessage", Queue("logs")),
    call("sqs:SendMessage", Queue("events")),
    call("sqs:SendMessage", Queue("webhooks")),
    // An ended run of a cluster a rollout holds (its claim, a GetItem of locks): the rollout's input.
    call("sqs:SendMessage", Queue("rollouts")),
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
