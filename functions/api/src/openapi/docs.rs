//! What each endpoint takes and answers: summary, body, success answers, the problems beyond the shared
//! ones, query parameters and the longer descriptions.

use crate::Endpoint::{self, *};

/// What one endpoint takes and answers.
pub(super) struct Doc {
    pub(super) summary: &'static str,
    /// The request body's schema, if it has one.
    pub(super) body: Option<&'static str>,
    /// Success answers: status, schema, description.
    pub(super) ok: &'static [(u16, &'static str, &'static str)],
    /// Problem answers beyond the ones every route but `/healthz` shares (401, 413, 500). Mutating routes
    /// with `Idempotency-Key` add 400 (unusable key), 409 (still in progress) and 422 (key reused); every
    /// POST, PUT and PATCH adds 415 (a body not declared JSON).
    pub(super) errors: &'static [u16],
    pub(super) query: &'static [(&'static str, &'static str)],
    /// How the route behaves beyond its summary, when that needs saying.
    pub(super) description: Option<&'static str>,
}

const fn doc(
    summary: &'static str,
    body: Option<&'static str>,
    ok: &'static [(u16, &'static str, &'static str)],
    errors: &'static [u16],
) -> Doc {
    Doc {
        summary,
        body,
        ok,
        errors,
        query: &[],
        description: None,
    }
}

/// What a PATCH does when operations are still open, and how clients make it conditional.
const UPDATE_DESCRIPTION: &str = "Variables merge into the newest spec requested (RFC 7396: `null` removes \
one): while an update (or the create) is still queued or running, a second PATCH builds on that operation's \
spec, not only on what was last applied, so it keeps the first one's changes; the operations run in order. \
Send `If-Match` with the cluster's `ETag` (its `version`, quoted) to change the cluster only if nobody \
changed it since you read it: another version answers 412 and nothing is written. `approval` may tighten \
what applies; lowering it (taking back the cluster's own `required`) needs the `admin` scope (403 naming \
`approval` otherwise) and is audited, and no cluster setting lowers a template's or tenant's `required` \
(422).";

/// Where the timeline's moments come from, so clients know which can be missing.
const TIMELINE_DESCRIPTION: &str = "Derived from the operation's record: queued (created), parked (while it \
waits), dispatched and runner_started (the latest attempt), each step's start and finish, the latest \
heartbeat while open, notes the control plane recorded, and the end with its error category. A moment that \
was not recorded (e.g. an operation cancelled before dispatch has no dispatched) is absent. Another \
tenant's operation answers 404, like a missing one.";

/// How long a cluster's history is kept.
const OPERATIONS_DESCRIPTION: &str = "Paged, newest first. Finished operations are kept for the deployment's retention (default 90 days) and then deleted; open ones are always listed. The audit log keeps who did what for longer.";

/// How an approval works, so approvers know what they approve.
const APPROVE_DESCRIPTION: &str = "Only for an operation in `awaiting_approval` (its `approval` shows the \
plan: resources to add, change and destroy by address, and the estimate). A new runner applies exactly the \
approved plan, verified by its SHA-256; if the cluster's state changed since the plan, it plans again and the \
operation waits for approval again. Needs the `operations:approve` scope; unless the deployment turns \
separation of duties off, the operation's requester cannot approve it (403 `self-approval`). An expired \
request answers 409. Name the plan you reviewed (`plan_sha256`, and `round` and `stage`, from the \
operation's `approval`): if another one is pending by then (a new round after a re-plan, another stage), \
nothing is decided and the answer is 409 `plan-changed` naming the pending plan's sha256, round and stage.";

/// What the audit log holds and how long.
const AUDIT_DESCRIPTION: &str = "Every mutating call (refused ones too, with their status) and every action \
Strato takes on its own (`strato:dispatcher`, `strato:scheduler`, `strato:status`), append-only: no API or function can \
change or delete an entry. Entries expire after the deployment's retention (default 365 days).";

