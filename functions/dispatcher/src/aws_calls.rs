//! The AWS calls this function's code makes: IAM actions on logical resources (`strato_calls`). Checked
//! against its IAM policy in `infra/` (tests/tests/engine/infra_apply.rs) and against the calls it really makes in
//! devstack (tests/tests/devstack/devstack_lifecycle.rs, devstack_drift.rs, devstack_estimate.rs). A new AWS call
//! goes here first; the infra check then names the grant `infra/modules/functions/iam.tf` lacks.

use strato_calls::{AwsCall, COORDINATION, QUEUE_URLS, Resource::*, call, concat, total};

/// The store's and the queues' shared pieces, then this function's own calls.
pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);

const PARTS: &[&[AwsCall]] = &[COORDINATION, QUEUE_URLS, OWN];

const OWN: &[AwsCall] = &[
    // The one-write claim checks a read-only run's cluster is not DELETED.
    call("dynamodb:ConditionCheckItem", Table("clusters")),
    // The one-write claim checks the tenant's concurrency quota was copied onto its slot item.
    call("dynamodb:ConditionCheckItem", Table("tenants")),
    call("ecs:RunTask", RunnerTaskDefinition),
    // RunTask tags each task (tenant, cluster, operation): IAM authorizes that as TagResource on the task.
    call("ecs:TagResource", RunnerCluster),
    call("iam:PassRole", RunnerRoles),
    // A redelivered job adopts the task its first delivery started.
    call("ecs:ListTasks", RunnerCluster),
    call("ecs:DescribeTasks", RunnerCluster),
    // The run-proof key, by reference, read once at cold start (strato_aws::secret_env).
    call("secretsmanager:GetSecretValue", Secret("run-proof-secret")),
    // The audit log: what this function does on its own (principal `strato:<function>`), appended only.
    call("dynamodb:PutItem", Table("audit")),
    // With an OIDC issuer (STRATO_OIDC_ISSUER): each run's identity tokens are signed (the key's public half
    // gives their kid) and sealed for the runner with a data key ({tenant, purpose: run-identity}); the
    // template's stages come from the GetItem of templates above.
    call("kms:Sign", SigningKey),
    call("kms:GetPublicKey", SigningKey),
    call("kms:GenerateDataKey", DataKey),
];
