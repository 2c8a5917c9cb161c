//! `strato-dispatcher`: consumes `jobs.fifo`. For each job it takes the cluster lock (fencing token) and a
//! tenant slot, moves the cluster into its working state, and starts the runner as a Fargate task. A job
//! that cannot run yet is parked on its operation (`wait_reason`) and acknowledged; the status function
//! re-enqueues it when the lock or a slot frees up, so nothing polls.
//!
//! One runner per operation: all of a cluster's jobs share a FIFO message group, so SQS never gives two of
//! them to the dispatcher at once (the function's timeout is below the queue's visibility timeout); a
//! delivery that died after RunTask is finished by its redelivery, which finds the task by `startedBy` or,
//! since ListTasks is eventually consistent, gets it back from RunTask's client token.
//!
//! An estimate has no cluster: its lock is on its own synthetic id (free, so taken at once; the hand-off
//! deletes it when the estimate ends) and no cluster state is read or moved.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_ecs::error::ProvideErrorMetadata;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, ContainerOverride, DesiredStatus, KeyValuePair, LaunchType,
    NetworkConfiguration, TaskOverride,
};
use strato_aws::aws::AwsClients;
use strato_aws::coordination::{
    TENANT_LIMIT_REASON, cluster_busy_reason, release_and_wake, update_cluster, update_operation,
    update_operation_from,
};
use strato_aws::env::{Env, EnvError};
use strato_aws::queues::{self, QueueUrls};
use strato_aws::resources::{self, Names};
use strato_aws::store::{LockOutcome, Store};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID, JobMessage};
use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::state_machine::transition;
use strato_domain::ts;

pub use strato_aws::coordination::LOCK_LEASE;

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error("record {message_id} has no body")]
    EmptyBody { message_id: String },
    #[error("record {message_id} is not a job message: {source}")]
    BadBody {
        message_id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("operation {0} does not exist")]
    UnknownOperation(String),
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

/// Where and how runners start. Read once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerSettings {
    pub cluster: String,
    pub task_definition: String,
    pub container: String,
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub assign_public_ip: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
    pub runner: RunnerSettings,
}

impl Config {
    pub fn from_env() -> Result<Self, DispatchError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// `lookup` stands for the environment, so the parsing is testable without mutating it.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, DispatchError> {
        let env = Env::new(lookup);
        Ok(Self {
            names: env.names()?,
            runner: RunnerSettings {
                cluster: env.required("STRATO_RUNNER_CLUSTER")?,
                task_definition: env.required("STRATO_RUNNER_TASK_DEFINITION")?,
                container: env.or("STRATO_RUNNER_CONTAINER", "runner"),
                subnets: env.list("STRATO_RUNNER_SUBNETS")?,
                security_groups: env.list("STRATO_RUNNER_SECURITY_GROUPS")?,
                assign_public_ip: env.flag("STRATO_RUNNER_ASSIGN_PUBLIC_IP", false)?,
            },
        })
    }
}

/// Everything a handler needs, built once per process.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub config: Config,
    pub store: Store,
    pub sqs: aws_sdk_sqs::Client,
    pub ecs: aws_sdk_ecs::Client,
    pub queues: QueueUrls,
}

impl Ctx {
    pub async fn new(
        config: Config,
        aws: &AwsClients,
        ecs: aws_sdk_ecs::Client,
    ) -> Result<Self, DispatchError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names),
            sqs: aws.sqs.clone(),
            ecs,
            queues,
            config,
        })
    }
}

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Done with (started, parked, failed for good, or nothing to do): delete the message.
    Ack,
    /// Try again after this many seconds (runner could not start for a transient reason).
    RetryAfter(i32),
}

