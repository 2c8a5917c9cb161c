//! `strato-status`: consumes the `events` queue — runner events ([`RunnerEvent`]) and EventBridge "ECS Task
//! State Change" events — and applies them to operations and clusters through the state machine. When an
//! operation ends it frees the cluster lock and the tenant slot and re-enqueues whoever waits for them.
//!
//! The queue is a standard one: events arrive duplicated and out of order. Every change is therefore a
//! re-read plus a conditional write, steps are upserted by name, terminal operations ignore later terminal
//! events, and releases are conditioned on the operation's own fencing token.
//!
//! Runner contract relied on here: the runner exits 0 only after its final report (succeeded, failed or
//! cancelled) was sent. A task that stops with another exit code (or none) did not report, so its STOPPED
//! event fails the operation; a task that exited 0 has a report in flight, so its STOPPED event waits for it.

pub mod webhook;

use std::collections::BTreeMap;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use serde::Deserialize;
use strato_aws::aws::AwsClients;
use strato_aws::coordination::{LOCK_LEASE, release_and_wake, submit, update_cluster, update_operation};
use strato_aws::env::{Env, EnvError};
use strato_aws::log_io::publish_frame;
use strato_aws::queues::{self, QueueUrls};
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::cost::CostEstimate;
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::ids::OperationId;
use strato_domain::messages::{ControlEvent, ENV_FENCING_TOKEN, ENV_OPERATION_ID, LogFrame, RunnerEvent};
use strato_domain::model::{
    Cluster, ClusterState, DriftInfo, DriftPolicy, Operation, OperationKind, OperationStatus, ResourceChange,
    Step,
};
use strato_domain::state_machine::transition;
use strato_domain::ts;
use strato_domain::webhook::{DRIFT_DETECTED, DriftEvent};
use time::OffsetDateTime;
use webhook::WebhookPolicy;

/// Deliveries of an exit-0 STOPPED event to wait for the runner's final report before giving up on it.
pub const FINAL_REPORT_GRACE_RECEIVES: u32 = 3;

/// Delay between those deliveries.
pub const FINAL_REPORT_RETRY_SECS: i32 = 20;

/// Optimistic saves of one operation retry this often before the record is handed back to SQS.
const ATTEMPTS: usize = 6;

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error("record {message_id} has no body")]
    EmptyBody { message_id: String },
    #[error("record {message_id} is neither a runner event nor an ECS task state change: {reason}")]
    BadBody { message_id: String, reason: String },
    #[error("operation {0} does not exist")]
    UnknownOperation(OperationId),
    #[error("operation {0} kept changing concurrently")]
    Contended(OperationId),
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
}

impl Config {
    pub fn from_env() -> Result<Self, StatusError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, StatusError> {
        Ok(Self {
            names: Env::new(lookup).names()?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Ctx {
    pub config: Config,
    pub store: Store,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub queues: QueueUrls,
    /// For tenant webhooks.
    pub http: reqwest::Client,
    pub webhook: WebhookPolicy,
}

impl Ctx {
    pub async fn new(config: Config, aws: &AwsClients) -> Result<Self, StatusError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names),
            sqs: aws.sqs.clone(),
            s3: aws.s3.clone(),
            queues,
            config,
            http: reqwest::Client::new(),
            webhook: WebhookPolicy::default(),
        })
    }
}

// ---- incoming messages ----------------------------------------------------------------------------------

/// The EventBridge envelope; only what is needed.
#[derive(Debug, Deserialize)]
struct EventBridgeEnvelope {
    #[serde(rename = "detail-type")]
    detail_type: String,
    #[serde(default)]
    detail: serde_json::Value,
}

