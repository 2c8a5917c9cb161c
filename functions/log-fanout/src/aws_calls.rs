//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, Resource::*, call};

pub const AWS_CALLS: &[AwsCall] = &[
    // Subscribers of an operation; subscriptions of gone connections removed.
    call("dynamodb:Query", Table("connections")),
    call("dynamodb:BatchWriteItem", Table("connections")),
    call("dynamodb:DeleteItem", Table("connections")),
    call("execute-api:ManageConnections", Connections),
];
