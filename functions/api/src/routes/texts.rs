//! The route table's longer texts: what the OpenAPI document says of a route beyond its summary.

pub(super) const QUEUED: &str = "Accepted: the operation is queued; `Location` points at it";
pub(super) const NEXT: (&str, &str) = (
    "next",
    "The `next` of the previous page; absent or empty: the first page",
);

/// What a PATCH does when operations are still open, and how clients make it conditional.
pub(super) const UPDATE_DESCRIPTION: &str = "Variables merge into the newest spec requested (RFC 7396: `null` removes \
one): while an update (or the create) is still queued or running, a second PATCH builds on that operation's \
spec, not only on what was last applied, so it keeps the first one's changes; the operations run in order. \
Send `If-Match` with the cluster's `ETag` (its `version`, quoted) to change the cluster only if nobody \
changed it since you read it: another version answers 412 and nothing is written. `approval` may tighten \
what applies; lowering it (taking back the cluster's own `required`) needs the `admin` scope (403 naming \
`approval` otherwise) and is audited, and no cluster setting lowers a template's or tenant's `required` \
(422).";

/// What a preview does and does not do.
pub(super) const PLAN_DESCRIPTION: &str = "The body is a PATCH's `variables` and/or `template_version` (drift, expiry \
and approval settings are refused: no plan can preview them), validated and checked against the request \
policies exactly as that PATCH; every problem answers in one 422 and nothing is queued. Accepted, it queues a \
`plan` operation whose `spec` is the proposed one, in turn with the cluster's other operations. The runner \
plans it against the cluster's current state and records on the operation its `preview`: each resource to \
create, update, delete or replace by address, the plan policies' results (a denial means the update would \
be refused; the preview itself succeeds) and the monthly cost now, after, and the difference. Nothing is \
applied: the cluster's spec, state, outputs and drift flag do not change, and no approval is asked for.";

/// Where the timeline's moments come from, so clients know which can be missing.
pub(super) const TIMELINE_DESCRIPTION: &str = "Derived from the operation's record: queued (created), parked (while it \
waits), dispatched and runner_started (the latest attempt), each step's start and finish, the latest \
heartbeat while open, notes the control plane recorded, and the end with its error category. A moment that \
was not recorded (e.g. an operation cancelled before dispatch has no dispatched) is absent. Another \
tenant's operation answers 404, like a missing one.";

/// How long a cluster's history is kept.
pub(super) const KUBECONFIG_DESCRIPTION: &str = "The endpoint and CA come from the cluster's outputs, as its template's \
     `[connect]` names them. No credential is in it: its exec plugin (`aws eks get-token`) signs a short-lived token \
     on your machine with your AWS identity (or the role asked for). 409 while the cluster has no endpoint yet, \
     once it is deleted, or when its template says nothing about connecting.";
pub(super) const OPERATIONS_DESCRIPTION: &str = "Paged, newest first. Finished operations are kept for the deployment's retention (default 90 days) and then deleted; open ones are always listed. The audit log keeps who did what for longer.";

/// How an approval works, so approvers know what they approve.
pub(super) const APPROVE_DESCRIPTION: &str = "Only for an operation in `awaiting_approval` (its `approval` shows the \
plan: resources to add, change and destroy by address, and the estimate). A new runner applies exactly the \
approved plan, verified by its SHA-256; if the cluster's state changed since the plan, it plans again and the \
operation waits for approval again. Needs the `operations:approve` scope; unless the deployment turns \
separation of duties off, the operation's requester cannot approve it (403 `self-approval`). An expired \
request answers 409. Name the plan you reviewed (`plan_sha256`, and `round` and `stage`, from the \
operation's `approval`): if another one is pending by then (a new round after a re-plan, another stage), \
nothing is decided and the answer is 409 `plan-changed` naming the pending plan's sha256, round and stage.";

/// What the audit log holds and how long.
pub(super) const AUDIT_DESCRIPTION: &str = "Every mutating call (refused ones too, with their status) and every action \
Strato takes on its own (`strato:dispatcher`, `strato:scheduler`, `strato:status`), append-only: no API or function can \
change or delete an entry. Entries expire after the deployment's retention (default 365 days).";

/// What a policy is and where it applies.
pub(super) const POLICY_DESCRIPTION: &str = "Rego v1, evaluated in-process. `package strato.request` policies are \
checked on every create, update and delete before anything is written (a `deny` answers 422 listing each \
message); `package strato.plan` policies are checked by the runner on the plan and its estimate before apply \
(a `deny` fails the operation at step `policy`). `warn` messages become notes. A source that does not compile \
answers 422 naming `source`.";

/// The cluster agent's routes.
pub(super) const REGISTER_DESCRIPTION: &str = "Once per cluster, while it is CONFIGURING and before its registration deadline, with the \
registration token the configure step installed. The answer's `credential` is shown only \
here; heartbeats and rotations use it. A body over 16 KiB is refused (413).";
pub(super) const HEARTBEAT_DESCRIPTION: &str = "With the agent's credential. Records the cluster's health (`healthy` when at least the \
requested nodes are Ready and every reported component has its replicas, `degraded` with \
reasons otherwise); a change of health status is sent as `cluster.health_changed`. Reports \
closer than 10 s to the last accepted one are refused (429 with `Retry-After`), nothing \
written. A body over 16 KiB is refused (413).";
pub(super) const CREDENTIAL_DESCRIPTION: &str = "With the agent's credential, no body. The answer is a new credential; the one used here \
keeps working until the new one is first used, then stops.";
