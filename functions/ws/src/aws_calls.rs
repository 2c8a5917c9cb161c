//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, Resource::*, call};

pub const AWS_CALLS: &[AwsCall] = &[
    // Connections and their subscriptions.
    call("dynamodb:GetItem", Table("connections")),
    call("dynamodb:PutItem", Table("connections")),
    call("dynamodb:DeleteItem", Table("connections")),
    call("dynamodb:Query", Table("connections")),
    call("dynamodb:BatchWriteItem", Table("connections")),
    // Subscriptions are accepted only for the caller's tenant's operations.
    call("dynamodb:GetItem", Table("operations")),
    // The replay of an operation's archived log.
    call("s3:ListBucket", Bucket("artifacts")),
    call("s3:GetObject", Object("artifacts", "logs/*")),
    // The artifacts bucket is SSE-KMS: S3 decrypts with the reader's kms:Decrypt (not recorded: S3 calls KMS).
    call("kms:Decrypt", DataKey),
    call("execute-api:ManageConnections", Connections),
    // The ticket key, by reference, read once at cold start (strato_aws::secret_env).
    call("secretsmanager:GetSecretValue", Secret("ws-jwt-secret")),
];