/// What a policy is and where it applies.
const POLICY_DESCRIPTION: &str = "Rego v1, evaluated in-process. `package strato.request` policies are \
checked on every create, update and delete before anything is written (a `deny` answers 422 listing each \
message); `package strato.plan` policies are checked by the runner on the plan and its estimate before apply \
(a `deny` fails the operation at step `policy`). `warn` messages become notes. A source that does not compile \
answers 422 naming `source`.";

/// The table of every endpoint's answers: long because it is one arm per endpoint, kept together so the
/// whole contract reads in one place.
pub(super) fn endpoint_doc(e: Endpoint) -> Doc {
    const QUEUED: &str = "Accepted: the operation is queued; `Location` points at it";
    match e {
        Health => doc("Liveness", None, &[(200, "Health", "Alive")], &[]),
        CreateCluster => doc(
            "Create a cluster",
            Some("CreateClusterRequest"),
            &[(202, "Accepted", QUEUED)],
            &[400, 409, 422, 429],
        ),
        ListClusters => Doc {
            query: &[
                (
                    "state",
                    "Only clusters in this state (any case: `active` is `ACTIVE`); `DELETED` lists deleted ones",
                ),
                (
                    "name",
                    "Only the cluster of this name (how a client finds a cluster's id by its name)",
                ),
                (
                    "include_deleted",
                    "`true`: DELETED clusters too; default `false` (a listing without `state` leaves them out)",
                ),
                ("limit", "Page size, 1-100 (default 20)"),
                (
                    "next",
                    "The `next` of the previous page; absent or empty: the first page",
                ),
            ],
            ..doc(
                "List your clusters, newest first",
                None,
                &[(200, "ClusterPage", "A page")],
                &[400],
            )
        },
        GetCluster => doc("Read a cluster", None, &[(200, "Cluster", "The cluster")], &[404]),
        UpdateCluster => Doc {
            description: Some(UPDATE_DESCRIPTION),
            ..doc(
                "Change a cluster's variables, template version or drift settings",
                Some("UpdateClusterRequest"),
                &[
                    (200, "Cluster", "Settings alone changed; no operation"),
                    (202, "Accepted", QUEUED),
                ],
                &[400, 404, 409, 412, 422, 429],
            )
        },
        DeleteCluster => doc(
            "Delete a cluster",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
        RetryCluster => doc(
            "Retry a FAILED cluster's create",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
        DriftCheck => doc(
            "Check an ACTIVE cluster for drift now",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
        ListStateVersions => doc(
            "List the Terraform state versions of a cluster",
            None,
            &[(200, "StateVersions", "Versions and past restores")],
            &[404],
        ),
        RestoreStateVersion => doc(
            "Restore a Terraform state version",
            None,
            &[(200, "StateRestoreResult", "Restored")],
            &[400, 404, 409, 422],
        ),
        ListClusterOperations => Doc {
            query: &[
                ("limit", "Page size, 1-200 (default 50)"),
                (
                    "next",
                    "The `next` of the previous page; absent or empty: the first page",
                ),
            ],
            description: Some(OPERATIONS_DESCRIPTION),
            ..doc(
                "List a cluster's operations, newest first",
                None,
                &[(200, "OperationList", "A page")],
                &[400, 404],
            )
        },
        GetOperation => doc(
            "Read an operation",
            None,
            &[(200, "Operation", "The operation")],
            &[404],
        ),
        GetOperationTimeline => Doc {
            description: Some(TIMELINE_DESCRIPTION),
            ..doc(
                "Read an operation's timeline",
                None,
                &[(200, "Timeline", "Its moments, oldest first")],
                &[404],
            )
        },
        CancelOperation => doc(
            "Cancel an operation",
            None,
            &[
                (200, "Operation", "Cancelled before it started"),
                (
                    202,
                    "Operation",
                    "Cancel requested; the runner stops at a safe point",
                ),
            ],
            &[400, 404, 409, 422],
        ),
        ApproveOperation => Doc {
            description: Some(APPROVE_DESCRIPTION),
            ..doc(
                "Approve an operation's plan",
                Some("DecisionRequest"),
                &[(202, "Operation", "Approved; a runner applies exactly that plan")],
                &[400, 403, 404, 409, 422],
            )
        },
        RejectOperation => doc(
            "Reject an operation's plan",
            Some("DecisionRequest"),
            &[(
                202,
                "Operation",
                "Rejected; the operation ends cancelled, nothing applied",
            )],
            &[400, 404, 409, 422],
        ),
        CreateEstimate => doc(
            "Estimate a spec's monthly cost",
            Some("EstimateRequest"),
            &[(202, "EstimateAccepted", QUEUED)],
            &[400, 409, 422, 429],
        ),
        GetTargetAccess => doc(
            "Your issued external id and the trust policy your target roles need",
            None,
            &[(200, "TargetAccess", "Issued on first read, never replaced")],
            &[],
        ),
        GetWebhook => doc(
            "Read your webhook",
            None,
            &[(200, "Webhook", "The webhook")],
            &[404],
        ),
        PutWebhook => doc(
            "Set your webhook",
            Some("WebhookRequest"),
            &[(200, "Webhook", "Set")],
            &[400, 422],
        ),
        DeleteWebhook => doc(
            "Remove your webhook",
            None,
            &[(200, "Deleted", "Removed")],
            &[400, 404, 409, 422],
        ),
        ListPolicies => doc(
            "List the policies your requests and plans are checked against (platform and yours)",
            None,
            &[(200, "PolicyList", "The policies and their version")],
            &[],
        ),
        GetPolicy => doc(
            "Read one of your policies",
            None,
            &[(200, "Policy", "The policy")],
            &[404],
        ),
        PutPolicy => Doc {
            description: Some(POLICY_DESCRIPTION),
            ..doc(
                "Create or replace one of your policies (compile-checked)",
                Some("PolicyRequest"),
                &[(200, "Policy", "Stored")],
                &[400, 422],
            )
        },
        DeletePolicy => doc(
            "Remove one of your policies",
            None,
            &[(200, "Deleted", "Removed")],
            &[400, 404, 409, 422],
        ),
        CreateWsTicket => doc(
            "Get a WebSocket ticket",
            None,
            &[(201, "WsTicket", "A short-lived ticket")],
            &[],
        ),
        ListTemplates => doc(
            "List published templates",
            None,
            &[(200, "TemplateList", "Templates")],
            &[],
        ),
        GetTemplate => Doc {
            query: &[("version", "A published version (default: the latest)")],
            ..doc(
                "Read a template's variable schema",
                None,
                &[(200, "TemplateDetail", "The template")],
                &[400, 404],
            )
        },
        AgentRegister => doc(
            "Register a cluster's agent (agent token)",
            Some("AgentReportRequest"),
            &[(200, "AgentReport", "Registered")],
            &[400, 409, 410],
        ),
        ListAudit => Doc {
            query: &[
                ("cluster", "Only entries about this cluster"),
                (
                    "since",
                    "Only entries at or after this time: RFC 3339, or a duration back from now (15m, 24h, 7d)",
                ),
                (
                    "actor",
                    "Only entries of this principal (a token's `sub`, or `strato:<function>`)",
                ),
                ("limit", "Page size, 1-100 (default 100)"),
                (
                    "next",
                    "The `next` of the previous page; absent or empty: the first page",
                ),
            ],
            description: Some(AUDIT_DESCRIPTION),
            ..doc(
                "Read your tenant's audit log, newest first",
                None,
                &[(
                    200,
                    "AuditPage",
                    "A page (it may hold fewer than `limit` entries and still have a `next`)",
                )],
                &[400, 422],
            )
        },
        AgentHeartbeat => doc(
            "A cluster agent's heartbeat (agent token)",
            Some("AgentReportRequest"),
            &[(200, "AgentReport", "Recorded")],
            &[400, 409],
        ),
    }
}