/// Processes a batch. Records that must be retried are reported in `batch_item_failures`; on this FIFO queue
/// a failed record also fails the later records of its message group unprocessed, so one cluster's jobs are
/// never reordered (other groups go on).
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, DispatchError> {
    let mut response = SqsBatchResponse::default();
    let mut failed_groups: Vec<String> = Vec::new();
    for record in &event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let group = record.attributes.get("MessageGroupId").cloned();
        if let Some(g) = &group
            && failed_groups.contains(g)
        {
            response.add_failure(id);
            continue;
        }
        let outcome = match process(ctx, record).await {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "job failed; SQS will redeliver it");
                Outcome::RetryAfter(0)
            }
        };
        if let Outcome::RetryAfter(delay) = outcome {
            if delay > 0 {
                queues::delay_redelivery(
                    &ctx.sqs,
                    &ctx.queues.jobs,
                    record.receipt_handle.as_deref(),
                    delay,
                )
                .await;
            }
            response.add_failure(id);
            failed_groups.extend(group);
        }
    }
    Ok(response)
}

fn receive_count(record: &SqsMessage) -> u32 {
    record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|c| c.parse().ok())
        .unwrap_or(1)
}

/// Exponential backoff by delivery count: 10 s, 20 s, 40 s… capped at 15 minutes.
pub fn backoff_secs(receive_count: u32) -> i32 {
    let exp = receive_count.saturating_sub(1).min(10);
    (10_i32 << exp).min(900)
}

async fn process(ctx: &Ctx, record: &SqsMessage) -> Result<Outcome, DispatchError> {
    let message_id = record.message_id.clone().unwrap_or_default();
    let body = record.body.as_deref().ok_or_else(|| DispatchError::EmptyBody {
        message_id: message_id.clone(),
    })?;
    let job: JobMessage =
        serde_json::from_str(body).map_err(|source| DispatchError::BadBody { message_id, source })?;
    dispatch(ctx, &job, receive_count(record)).await
}

