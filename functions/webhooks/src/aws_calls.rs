//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, Resource::*, call};

pub const AWS_CALLS: &[AwsCall] = &[
    // QueueUrls::resolve at start: every queue's URL.
    call("sqs:GetQueueUrl", Queue("jobs")),
    call("sqs:GetQueueUrl", Queue("events")),
    call("sqs:GetQueueUrl", Queue("logs")),
    call("sqs:GetQueueUrl", Queue("webhooks")),
    call("sqs:GetQueueUrl", Queue("rollouts")),
    // The tenant's webhook; each delivery's outcome noted on its operation.
    call("dynamodb:GetItem", Table("tenants")),
    call("dynamodb:GetItem", Table("operations")),
    call("dynamodb:PutItem", Table("operations")),
    // A back-off: the message comes back later.
    call("sqs:ChangeMessageVisibility", Queue("webhooks")),
];
