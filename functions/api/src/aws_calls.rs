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
    // The clusters list's last operations: one BatchGetItem per page.
    call("dynamodb:BatchGetItem", Table("operations")),
    // The agent API forwards a cluster agent's report to the status function, and a change of the
    // cluster's health to the webhooks function (cluster.health_changed).
    call("sqs:SendMessage", Queue("events")),
    call("sqs:SendMessage", Queue("webhooks")),
    // A tenant's clusters (GET /v1/clusters): a Query of the table by tenant.
    call("dynamodb:Query", Table("clusters")),
    // Tenant webhook settings (PUT /v1/webhook), quotas and budgets.
    call("dynamodb:PutItem", Table("tenants")),
    call("dynamodb:Query", Index("clusters", "by_agent_token")),
    // Idempotency-Key records.
    call("dynamodb:GetItem", Table("idempotency")),
    call("dynamodb:PutItem", Table("idempotency")),
    call("dynamodb:DeleteItem", Table("idempotency")),
    // GET /v1/templates and the suggestions of an unknown template scan the catalog.
    call("dynamodb:Scan", Table("templates")),
    // The operator's template catalog: a version's standing read (a Query for every version's) and set; a
    // bundle published through the API (the object, then the catalog item).
    call("dynamodb:Query", Table("templates")),
    call("dynamodb:UpdateItem", Table("templates")),
    call("dynamodb:PutItem", Table("templates")),
    call("s3:PutObject", Object("templates", "bundles/*")),
    // The operator's listings (GET /v1/admin/tenants, /v1/admin/clusters): one bounded Scan page each.
    call("dynamodb:Scan", Table("tenants")),
    call("dynamodb:Scan", Table("clusters")),
    // State versions: list them; a restore reads the chosen and the current version, records Terraform's
    // digest of the restored bytes (only `<state bucket>/tenants/*-md5` items), then copies the version back.
    call("s3:ListBucketVersions", Bucket("state")),
    call("s3:GetObject", Object("state", "tenants/*")),
    call("s3:GetObjectVersion", Object("state", "tenants/*")),
    call("s3:PutObject", Object("state", "tenants/*")),
    call(
        "dynamodb:PutItem",
        TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*-md5",
        },
    ),
    // The audit log: every mutating call appends an entry; GET /v1/audit queries the table or an index.
    call("dynamodb:PutItem", Table("audit")),
    call("dynamodb:Query", Table("audit")),
    call("dynamodb:Query", Index("audit", "by_cluster")),
    call("dynamodb:Query", Index("audit", "by_actor")),
    // Sensitive variables and the tenant's external id are sealed with data keys (strato_domain::sealed);
    // the external id is opened to show it; a restore copies SSE-KMS state objects.
    call("kms:GenerateDataKey", DataKey),
    call("kms:Decrypt", DataKey),
    // The JWKS (GET /.well-known/jwks.json) is the signing key's public half.
    call("kms:GetPublicKey", SigningKey),
    // Secrets given by reference (STRATO_*_SECRET_ARN), read once at cold start (strato_aws::secret_env).
    call("secretsmanager:GetSecretValue", Secret("ws-jwt-secret")),
    call("secretsmanager:GetSecretValue", Secret("agent-token-secret")),
];