/// `detail` of an "ECS Task State Change" event.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStateChange {
    pub task_arn: String,
    pub last_status: String,
    #[serde(default)]
    pub started_by: Option<String>,
    #[serde(default)]
    pub stopped_reason: Option<String>,
    #[serde(default)]
    pub containers: Vec<TaskContainer>,
    #[serde(default)]
    pub overrides: TaskOverrides,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskContainer {
    pub name: String,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOverrides {
    #[serde(default)]
    pub container_overrides: Vec<TaskContainerOverride>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TaskContainerOverride {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub environment: Vec<EnvVar>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

impl TaskStateChange {
    fn env(&self, name: &str) -> Option<(&TaskContainerOverride, &str)> {
        self.overrides.container_overrides.iter().find_map(|c| {
            c.environment
                .iter()
                .find(|e| e.name == name)
                .map(|e| (c, e.value.as_str()))
        })
    }

    /// The operation the task ran: the runner's env override, else `startedBy` (both set by the dispatcher).
    pub fn operation_id(&self) -> Option<OperationId> {
        self.env(ENV_OPERATION_ID)
            .and_then(|(_, v)| v.parse().ok())
            .or_else(|| self.started_by.as_deref().and_then(|s| s.parse().ok()))
    }

    pub fn fencing_token(&self) -> Option<u64> {
        self.env(ENV_FENCING_TOKEN).and_then(|(_, v)| v.parse().ok())
    }

    /// The runner's container: the one carrying the overrides, else the first.
    fn runner(&self) -> Option<&TaskContainer> {
        let name = self.env(ENV_OPERATION_ID).and_then(|(c, _)| c.name.as_deref());
        self.containers
            .iter()
            .find(|c| Some(c.name.as_str()) == name)
            .or(self.containers.first())
    }
}

#[derive(Debug, Clone)]
pub enum Incoming {
    Runner(RunnerEvent),
    /// From the control plane itself: the agent handshake.
    Control(ControlEvent),
    Task(Box<TaskStateChange>),
    /// An event of another kind on the bus rule (it cannot be applied; logged and dropped).
    Other(String),
}

pub fn parse_body(message_id: &str, body: &str) -> Result<Incoming, StatusError> {
    let bad = |reason: String| StatusError::BadBody {
        message_id: message_id.to_owned(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| bad(e.to_string()))?;
    if value.get("detail-type").is_some() {
        let env: EventBridgeEnvelope = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if env.detail_type != "ECS Task State Change" {
            return Ok(Incoming::Other(env.detail_type));
        }
        let detail = serde_json::from_value(env.detail).map_err(|e| bad(format!("detail: {e}")))?;
        return Ok(Incoming::Task(Box::new(detail)));
    }
    if matches!(
        value.get("type").and_then(|t| t.as_str()),
        Some("agent_ready" | "configure_deadline")
    ) {
        return serde_json::from_value(value)
            .map(Incoming::Control)
            .map_err(|e| bad(e.to_string()));
    }
    serde_json::from_value(value)
        .map(Incoming::Runner)
        .map_err(|e| bad(e.to_string()))
}

// ---- batch ----------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ack,
    RetryAfter(i32),
}

/// Processes a batch; records that failed (or must wait) are reported in `batch_item_failures`.
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, StatusError> {
    let mut response = SqsBatchResponse::default();
    for record in &event.records {
        let id = record.message_id.clone().unwrap_or_default();
        match process(ctx, record).await {
            Ok(Outcome::Ack) => {}
            Ok(Outcome::RetryAfter(secs)) => {
                queues::delay_redelivery(
                    &ctx.sqs,
                    &ctx.queues.events,
                    record.receipt_handle.as_deref(),
                    secs,
                )
                .await;
                response.add_failure(id);
            }
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "event failed; SQS will redeliver it");
                response.add_failure(id);
            }
        }
    }
    Ok(response)
}

async fn process(ctx: &Ctx, record: &SqsMessage) -> Result<Outcome, StatusError> {
    let message_id = record.message_id.clone().unwrap_or_default();
    let body = record.body.as_deref().ok_or_else(|| StatusError::EmptyBody {
        message_id: message_id.clone(),
    })?;
    match parse_body(&message_id, body)? {
        Incoming::Runner(ev) => {
            apply_runner_event(ctx, &ev).await?;
            Ok(Outcome::Ack)
        }
        Incoming::Task(task) => {
            let receives = record
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            apply_task_change(ctx, &task, receives).await
        }
        Incoming::Control(ev) => apply_control(ctx, &ev).await,
        Incoming::Other(kind) => {
            tracing::warn!(%kind, "ignoring an event this function does not handle");
            Ok(Outcome::Ack)
        }
    }
}

// ---- applying events ------------------------------------------------------------------------------------

/// How an operation ends.
#[derive(Debug, Clone)]
enum Final {
    Succeeded {
        outputs: BTreeMap<String, serde_json::Value>,
        drift: Option<Vec<ResourceChange>>,
        estimate: Option<CostEstimate>,
        at: OffsetDateTime,
    },
    Failed(UserError),
    Cancelled,
}

/// Whether an event from the holder of `token` may still change `op`.
enum Fence {
    Current,
    Stale,
}

/// The event's token must be the one the operation recorded, and (while the operation runs) the cluster lock
/// must still be held by the operation with that token: a runner whose lock was taken over is a zombie.
async fn fence(
    ctx: &Ctx,
    op: &Operation,
    token: Option<u64>,
    task_arn: Option<&str>,
) -> Result<Fence, StatusError> {
    if let Some(t) = token
        && op.fencing_token != Some(t)
    {
        return Ok(Fence::Stale);
    }
    if let (Some(arn), Some(mine)) = (task_arn, op.task_arn.as_deref())
        && arn != mine
    {
        return Ok(Fence::Stale);
    }
    if !op.status.is_terminal()
        && let Some((owner, held)) = ctx.store.cluster_lock(&op.cluster_id).await?
        && (owner != op.operation_id || Some(held) != op.fencing_token)
    {
        return Ok(Fence::Stale);
    }
    Ok(Fence::Current)
}

async fn record_stale(ctx: &Ctx, id: &OperationId) -> Result<(), StatusError> {
    let op = strato_aws::coordination::update_operation(&ctx.store, id, |o| {
        o.stale_events += 1;
        true
    })
    .await?;
    if let Some(op) = op {
        tracing::warn!(operation = %op.operation_id, stale_events = op.stale_events, "stale event recorded, not applied");
    }
    Ok(())
}

/// A terminal event for an operation that is already terminal. Normally a duplicate with nothing left to do;
/// but if an earlier delivery died between saving the end and releasing, the lock or slot is still held by
/// this operation, and the hand-off is finished now. (Releases are conditional, so nothing is freed twice.)
async fn finish_interrupted_handoff(ctx: &Ctx, op: &Operation) -> Result<(), StatusError> {
    let holds_lock = match (ctx.store.cluster_lock(&op.cluster_id).await?, op.fencing_token) {
        (Some((owner, t)), Some(mine)) => owner == op.operation_id && t == mine,
        _ => false,
    };
    let holds_slot = ctx
        .store
        .tenant_slots(&op.tenant_id)
        .await?
        .iter()
        .any(|s| s == op.operation_id.as_str());
    if holds_lock || holds_slot {
        tracing::warn!(operation = %op.operation_id, "finishing a hand-off an earlier delivery left undone");
        release_and_wake(&ctx.store, &ctx.sqs, &ctx.queues.jobs, op).await?;
    }
    Ok(())
}

pub async fn apply_runner_event(ctx: &Ctx, ev: &RunnerEvent) -> Result<(), StatusError> {
    let id = ev.operation_id();
    for _ in 0..ATTEMPTS {
        let mut op = ctx
            .store
            .get_operation(id)
            .await?
            .ok_or_else(|| StatusError::UnknownOperation(id.clone()))?;
        if let Fence::Stale = fence(ctx, &op, Some(ev.fencing_token()), None).await? {
            return record_stale(ctx, id).await;
        }
        let fin = match ev {
            RunnerEvent::Succeeded {
                outputs,
                drift,
                estimate,
                at,
                ..
            } => Some(Final::Succeeded {
                outputs: outputs.clone(),
                drift: drift.clone(),
                estimate: estimate.clone(),
                at: *at,
            }),
            RunnerEvent::Failed { error, .. } => Some(Final::Failed(error.clone())),
            RunnerEvent::Cancelled { .. } => Some(Final::Cancelled),
            _ => None,
        };
        if op.status.is_terminal() {
            if fin.is_some() {
                finish_interrupted_handoff(ctx, &op).await?;
            }
            // Progress after the end (a late heartbeat) changes nothing.
            return Ok(());
        }
        let mut fin = fin;
        if let (OperationKind::Create, Some(Final::Succeeded { outputs, .. })) = (op.kind, &fin) {
            match readiness(ctx, &op).await? {
                Readiness::Agent(deadline_secs) => {
                    return await_agent(ctx, &op, outputs, deadline_secs).await;
                }
                Readiness::Outputs(required) => {
                    let missing = missing_outputs(&required, outputs);
                    if !missing.is_empty() {
                        fin = Some(Final::Failed(missing_outputs_error(&missing)));
                    }
                }
            }
        }
        if let Some(fin) = fin {
            return finish(ctx, op, fin).await;
        }
        if let RunnerEvent::Heartbeat { fencing_token, .. } = ev
            && !ctx
                .store
                .renew_cluster_lock(
                    &op.cluster_id,
                    &op.operation_id,
                    *fencing_token,
                    LOCK_LEASE,
                    ts::now(),
                )
                .await?
        {
            tracing::warn!(operation = %op.operation_id, "heartbeat from a runner whose lock is gone");
        }
        if !apply_progress(&mut op, ev) {
            return Ok(());
        }
        match ctx.store.save_operation(&mut op, false).await {
            Ok(()) => {
                if let RunnerEvent::StepStarted { step, .. } = ev {
                    announce(ctx, &op, None, Some(step.clone()), None).await;
                }
                return Ok(());
            }
            Err(strato_aws::Error::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StatusError::Contended(id.clone()))
}

// ---- drift ---------------------------------------------------------------------------------------------

fn drift_message(c: &Cluster) -> String {
    if !c.drift.drifted {
        return "no drift: the infrastructure matches the desired state".into();
    }
    let changed: Vec<String> = c
        .drift
        .changed_resources
        .iter()
        .map(|r| format!("{} ({})", r.address, r.actions.join("/")))
        .collect();
    format!(
        "drift detected in {} resource(s): {}; policy {}",
        changed.len(),
        changed.join(", "),
        match c.drift_policy {
            DriftPolicy::Notify => "notify (apply an update to restore the desired state)",
            DriftPolicy::Reconcile => "reconcile (an update was queued to restore it)",
        }
    )
}

/// `reconcile` policy: queue an update that applies the cluster's own spec again, unless one is open.
async fn reconcile(ctx: &Ctx, c: &Cluster) -> Result<(), StatusError> {
    let ops = ctx.store.list_operations(&c.cluster_id).await?;
    if ops
        .iter()
        .any(|o| o.kind == OperationKind::Update && !o.status.is_terminal())
    {
        return Ok(());
    }
    let mut op = Operation::new(
        c.tenant_id.clone(),
        c.cluster_id.clone(),
        OperationKind::Update,
        ts::now(),
    );
    op.spec = Some(c.spec.clone());
    op.requested_by = Some("strato:drift-reconcile".into());
    if let Err(rejected) = submit(&ctx.store, &ctx.sqs, &ctx.queues.jobs, &op).await? {
        tracing::warn!(cluster = %c.cluster_id, ?rejected, "reconcile update not queued: tenant quota");
        return Ok(());
    }
    tracing::info!(cluster = %c.cluster_id, operation = %op.operation_id, "drift: reconcile update queued");
    Ok(())
}

/// `notify` policy: calls the tenant's webhook, if it has one, and notes the outcome on the check. Best
/// effort and bounded (see [`webhook`]): everything that matters is saved before.
async fn notify_webhook(ctx: &Ctx, op: &Operation, c: &Cluster) {
    let hook = match ctx.store.tenant_webhook(&c.tenant_id).await {
        Ok(Some(h)) => h,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(operation = %op.operation_id, error = %e, "tenant webhook unreadable; not called");
            return;
        }
    };
    let event = DriftEvent {
        kind: DRIFT_DETECTED.into(),
        tenant_id: c.tenant_id.clone(),
        cluster_id: c.cluster_id.clone(),
        cluster_name: c.spec.name.to_string(),
        operation_id: op.operation_id.clone(),
        checked_at: c.drift.checked_at.unwrap_or(op.updated_at),
        policy: c.drift_policy,
        changed_resources: c.drift.changed_resources.clone(),
    };
    let Ok(body) = serde_json::to_vec(&event) else {
        return;
    };
    let d = webhook::deliver(
        &ctx.http,
        &hook,
        DRIFT_DETECTED,
        op.operation_id.as_str(),
        &body,
        &ctx.webhook,
    )
    .await;
    if d.delivered {
        tracing::info!(operation = %op.operation_id, to = %hook.display_url(), attempts = d.attempts, "drift webhook delivered");
    } else {
        tracing::warn!(operation = %op.operation_id, to = %hook.display_url(), attempts = d.attempts,
            error = d.error.as_deref().unwrap_or_default(), "drift webhook not delivered");
    }
    let line = webhook::note(&hook, DRIFT_DETECTED, &d, ts::now());
    if let Err(e) = update_operation(&ctx.store, &op.operation_id, |o| {
        o.notes.push(line.clone());
        true
    })
    .await
    {
        tracing::warn!(operation = %op.operation_id, error = %e, "webhook outcome not recorded");
    }
}

// ---- frames for WebSocket subscribers -------------------------------------------------------------------

/// Tells the operation's subscribers where it stands (via the logs queue and log-fanout). Best effort: the
/// state is already saved, and a lost frame is repaired by the next one or by reading the operation.
async fn announce(
    ctx: &Ctx,
    op: &Operation,
    cluster: Option<&Cluster>,
    step: Option<String>,
    message: Option<String>,
) {
    let state = match cluster {
        Some(c) => Some(c.state),
        // Status frames carry a cluster state; an estimate has none (its end frame still goes out).
        None if !op.kind.has_cluster() => None,
        None => ctx
            .store
            .get_cluster(&op.tenant_id, &op.cluster_id)
            .await
            .ok()
            .flatten()
            .map(|c| c.state),
    };
    let Some(cluster_state) = state else { return };
    let frame = LogFrame::Status {
        operation_id: op.operation_id.clone(),
        cluster_id: op.cluster_id.clone(),
        cluster_state,
        operation_status: op.status,
        step,
        message,
        at: ts::now(),
    };
    if let Err(e) = publish_frame(&ctx.sqs, &ctx.queues.logs, &frame).await {
        tracing::warn!(operation = %op.operation_id, error = %e, "status frame not sent");
    }
}

/// The last frame of an operation: its final status and the number of its last archived log line, so a
/// subscriber can tell whether it has every line.
async fn end_stream(ctx: &Ctx, op: &Operation) {
    let last_seq = match strato_aws::log_io::last_archived_seq(
        &ctx.s3,
        &ctx.config.names.bucket("artifacts"),
        &op.operation_id,
    )
    .await
    {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(operation = %op.operation_id, error = %e, "log archive unreadable; end frame says 0");
            0
        }
    };
    let frame = LogFrame::End {
        operation_id: op.operation_id.clone(),
        final_status: op.status,
        last_seq,
    };
    if let Err(e) = publish_frame(&ctx.sqs, &ctx.queues.logs, &frame).await {
        tracing::warn!(operation = %op.operation_id, error = %e, "end frame not sent");
    }
}

// ---- cluster agent handshake -----------------------------------------------------------------------------

const CONFIGURE_STEP: &str = "configure";

/// How a finished create proves the cluster is usable.
enum Readiness {
    /// The template installs the cluster agent: wait for it (deadline in seconds).
    Agent(u64),
    /// No agent: these outputs must be present and non-empty.
    Outputs(Vec<String>),
}

async fn readiness(ctx: &Ctx, op: &Operation) -> Result<Readiness, StatusError> {
    let Some(spec) = &op.spec else {
        return Ok(Readiness::Outputs(Vec::new()));
    };
    let stored = ctx
        .store
        .get_template(&spec.template.name, &spec.template.version)
        .await?;
    let Some(t) = stored else {
        // The API validated the create against this template; a catalog that lost it is an operator problem,
        // not a reason to keep the tenant's cluster in limbo.
        tracing::warn!(template = %spec.template.name, version = %spec.template.version,
            "template of a finished create is not in the catalog; no outputs to verify");
        return Ok(Readiness::Outputs(Vec::new()));
    };
    Ok(match t.template.manifest.agent {
        Some(a) => Readiness::Agent(a.deadline_secs),
        None => Readiness::Outputs(t.template.manifest.required_outputs),
    })
}

/// The outputs a template promised but the apply did not produce (absent, null or an empty string/list).
fn missing_outputs(required: &[String], outputs: &BTreeMap<String, serde_json::Value>) -> Vec<String> {
    required
        .iter()
        .filter(|k| match outputs.get(k.as_str()) {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::String(s)) => s.trim().is_empty(),
            Some(serde_json::Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        })
        .cloned()
        .collect()
}

fn missing_outputs_error(missing: &[String]) -> UserError {
    UserError::new(
        ErrorCategory::InvalidConfiguration,
        "verify outputs",
        format!(
            "the apply finished but the template's required outputs are missing: {}",
            missing.join(", ")
        ),
    )
    .with_fix(
        "The template's Terraform did not produce these outputs, so the cluster cannot be reached. Check that \
         its modules declare them in outputs.tf and that the resources behind them were created, then retry \
         (POST /v1/clusters/{id}/retry) or delete the cluster.",
    )
}

/// Apply finished for a template with an agent: the cluster is CONFIGURING and the create stays open (lock
/// held) until the agent reports enough Ready nodes or the deadline passes.
async fn await_agent(
    ctx: &Ctx,
    op: &Operation,
    outputs: &BTreeMap<String, serde_json::Value>,
    deadline_secs: u64,
) -> Result<(), StatusError> {
    let deadline = ts::now() + time::Duration::seconds(deadline_secs as i64);
    let c = update_cluster(&ctx.store, &op.tenant_id, &op.cluster_id, |c| {
        if c.state != ClusterState::Provisioning {
            return Ok(false);
        }
        step_to(c, ClusterState::Configuring);
        c.outputs = outputs.clone();
        c.configuring_deadline = Some(deadline);
        Ok(true)
    })
    .await?;
    update_operation(&ctx.store, &op.operation_id, |o| {
        if o.status.is_terminal() || o.steps.iter().any(|s| s.name == CONFIGURE_STEP) {
            return false;
        }
        o.status = OperationStatus::Running;
        o.steps.push(Step {
            name: CONFIGURE_STEP.into(),
            started_at: ts::now(),
            finished_at: None,
            ok: None,
        });
        true
    })
    .await?;
    let event = ControlEvent::ConfigureDeadline {
        operation_id: op.operation_id.clone(),
        cluster_id: op.cluster_id.clone(),
        deadline: c.configuring_deadline.unwrap_or(deadline),
    };
    let body = serde_json::to_string(&event).map_err(|e| StatusError::BadBody {
        message_id: String::new(),
        reason: e.to_string(),
    })?;
    // SQS delays at most 15 minutes; a later deadline is re-delayed when the timer fires early.
    ctx.sqs
        .send_message()
        .queue_url(&ctx.queues.events)
        .message_body(body)
        .delay_seconds(deadline_secs.min(900) as i32)
        .send()
        .await
        .map_err(|e| strato_aws::Error::aws("SendMessage", e))?;
    Ok(())
}

fn close_configure_step(o: &mut Operation, ok: bool) -> bool {
    match o
        .steps
        .iter_mut()
        .find(|s| s.name == CONFIGURE_STEP && s.finished_at.is_none())
    {
        Some(step) => {
            step.finished_at = Some(ts::now());
            step.ok = Some(ok);
            true
        }
        None => false,
    }
}

async fn apply_control(ctx: &Ctx, ev: &ControlEvent) -> Result<Outcome, StatusError> {
    let (op_id, cluster_id) = match ev {
        ControlEvent::AgentReady {
            operation_id,
            cluster_id,
            ..
        }
        | ControlEvent::ConfigureDeadline {
            operation_id,
            cluster_id,
            ..
        } => (operation_id, cluster_id),
    };
    let Some(op) = ctx.store.get_operation(op_id).await? else {
        return Err(StatusError::UnknownOperation(op_id.clone()));
    };
    let Some(c) = ctx.store.find_cluster(cluster_id).await? else {
        return Ok(Outcome::Ack);
    };
    // Duplicates and late timers: only a create still waiting in CONFIGURING is affected.
    if op.status.is_terminal()
        || op.kind != OperationKind::Create
        || &op.cluster_id != cluster_id
        || c.state != ClusterState::Configuring
    {
        return Ok(Outcome::Ack);
    }
    let fin = match ev {
        ControlEvent::AgentReady { .. } => {
            update_cluster(&ctx.store, &op.tenant_id, &op.cluster_id, |c| {
                let moved = step_to(c, ClusterState::Active);
                c.configuring_deadline = None;
                c.last_error = None;
                Ok(moved)
            })
            .await?;
            Final::Succeeded {
                outputs: c.outputs.clone(),
                drift: None,
                estimate: None,
                at: ts::now(),
            }
        }
        ControlEvent::ConfigureDeadline { deadline, .. } => {
            let left = (*deadline - ts::now()).whole_seconds();
            if left > 0 {
                return Ok(Outcome::RetryAfter(left.min(900) as i32));
            }
            Final::Failed(
                UserError::new(
                    ErrorCategory::Timeout,
                    CONFIGURE_STEP,
                    "the cluster agent did not register with enough Ready nodes before the deadline",
                )
                .with_fix(
                    "Check that the nodes can reach the control-plane URL and that the agent runs \
                 (kubectl -n strato-system logs deploy/strato-agent), then retry the cluster.",
                ),
            )
        }
    };
    let ok = matches!(fin, Final::Succeeded { .. });
    let op = update_operation(&ctx.store, &op.operation_id, |o| {
        !o.status.is_terminal() && close_configure_step(o, ok)
    })
    .await?
    .unwrap_or(op);
    finish(ctx, op, fin).await?;
    Ok(Outcome::Ack)
}

/// Steps and heartbeats. Returns whether anything changed. Order-tolerant: steps are upserted by name (a
/// finish that overtook its start still leaves one finished step) and kept in start order.
fn apply_progress(op: &mut Operation, ev: &RunnerEvent) -> bool {
    let before = (op.steps.clone(), op.heartbeat_at, op.status, op.estimate.clone());
    match ev {
        RunnerEvent::StepStarted { step, at, .. } => match op.steps.iter_mut().find(|s| &s.name == step) {
            // Started earlier than the finish-only placeholder says.
            Some(s) => s.started_at = s.started_at.min(*at),
            None => op.steps.push(Step {
                name: step.clone(),
                started_at: *at,
                finished_at: None,
                ok: None,
            }),
        },
        RunnerEvent::StepFinished { step, ok, at, .. } => match op.steps.iter_mut().find(|s| &s.name == step)
        {
            Some(s) => {
                s.finished_at = Some(*at);
                s.ok = Some(*ok);
            }
            None => op.steps.push(Step {
                name: step.clone(),
                started_at: *at,
                finished_at: Some(*at),
                ok: Some(*ok),
            }),
        },
        RunnerEvent::Heartbeat { at, .. } => {
            op.heartbeat_at = Some(op.heartbeat_at.map_or(*at, |h| h.max(*at)));
        }
        RunnerEvent::PlanReady {
            stage,
            estimate: Some(estimate),
            ..
        } => op
            .estimate
            .get_or_insert_with(CostEstimate::empty)
            .merge_stage(stage, estimate),
        _ => {}
    }
    op.steps.sort_by_key(|s| s.started_at);
    if matches!(op.status, OperationStatus::Queued | OperationStatus::Dispatched) {
        op.status = OperationStatus::Running;
    }
    before != (op.steps.clone(), op.heartbeat_at, op.status, op.estimate.clone())
}

async fn apply_task_change(ctx: &Ctx, task: &TaskStateChange, receives: u32) -> Result<Outcome, StatusError> {
    let Some(id) = task.operation_id() else {
        tracing::info!(task = %task.task_arn, "ECS task not started by Strato; ignored");
        return Ok(Outcome::Ack);
    };
    if task.last_status != "STOPPED" {
        // Runner events report progress; only the stop says something they cannot.
        return Ok(Outcome::Ack);
    }
    for _ in 0..ATTEMPTS {
        let Some(op) = ctx.store.get_operation(&id).await? else {
            tracing::warn!(operation = %id, task = %task.task_arn, "ECS event for an unknown operation; ignored");
            return Ok(Outcome::Ack);
        };
        if let Fence::Stale = fence(ctx, &op, task.fencing_token(), Some(&task.task_arn)).await? {
            record_stale(ctx, &id).await?;
            return Ok(Outcome::Ack);
        }
        if op.status.is_terminal() {
            finish_interrupted_handoff(ctx, &op).await?;
            return Ok(Outcome::Ack);
        }
        let runner = task.runner();
        let exit_code = runner.and_then(|c| c.exit_code);
        let container_reason = runner.and_then(|c| c.reason.as_deref());
        let step = op.current_step().map_or("runner".to_owned(), |s| s.name.clone());
        let what = if exit_code == Some(0) {
            // Exit 0 means a final report was sent; give it time to arrive before concluding it was lost.
            if receives < FINAL_REPORT_GRACE_RECEIVES {
                return Ok(Outcome::RetryAfter(FINAL_REPORT_RETRY_SECS));
            }
            "runner exited 0 but its final report never arrived".to_owned()
        } else {
            let mut what = format!(
                "runner stopped without a final report: exit code {}",
                exit_code.map_or("none".to_owned(), |c| c.to_string())
            );
            for reason in [container_reason, task.stopped_reason.as_deref()]
                .into_iter()
                .flatten()
            {
                what.push_str(", ");
                what.push_str(reason);
            }
            what
        };
        let err = UserError::new(ErrorCategory::Internal, step, what).with_fix(
            "The runner task ended unexpectedly (for example out of memory, or stopped by ECS); retry the \
             operation, and report the operation id if it happens again.",
        );
        match finish(ctx, op, Final::Failed(err)).await {
            Err(StatusError::Shared(strato_aws::Error::Conflict(_))) => continue,
            other => return other.map(|()| Outcome::Ack),
        }
    }
    Err(StatusError::Contended(id))
}

/// Ends a running operation: cluster first (idempotent, so a crash before the operation is saved is repaired
/// by redelivery), then the operation, then the hand-off. Only the delivery that made the operation terminal
/// hands off.
async fn finish(ctx: &Ctx, op: Operation, fin: Final) -> Result<(), StatusError> {
    let cluster = apply_to_cluster(ctx, &op, &fin).await?;
    if op.kind == OperationKind::Delete
        && matches!(fin, Final::Succeeded { .. })
        && let Some(c) = &cluster
        && c.state == ClusterState::Deleted
    {
        ctx.store.release_cluster_name(c).await?;
    }
    let mut done = op;
    for _ in 0..ATTEMPTS {
        if done.status.is_terminal() {
            // Someone else ended it concurrently; they hand off.
            return Ok(());
        }
        match &fin {
            Final::Succeeded { estimate, .. } => {
                done.status = OperationStatus::Succeeded;
                if estimate.is_some() {
                    done.estimate.clone_from(estimate);
                }
            }
            Final::Failed(err) => {
                done.status = OperationStatus::Failed;
                done.error = Some(err.clone());
            }
            Final::Cancelled => {
                done.status = OperationStatus::Cancelled;
            }
        }
        done.wait_reason = None;
        match ctx.store.save_operation(&mut done, false).await {
            Ok(()) => {
                tracing::info!(operation = %done.operation_id, status = ?done.status, "operation ended");
                release_and_wake(&ctx.store, &ctx.sqs, &ctx.queues.jobs, &done).await?;
                let mut message = done.error.as_ref().map(|e| e.to_string());
                let mut notify = None;
                if let (OperationKind::DriftCheck, Some(c)) = (done.kind, &cluster) {
                    message = Some(drift_message(c));
                    if c.drift.drifted && c.drift.operation_id.as_ref() == Some(&done.operation_id) {
                        match c.drift_policy {
                            DriftPolicy::Reconcile => reconcile(ctx, c).await?,
                            DriftPolicy::Notify => notify = Some(c),
                        }
                    }
                }
                announce(ctx, &done, cluster.as_ref(), None, message).await;
                end_stream(ctx, &done).await;
                if let Some(c) = notify {
                    notify_webhook(ctx, &done, c).await;
                }
                return Ok(());
            }
            Err(strato_aws::Error::Conflict(_)) => {
                done = ctx
                    .store
                    .get_operation(&done.operation_id)
                    .await?
                    .ok_or_else(|| StatusError::UnknownOperation(done.operation_id.clone()))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(StatusError::Contended(done.operation_id))
}

/// Moves `cluster` to `to` if the state machine allows it; `false` when it is already there. A refused
/// transition is logged and leaves the cluster as it is: the operation's own outcome is still recorded.
fn step_to(c: &mut Cluster, to: ClusterState) -> bool {
    if c.state == to {
        return false;
    }
    match transition(c.state, to) {
        Ok(_) => {
            c.state = to;
            true
        }
        Err(e) => {
            tracing::warn!(cluster = %c.cluster_id, error = %e, "cluster left as it is");
            false
        }
    }
}

fn fail_cluster(c: &mut Cluster, err: &UserError) -> bool {
    let moved = step_to(c, ClusterState::Failed);
    if c.state == ClusterState::Failed && c.last_error.as_ref() != Some(err) {
        c.last_error = Some(err.clone());
        return true;
    }
    moved
}

async fn apply_to_cluster(ctx: &Ctx, op: &Operation, fin: &Final) -> Result<Option<Cluster>, StatusError> {
    if !op.kind.has_cluster() {
        // An estimate's id names no cluster: however it ends, no cluster is read or written.
        return Ok(None);
    }
    let store = &ctx.store;
    let (tenant, id) = (&op.tenant_id, &op.cluster_id);
    let cluster = match (op.kind, fin) {
        (OperationKind::Create, Final::Succeeded { outputs, .. }) => {
            // CONFIGURING is a real, saved intermediate state. Templates with an agent wait there (see
            // `await_agent`); here the required outputs were verified before, so it goes on to ACTIVE.
            update_cluster(store, tenant, id, |c| {
                if c.state != ClusterState::Provisioning {
                    return Ok(false);
                }
                step_to(c, ClusterState::Configuring);
                c.outputs = outputs.clone();
                Ok(true)
            })
            .await?;
            update_cluster(store, tenant, id, |c| {
                if c.state != ClusterState::Configuring {
                    return Ok(false);
                }
                step_to(c, ClusterState::Active);
                c.configuring_deadline = None;
                c.last_error = None;
                Ok(true)
            })
            .await?
        }
        (OperationKind::Update, Final::Succeeded { outputs, .. }) => {
            update_cluster(store, tenant, id, |c| {
                if !step_to(c, ClusterState::Active) {
                    return Ok(false);
                }
                if !outputs.is_empty() {
                    c.outputs = outputs.clone();
                }
                if let Some(spec) = &op.spec {
                    c.spec = spec.clone();
                }
                c.last_error = None;
                Ok(true)
            })
            .await?
        }
        (OperationKind::Delete, Final::Succeeded { .. }) => {
            update_cluster(store, tenant, id, |c| {
                let moved = step_to(c, ClusterState::Deleted);
                if moved {
                    c.outputs.clear();
                }
                Ok(moved)
            })
            .await?
        }
        (OperationKind::DriftCheck, Final::Succeeded { drift, at, .. }) => {
            let changes = drift.clone().unwrap_or_default();
            update_cluster(store, tenant, id, |c| {
                if c.drift.operation_id.as_ref() == Some(&op.operation_id) {
                    return Ok(false);
                }
                c.drift = DriftInfo {
                    drifted: !changes.is_empty(),
                    checked_at: Some(*at),
                    changed_resources: changes.clone(),
                    operation_id: Some(op.operation_id.clone()),
                };
                Ok(true)
            })
            .await?
        }
        (OperationKind::Plan | OperationKind::Estimate, Final::Succeeded { .. }) => return Ok(None),
        (kind, Final::Failed(err)) if kind.mutates() => {
            update_cluster(store, tenant, id, |c| Ok(fail_cluster(c, err))).await?
        }
        (OperationKind::Update, Final::Cancelled) => {
            // The apply was interrupted by request; the previous configuration is still what runs.
            update_cluster(store, tenant, id, |c| Ok(step_to(c, ClusterState::Active))).await?
        }
        (kind, Final::Cancelled) if kind.mutates() => {
            let err = UserError::new(
                ErrorCategory::Cancelled,
                op.current_step().map_or("runner", |s| s.name.as_str()),
                format!(
                    "the {} was cancelled before it finished; resources may be half-built",
                    if kind == OperationKind::Create {
                        "create"
                    } else {
                        "delete"
                    }
                ),
            );
            update_cluster(store, tenant, id, |c| Ok(fail_cluster(c, &err))).await?
        }
        // Plans and drift checks that fail or are cancelled leave the cluster as it is.
        _ => return Ok(None),
    };
    Ok(Some(cluster))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strato_domain::ids::{ClusterId, TenantId};

    fn sample_body(rel: &str) -> String {
        let path = format!("{}/../../events/status/{rel}", env!("CARGO_MANIFEST_DIR"));
        let event: SqsEvent = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        event.records[0].body.clone().unwrap()
    }

    #[test]
    fn ecs_stopped_sample_names_operation_token_and_exit() {
        let Incoming::Task(t) = parse_body("m", &sample_body("ecs-task-stopped-oom.json")).unwrap() else {
            panic!("not a task change");
        };
        assert_eq!(
            t.operation_id().unwrap().as_str(),
            "op-0192f1a2b3c47d8e9f0a1b2c3d4e5f60"
        );
        assert_eq!(t.fencing_token(), Some(1));
        assert_eq!(t.last_status, "STOPPED");
        assert_eq!(t.runner().unwrap().exit_code, Some(137));
    }

    #[test]
    fn operation_id_falls_back_to_started_by() {
        let mut v: serde_json::Value =
            serde_json::from_str(&sample_body("ecs-task-stopped-exit0.json")).unwrap();
        v["detail"]["overrides"] = serde_json::json!({});
        let Incoming::Task(t) = parse_body("m", &v.to_string()).unwrap() else {
            panic!()
        };
        assert_eq!(
            t.operation_id().unwrap().as_str(),
            "op-0192f1a2b3c47d8e9f0a1b2c3d4e5f60"
        );
        assert_eq!(t.fencing_token(), None);
    }

    #[test]
    fn every_runner_sample_parses_and_other_events_are_recognised() {
        for name in [
            "step-started",
            "step-finished",
            "heartbeat",
            "succeeded",
            "succeeded-drift",
            "failed",
            "cancelled",
        ] {
            let body = sample_body(&format!("runner-{name}.json"));
            assert!(
                matches!(parse_body("m", &body), Ok(Incoming::Runner(_))),
                "{name}"
            );
        }
        let other = r#"{"detail-type": "ECS Container Instance State Change", "detail": {}}"#;
        assert!(matches!(parse_body("m", other), Ok(Incoming::Other(_))));
        assert!(matches!(
            parse_body("m", r#"{"type": "teleported"}"#),
            Err(StatusError::BadBody { .. })
        ));
    }

    #[test]
    fn progress_is_order_tolerant_and_idempotent() {
        let at = |s: &str| ts::parse(s).unwrap();
        let mut op = Operation::new(
            "acme".parse::<TenantId>().unwrap(),
            ClusterId::generate(),
            OperationKind::Create,
            ts::now(),
        );
        op.status = OperationStatus::Dispatched;
        let id = op.operation_id.clone();
        let finished = RunnerEvent::StepFinished {
            operation_id: id.clone(),
            fencing_token: 1,
            step: "apply".into(),
            ok: false,
            at: at("2026-11-22T04:40:00Z"),
        };
        let started = RunnerEvent::StepStarted {
            operation_id: id.clone(),
            fencing_token: 1,
            step: "apply".into(),
            at: at("2026-11-22T04:31:00Z"),
        };
        assert!(apply_progress(&mut op, &finished));
        assert_eq!(op.status, OperationStatus::Running);
        assert!(apply_progress(&mut op, &started));
        assert!(!apply_progress(&mut op, &started), "a duplicate changes nothing");
        assert!(!apply_progress(&mut op, &finished));
        assert_eq!(op.steps.len(), 1);
        let s = &op.steps[0];
        assert_eq!(s.started_at, at("2026-11-22T04:31:00Z"));
        assert_eq!(s.finished_at, Some(at("2026-11-22T04:40:00Z")));
        assert_eq!(s.ok, Some(false));
    }
}
