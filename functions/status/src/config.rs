//! Configuration, the clients every handler shares, and the AWS adapters wired into [`Status`].

use std::marker::PhantomData;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use strato_aws::aws::AwsClients;
use strato_aws::env::Env;
use strato_aws::ports::{
    DynamoAuditLog, S3RunArchive, SqsJobQueue, SqsRollouts, SqsStatusQueues, SqsWebhooks,
};
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::ports::SystemClock;
use strato_domain::run_proof::RunProofKey;

use crate::StatusError;
use crate::ports::{Ports, ReportWait, Status};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
    /// Checks runner events' run proofs (`STRATO_RUN_PROOF_SECRET`, the dispatcher's key).
    pub run_proofs: RunProofKey,
    /// Days audit entries are kept (`STRATO_AUDIT_RETENTION_DAYS`, default 365).
    pub audit_retention_days: u64,
    /// Days a finished operation is kept (`STRATO_OPERATION_RETENTION_DAYS`, default 90; DynamoDB TTL).
    pub operation_retention_days: u32,
    /// How long an approval request waits (`STRATO_APPROVAL_TTL_HOURS`, default 72).
    pub approval_ttl: time::Duration,
}

impl Config {
    pub fn from_env() -> Result<Self, StatusError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, StatusError> {
        let env = Env::new(lookup);
        Ok(Self {
            names: env.names()?,
            run_proofs: env.run_proof_key()?,
            audit_retention_days: DynamoAuditLog::retention_days(&env)?,
            operation_retention_days: strato_aws::store::operation_retention_days(&env)?,
            approval_ttl: env
                .parsed::<u32>("STRATO_APPROVAL_TTL_HOURS", "a whole number of hours")?
                .filter(|h| *h > 0)
                .map_or(strato_domain::approval::DEFAULT_APPROVAL_TTL, |h| {
                    time::Duration::hours(i64::from(h))
                }),
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
    pub audit: DynamoAuditLog,
}

impl Ctx {
    pub async fn new(config: Config, aws: &AwsClients) -> Result<Self, StatusError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names)
                .with_operation_retention(config.operation_retention_days),
            audit: DynamoAuditLog::new(aws.dynamodb.clone(), &config.names, config.audit_retention_days),
            sqs: aws.sqs.clone(),
            s3: aws.s3.clone(),
            queues,
            config,
        })
    }
}

/// The status function's ports on AWS (adapters borrowing the [`Ctx`]'s clients for `'a`).
#[derive(Debug)]
pub struct AwsPorts<'a>(PhantomData<&'a ()>);

impl<'a> Ports for AwsPorts<'a> {
    type Store = Store;
    type Templates = Store;
    type Jobs = SqsJobQueue<'a>;
    type Queues = SqsStatusQueues<'a>;
    type Archive = S3RunArchive<'a>;
    type Webhooks = SqsWebhooks<'a>;
    type Clock = SystemClock;
    type Audit = DynamoAuditLog;
    type Rollouts = Store;
    type RolloutQueue = SqsRollouts<'a>;
}

/// Processes a batch on the AWS adapters (see [`Status::handle`]).
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, StatusError> {
    let jobs = SqsJobQueue {
        sqs: &ctx.sqs,
        url: &ctx.queues.jobs,
    };
    let queues = SqsStatusQueues {
        sqs: &ctx.sqs,
        events_url: &ctx.queues.events,
        logs_url: &ctx.queues.logs,
    };
    let bucket = ctx.config.names.bucket("artifacts");
    let archive = S3RunArchive {
        s3: &ctx.s3,
        bucket: &bucket,
    };
    let webhooks = SqsWebhooks {
        store: &ctx.store,
        sqs: &ctx.sqs,
        url: &ctx.queues.webhooks,
    };
    let rollout_queue = SqsRollouts {
        sqs: &ctx.sqs,
        url: &ctx.queues.rollouts,
    };
    let status: Status<'_, AwsPorts<'_>> = Status {
        store: &ctx.store,
        templates: &ctx.store,
        jobs: &jobs,
        queues: &queues,
        archive: &archive,
        webhooks: &webhooks,
        clock: &SystemClock,
        audit: &ctx.audit,
        rollouts: &ctx.store,
        rollout_queue: &rollout_queue,
        report_wait: ReportWait::EVENTS,
        approval_ttl: ctx.config.approval_ttl,
        run_proofs: &ctx.config.run_proofs,
    };
    Ok(status.handle(event).await)
}
