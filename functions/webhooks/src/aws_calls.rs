//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, QUEUE_URLS, Resource::*, call, concat, total};

/// Every queue's URL (QueueUrls::resolve at start), then the calls of its own.
pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);

const PARTS: &[&[AwsCall]] = &[QUEUE_URLS, OWN];

const OWN: &[AwsCall] = &[
    // The tenant's webhook; each delivery's outcome noted on its operation.
    call("dynamodb:GetItem", Table("tenants")),
    call("dynamodb:GetItem", Table("operations")),
    call("dynamodb:PutItem", Table("operations")),
    // A back-off: the message comes back later.
    call("sqs:ChangeMessageVisibility", Queue("webhooks")),
];