async fn dispatch(ctx: &Ctx, job: &JobMessage, receive_count: u32) -> Result<Outcome, DispatchError> {
    let store = &ctx.store;
    let op = store
        .get_operation(&job.operation_id)
        .await?
        .ok_or_else(|| DispatchError::UnknownOperation(job.operation_id.to_string()))?;
    // Redelivery, or a wake-up for an operation that already ran: nothing to do.
    if op.status.is_terminal() || op.task_arn.is_some() {
        tracing::info!(operation = %op.operation_id, status = ?op.status, "already dispatched or finished");
        return Ok(Outcome::Ack);
    }

    let token = match store
        .acquire_cluster_lock(&op.cluster_id, &op.operation_id, LOCK_LEASE, ts::now())
        .await?
    {
        LockOutcome::Acquired { fencing_token } => fencing_token,
        LockOutcome::Held { owner } => {
            park(ctx, &op, cluster_busy_reason(&owner)).await?;
            // Lost-wakeup guard: the holder may have finished (and looked for waiters) between our attempt
            // and the park being visible. Trying once more after parking closes that window.
            match store
                .acquire_cluster_lock(&op.cluster_id, &op.operation_id, LOCK_LEASE, ts::now())
                .await?
            {
                LockOutcome::Acquired { fencing_token } => fencing_token,
                LockOutcome::Held { owner } => {
                    tracing::info!(operation = %op.operation_id, %owner, "parked: cluster busy");
                    return Ok(Outcome::Ack);
                }
            }
        }
    };

    let quotas = store.quotas(&op.tenant_id).await?;
    let limit = quotas.max_concurrent_operations;
    if !store
        .acquire_tenant_slot(&op.tenant_id, &op.operation_id, limit)
        .await?
    {
        park(ctx, &op, TENANT_LIMIT_REASON.to_owned()).await?;
        // Same lost-wakeup guard as for the lock: a slot freed before the park was visible woke nobody.
        if !store
            .acquire_tenant_slot(&op.tenant_id, &op.operation_id, limit)
            .await?
        {
            store
                .release_cluster_lock(&op.cluster_id, &op.operation_id, token)
                .await?;
            tracing::info!(operation = %op.operation_id, limit, "parked: tenant at its concurrency limit");
            return Ok(Outcome::Ack);
        }
    }

    // Claim: the token is recorded before the runner exists, so its first events are never mistaken for
    // stale ones, and the operation leaves QUEUED, so from here a cancel is a flag (API answers 202) rather
    // than an in-place CANCELLED that would race with RunTask (the API's write is conditional).
    let Some(op) = update_operation_from(store, op, |o| {
        if o.status.is_terminal() {
            return false;
        }
        let changed =
            o.fencing_token != Some(token) || o.wait_reason.is_some() || o.status == OperationStatus::Queued;
        o.fencing_token = Some(token);
        o.wait_reason = None;
        if o.status == OperationStatus::Queued {
            o.status = OperationStatus::Dispatched;
        }
        changed
    })
    .await?
    else {
        return Err(DispatchError::UnknownOperation(job.operation_id.to_string()));
    };
    if op.status.is_terminal() {
        // Cancelled while we took the lock: give lock and slot back and wake the next operation.
        tracing::info!(operation = %op.operation_id, status = ?op.status, "ended before it could start");
        release_and_wake(store, &ctx.sqs, &ctx.queues.jobs, &op).await?;
        return Ok(Outcome::Ack);
    }
    if op.cancel_requested && op.task_arn.is_none() {
        cancel_unstarted(ctx, &op).await?;
        return Ok(Outcome::Ack);
    }

    if let Some(refusal) = enter_working_state(ctx, &op).await? {
        let what = format!("cannot start the {} operation: {refusal}", op.kind.as_str());
        let fix = match op.kind {
            OperationKind::Update => {
                "Only an ACTIVE cluster can be updated; retry the create of a FAILED cluster or delete it."
            }
            OperationKind::Create => "Only a new or FAILED cluster can be (re)created.",
            OperationKind::Delete => "Wait for the running operation to finish, then delete the cluster.",
            OperationKind::Plan | OperationKind::DriftCheck => {
                "The cluster was deleted; there is nothing to check."
            }
            // Never refused: an estimate has no cluster to be in the wrong state.
            OperationKind::Estimate => "Request the estimate again.",
        };
        let err = UserError::new(ErrorCategory::InvalidConfiguration, "dispatch", what).with_fix(fix);
        fail(ctx, &op, err, false).await?;
        return Ok(Outcome::Ack);
    }

    let task_arn = match existing_task(ctx, &op).await? {
        Some(arn) => arn,
        None => match run_task(ctx, &op, token).await {
            Ok(arn) => arn,
            Err(StartFailure::Transient(reason))
                if receive_count < resources::queue("jobs").max_receive_count =>
            {
                let delay = backoff_secs(receive_count);
                tracing::warn!(operation = %op.operation_id, %reason, delay, "runner could not start yet; retrying");
                return Ok(Outcome::RetryAfter(delay));
            }
            Err(StartFailure::Transient(reason)) => {
                let what =
                    format!("the runner could not be started after {receive_count} attempts: {reason}");
                let err = UserError::new(ErrorCategory::Transient, "dispatch", what);
                fail(ctx, &op, err, true).await?;
                return Ok(Outcome::Ack);
            }
            Err(StartFailure::Fatal(reason)) => {
                let what = format!("the runner could not be started: {reason}");
                let err = UserError::new(ErrorCategory::Internal, "dispatch", what);
                fail(ctx, &op, err, true).await?;
                return Ok(Outcome::Ack);
            }
        },
    };

    update_operation_from(store, op.clone(), |o| {
        if o.task_arn.is_some() || o.status.is_terminal() {
            return false;
        }
        o.task_arn = Some(task_arn.clone());
        o.status = OperationStatus::Dispatched;
        o.attempt += 1;
        true
    })
    .await?;
    // A cancel flagged from here on is the runner's to notice (it polls within one heartbeat).
    tracing::info!(operation = %op.operation_id, %task_arn, fencing_token = token, "runner started");
    Ok(Outcome::Ack)
}

