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
//!
//! The decisions ([`Dispatcher`]) take their dependencies through the domain's ports; [`handle`] runs them
//! on the AWS adapters (DynamoDB store, `jobs.fifo`, ECS), the unit tests on the in-memory fakes.

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod approval;
mod decide;

pub use decide::{Dispatcher, Outcome, backoff_secs};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use strato_aws::aws::AwsClients;
use strato_aws::env::{Env, EnvError};
use strato_aws::ports::{DynamoAuditLog, EcsLauncher, KmsKeys, KmsSigner, SqsJobQueue};
use strato_aws::queues::QueueUrls;
use strato_aws::resources::{self, Names};
use strato_aws::store::Store;
use strato_domain::identity::{Issuer, MAX_TOKEN_LIFE, NoRunIdentities, RunIdentities, TokenIssuer};
use strato_domain::ports::SystemClock;
use strato_domain::run_proof::RunProofKey;

pub use strato_aws::ports::RunnerSettings;
pub use strato_coordination::LOCK_LEASE;

/// Records per invocation (infra/'s event source mapping and devstack use it): one. With more, a cluster's
/// job can arrive in one batch behind the cluster's job before it; when that one backs off (or fails), the
/// later one is handed back unprocessed with it, and SQS counts that round as one of its deliveries. It could
/// so reach the queue's last delivery — where a start that fails fails the operation, and a record that fails
/// goes to the dead-letter queue — without having been tried. One at a time, SQS FIFO delivers a job only
/// once its cluster's earlier jobs are deleted (a message group is blocked while one of its messages is in
/// flight), so a job's deliveries are its own attempts. Jobs are a few per operation: batches of one cost
/// nothing that matters.
pub const BATCH_SIZE: i32 = 1;

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
    /// A domain refusal or a port failure (the adapter's error travels inside it).
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
    pub runner: RunnerSettings,
    /// Signs each run's proof (`STRATO_RUN_PROOF_SECRET`, shared with status only).
    pub run_proofs: RunProofKey,
    /// Days audit entries are kept (`STRATO_AUDIT_RETENTION_DAYS`, default 365).
    pub audit_retention_days: u64,
    /// Days a finished operation is kept (`STRATO_OPERATION_RETENTION_DAYS`, default 90; DynamoDB TTL).
    pub operation_retention_days: u32,
    /// The OIDC issuer runs' identity tokens name (`STRATO_OIDC_ISSUER`); unset: no run gets a token.
    pub oidc_issuer: Option<Issuer>,
    /// The KMS key that signs them (`STRATO_OIDC_SIGNING_KEY`, default `alias/<prefix>-oidc`).
    pub oidc_signing_key: String,
}

impl Config {
    pub fn from_env() -> Result<Self, DispatchError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// `lookup` stands for the environment, so the parsing is testable without mutating it.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, DispatchError> {
        let env = Env::new(lookup);
        let names = env.names()?;
        Ok(Self {
            runner: RunnerSettings {
                cluster: env.required("STRATO_RUNNER_CLUSTER")?,
                task_definition: env.required("STRATO_RUNNER_TASK_DEFINITION")?,
                container: env.or("STRATO_RUNNER_CONTAINER", "runner"),
                subnets: env.list("STRATO_RUNNER_SUBNETS")?,
                security_groups: env.list("STRATO_RUNNER_SECURITY_GROUPS")?,
                assign_public_ip: env.flag("STRATO_RUNNER_ASSIGN_PUBLIC_IP", false)?,
            },
            run_proofs: env.run_proof_key()?,
            audit_retention_days: DynamoAuditLog::retention_days(&env)?,
            operation_retention_days: strato_aws::store::operation_retention_days(&env)?,
            oidc_issuer: env
                .optional("STRATO_OIDC_ISSUER")
                .map(|i| {
                    i.parse().map_err(|reason| EnvError {
                        var: "STRATO_OIDC_ISSUER",
                        reason,
                    })
                })
                .transpose()?,
            oidc_signing_key: env.or("STRATO_OIDC_SIGNING_KEY", &names.oidc_key_alias()),
            names,
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
    pub audit: DynamoAuditLog,
    /// Strato's data key (seals the run's tokens) and token-signing key (mints them).
    pub keys: KmsKeys,
    pub signer: KmsSigner,
}

impl Ctx {
    pub async fn new(
        config: Config,
        aws: &AwsClients,
        ecs: aws_sdk_ecs::Client,
    ) -> Result<Self, DispatchError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names)
                .with_operation_retention(config.operation_retention_days)
                .with_audit_retention(config.audit_retention_days),
            audit: DynamoAuditLog::new(aws.dynamodb.clone(), &config.names, config.audit_retention_days),
            sqs: aws.sqs.clone(),
            ecs,
            queues,
            keys: KmsKeys::new(&aws.kms, &config.names),
            signer: KmsSigner::new(&aws.kms, config.oidc_signing_key.clone()),
            config,
        })
    }
}

/// Processes a batch on the AWS adapters (see [`Dispatcher::handle`]).
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, DispatchError> {
    let jobs = SqsJobQueue {
        sqs: &ctx.sqs,
        url: &ctx.queues.jobs,
    };
    let launcher = EcsLauncher {
        ecs: &ctx.ecs,
        runner: &ctx.config.runner,
        proofs: &ctx.config.run_proofs,
    };
    // Boxed: each instantiation's state machine is large, and both inline would sit on the caller's stack
    // (a test thread's 2 MiB overflowed).
    let Some(issuer) = &ctx.config.oidc_issuer else {
        return Ok(Box::pin(dispatch(ctx, &jobs, &launcher, &NoRunIdentities, event)).await);
    };
    let identities = TokenIssuer {
        signer: &ctx.signer,
        keys: &ctx.keys,
        templates: &ctx.store,
        clock: &SystemClock,
        issuer,
        life: MAX_TOKEN_LIFE,
    };
    Ok(Box::pin(dispatch(ctx, &jobs, &launcher, &identities, event)).await)
}

async fn dispatch(
    ctx: &Ctx,
    jobs: &SqsJobQueue<'_>,
    launcher: &EcsLauncher<'_>,
    identities: &impl RunIdentities,
    event: SqsEvent,
) -> SqsBatchResponse {
    let dispatcher = Dispatcher {
        store: &ctx.store,
        jobs,
        launcher,
        clock: &SystemClock,
        audit: &ctx.audit,
        max_receives: resources::queue("jobs").max_receive_count,
        identities,
    };
    dispatcher.handle(event).await
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
    fn config_reads_every_setting_and_names_what_is_missing() {
        let env = |k: &str| {
            Some(
                match k {
                    "STRATO_RESOURCE_PREFIX" => "strato-dev",
                    "STRATO_RUNNER_CLUSTER" => "strato-runners",
                    "STRATO_RUNNER_TASK_DEFINITION" => "strato-runner:3",
                    "STRATO_RUNNER_SUBNETS" => "subnet-a, subnet-b",
                    "STRATO_RUNNER_SECURITY_GROUPS" => "sg-1",
                    "STRATO_RUN_PROOF_SECRET" => "0123456789abcdef0123456789abcdef",
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
        let err = Config::from_lookup(|k| {
            if k == "STRATO_RUN_PROOF_SECRET" {
                Some("short".into())
            } else {
                env(k)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("at least 32"), "{err}");
    }
}
