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
    // The one-write claim checks a read-only run's cluster is not DELETED.
    call("dynamodb:ConditionCheckItem", Table("clusters")),
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
    // The one-write claim checks the tenant's concurrency quota was copied onto its slot item.
    call("dynamodb:ConditionCheckItem", Table("tenants")),
    call("dynamodb:GetItem", Table("templates")),
    // QueueUrls::resolve at start: every queue's URL.
    call("sqs:GetQueueUrl", Queue("jobs")),
    call("sqs:GetQueueUrl", Queue("events")),
    call("sqs:GetQueueUrl", Queue("logs")),
    call("sqs:GetQueueUrl", Queue("webhooks")),
    // Wakes the next queued operation when a lock is released.
    call("sqs:SendMessage", Queue("jobs")),
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
];