async fn park(ctx: &Ctx, op: &Operation, reason: String) -> Result<(), DispatchError> {
    update_operation(&ctx.store, &op.operation_id, |o| {
        if o.status != OperationStatus::Queued || o.wait_reason.as_deref() == Some(reason.as_str()) {
            return false;
        }
        o.wait_reason = Some(reason.clone());
        true
    })
    .await?;
    Ok(())
}

/// Moves the cluster into the state its operation works in; `Some(reason)` when the state machine refuses.
/// Already being there counts as done: that is this same operation's earlier, interrupted delivery (only the
/// lock holder moves a cluster).
async fn enter_working_state(ctx: &Ctx, op: &Operation) -> Result<Option<String>, strato_aws::Error> {
    let target = match op.kind {
        OperationKind::Create => Some(ClusterState::Provisioning),
        OperationKind::Update => Some(ClusterState::Updating),
        OperationKind::Delete => Some(ClusterState::Deleting),
        // Read-only runs change no state.
        OperationKind::Plan | OperationKind::DriftCheck => None,
        // No cluster stands behind an estimate's id: nothing to read or move.
        OperationKind::Estimate => return Ok(None),
    };
    let mut refusal = None;
    update_cluster(&ctx.store, &op.tenant_id, &op.cluster_id, |c| {
        refusal = None;
        let Some(target) = target else {
            if c.state == ClusterState::Deleted {
                refusal = Some("the cluster is DELETED".to_owned());
            }
            return Ok(false);
        };
        if c.state == target {
            return Ok(false);
        }
        if let Err(e) = transition(c.state, target) {
            refusal = Some(e.to_string());
            return Ok(false);
        }
        c.state = target;
        if op.kind == OperationKind::Create {
            c.last_error = None;
        }
        Ok(true)
    })
    .await?;
    Ok(refusal)
}

/// A cancel that arrived after the claim but before any runner existed: nothing was touched, so the
/// operation ends CANCELLED, a first create's PENDING cluster is recorded FAILED (so it can be retried or
/// deleted), and other clusters stay as they are.
async fn cancel_unstarted(ctx: &Ctx, op: &Operation) -> Result<(), DispatchError> {
    let err = UserError::new(
        ErrorCategory::Cancelled,
        "dispatch",
        "the operation was cancelled before its runner started; nothing was changed",
    );
    if op.kind == OperationKind::Create {
        update_cluster(&ctx.store, &op.tenant_id, &op.cluster_id, |c| {
            if c.state != ClusterState::Pending {
                return Ok(false);
            }
            transition(c.state, ClusterState::Failed)?;
            c.state = ClusterState::Failed;
            c.last_error = Some(err.clone());
            Ok(true)
        })
        .await?;
    }
    let Some(done) = update_operation(&ctx.store, &op.operation_id, |o| {
        if o.status.is_terminal() {
            return false;
        }
        o.status = OperationStatus::Cancelled;
        o.error = Some(err.clone());
        true
    })
    .await?
    else {
        return Err(DispatchError::UnknownOperation(op.operation_id.to_string()));
    };
    tracing::info!(operation = %op.operation_id, "cancelled before start");
    release_and_wake(&ctx.store, &ctx.sqs, &ctx.queues.jobs, &done).await?;
    Ok(())
}

/// Ends the operation as FAILED (and the cluster too, when `cluster_failed` and the operation mutates it),
/// then gives up its lock and slot and wakes the next one.
async fn fail(ctx: &Ctx, op: &Operation, err: UserError, cluster_failed: bool) -> Result<(), DispatchError> {
    tracing::warn!(operation = %op.operation_id, error = %err, "operation failed at dispatch");
    if cluster_failed && op.kind.mutates() {
        update_cluster(&ctx.store, &op.tenant_id, &op.cluster_id, |c| {
            if c.state == ClusterState::Failed && c.last_error.as_ref() == Some(&err) {
                return Ok(false);
            }
            if c.state != ClusterState::Failed {
                transition(c.state, ClusterState::Failed)?;
            }
            c.state = ClusterState::Failed;
            c.last_error = Some(err.clone());
            Ok(true)
        })
        .await?;
    }
    let Some(done) = update_operation(&ctx.store, &op.operation_id, |o| {
        if o.status.is_terminal() {
            return false;
        }
        o.status = OperationStatus::Failed;
        o.error = Some(err.clone());
        o.wait_reason = None;
        true
    })
    .await?
    else {
        return Err(DispatchError::UnknownOperation(op.operation_id.to_string()));
    };
    release_and_wake(&ctx.store, &ctx.sqs, &ctx.queues.jobs, &done).await?;
    Ok(())
}

/// A task already started for this operation (a redelivered job whose first delivery died after RunTask).
async fn existing_task(ctx: &Ctx, op: &Operation) -> Result<Option<String>, DispatchError> {
    let out = ctx
        .ecs
        .list_tasks()
        .cluster(&ctx.config.runner.cluster)
        .started_by(op.operation_id.as_str())
        .desired_status(DesiredStatus::Running)
        .send()
        .await
        .map_err(|e| aws_error("ListTasks", e))?;
    Ok(out.task_arns().first().cloned())
}

fn aws_error(operation: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> DispatchError {
    DispatchError::Shared(strato_aws::Error::aws(operation, e))
}

/// Why RunTask did not start a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFailure {
    /// Throttling, capacity, or a network/server fault: worth retrying with backoff.
    Transient(String),
    /// Anything else (bad task definition, missing cluster, permissions): retrying will not help.
    Fatal(String),
}

/// Classifies a RunTask error by its service error code and message.
pub fn classify_error(code: Option<&str>, message: &str) -> StartFailure {
    let transient_code = matches!(
        code,
        Some("ThrottlingException" | "ServerException" | "ServiceUnavailableException")
    );
    if transient_code || message.contains("Rate exceeded") {
        StartFailure::Transient(format!("{}: {message}", code.unwrap_or("error")))
    } else {
        StartFailure::Fatal(format!("{}: {message}", code.unwrap_or("error")))
    }
}

/// Classifies the `failures[].reason` RunTask returns when it accepted the call but placed no task.
pub fn classify_failure(reason: &str) -> StartFailure {
    if reason.starts_with("RESOURCE:") || reason.contains("Capacity is unavailable") {
        StartFailure::Transient(reason.to_owned())
    } else {
        StartFailure::Fatal(reason.to_owned())
    }
}

async fn run_task(ctx: &Ctx, op: &Operation, token: u64) -> Result<String, StartFailure> {
    let r = &ctx.config.runner;
    let env = |name: &str, value: String| KeyValuePair::builder().name(name).value(value).build();
    let vpc = AwsVpcConfiguration::builder()
        .set_subnets(Some(r.subnets.clone()))
        .set_security_groups(Some(r.security_groups.clone()))
        .assign_public_ip(if r.assign_public_ip {
            AssignPublicIp::Enabled
        } else {
            AssignPublicIp::Disabled
        })
        .build()
        .map_err(|e| StartFailure::Fatal(e.to_string()))?;
    let container = ContainerOverride::builder()
        .name(&r.container)
        .environment(env(ENV_OPERATION_ID, op.operation_id.to_string()))
        .environment(env(ENV_FENCING_TOKEN, token.to_string()))
        .build();
    let res = ctx
        .ecs
        .run_task()
        .cluster(&r.cluster)
        .task_definition(&r.task_definition)
        .launch_type(LaunchType::Fargate)
        .count(1)
        // Lets ListTasks find this operation's task on redelivery; an op id (35 chars) fits ECS's 36.
        .started_by(op.operation_id.as_str())
        // ECS starts one task per token: a repeated start of this operation under this lock (a delivery
        // that died after RunTask, before ListTasks lists the task — it is eventually consistent) gets the
        // same task back. A later lock (new token) may start a new one.
        .client_token(format!("{}-{token}", op.operation_id))
        .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(vpc).build())
        .overrides(TaskOverride::builder().container_overrides(container).build())
        .send()
        .await;
    let out = match res {
        Ok(out) => out,
        Err(e) => {
            let (code, message) = match e.as_service_error() {
                Some(se) => (
                    se.code().map(str::to_owned),
                    se.message().unwrap_or_default().to_owned(),
                ),
                // Timeouts and connection failures never reached ECS.
                None => (
                    Some("ServiceUnavailableException".to_owned()),
                    strato_aws::Error::aws("RunTask", e).to_string(),
                ),
            };
            return Err(classify_error(code.as_deref(), &message));
        }
    };
    if let Some(arn) = out.tasks().first().and_then(|t| t.task_arn()) {
        return Ok(arn.to_owned());
    }
    let reasons: Vec<&str> = out.failures().iter().filter_map(|f| f.reason()).collect();
    let joined = if reasons.is_empty() {
        "RunTask started no task and gave no reason".to_owned()
    } else {
        reasons.join("; ")
    };
    match reasons.iter().map(|r| classify_failure(r)).next() {
        Some(StartFailure::Transient(_)) => Err(StartFailure::Transient(joined)),
        _ => Err(StartFailure::Fatal(joined)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff_secs(1), 10);
        assert_eq!(backoff_secs(2), 20);
        assert_eq!(backoff_secs(4), 80);
        assert_eq!(backoff_secs(30), 900);
        assert_eq!(backoff_secs(0), 10);
    }

    #[test]
    fn throttling_and_capacity_are_transient_the_rest_fatal() {
        assert!(matches!(
            classify_error(Some("ThrottlingException"), "Rate exceeded"),
            StartFailure::Transient(_)
        ));
        assert!(matches!(
            classify_error(Some("ClientException"), "Rate exceeded"),
            StartFailure::Transient(_)
        ));
        assert!(matches!(
            classify_error(Some("ClientException"), "Unable to describe task definition."),
            StartFailure::Fatal(_)
        ));
        assert!(matches!(
            classify_failure(
                "Capacity is unavailable at this time. Please try again later or in a different availability zone"
            ),
            StartFailure::Transient(_)
        ));
        assert!(matches!(
            classify_failure("RESOURCE:MEMORY"),
            StartFailure::Transient(_)
        ));
        assert!(matches!(classify_failure("MISSING"), StartFailure::Fatal(_)));
    }

    #[test]
    fn config_reads_every_setting_and_names_what_is_missing() {
        let env = |k: &str| {
            Some(
                match k {
                    "STRATO_RESOURCE_PREFIX" => "strato-dev",
                    "STRATO_RUNNER_CLUSTER" => "strato-runners",
                    "STRATO_RUNNER_TASK_DEFINITION" => "strato-runner:3",
                    "STRATO_RUNNER_SUBNETS" => "subnet-a, subnet-b",
                    "STRATO_RUNNER_SECURITY_GROUPS" => "sg-1",
                    _ => return None,
                }
                .to_owned(),
            )
        };
        let c = Config::from_lookup(env).unwrap();
        assert_eq!(c.names.table("locks"), "strato-dev-locks");
        assert_eq!(c.runner.subnets, ["subnet-a", "subnet-b"]);
        assert_eq!(c.runner.container, "runner");
        assert!(!c.runner.assign_public_ip);
        let err = Config::from_lookup(|k| {
            if k == "STRATO_RUNNER_SUBNETS" {
                None
            } else {
                env(k)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("STRATO_RUNNER_SUBNETS"), "{err}");
        let err = Config::from_lookup(|k| {
            if k == "STRATO_RUNNER_ASSIGN_PUBLIC_IP" {
                Some("yes".into())
            } else {
                env(k)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("true or false"), "{err}");
    }
}
