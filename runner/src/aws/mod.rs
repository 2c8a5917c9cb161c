//! The runner's ports on AWS, and the real engine and signals: what `main` (and the slow tests) run.

mod cloud;
mod sinks;
mod store;

pub use cloud::{AwsCloud, AwsState};
pub use sinks::{LogSinks, SqsReporter};

use strato_aws::aws::AwsClients;
use strato_aws::ports::KmsKeys;
use strato_aws::queues::QueueUrls;
use strato_aws::store::Store;

use crate::engine::ProcessEngine;
use crate::ports::{Ports, RunPorts, TaskSignals};
use crate::{Config, RunnerError};

/// Everything the runner talks to.
#[derive(Clone)]
pub struct Clients {
    pub aws: AwsClients,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub store: Store,
    pub queues: QueueUrls,
}

impl Clients {
    pub async fn new(aws: AwsClients, cfg: &Config) -> Result<Self, RunnerError> {
        let queues = QueueUrls::resolve(&aws.sqs, &cfg.names).await?;
        Ok(Self {
            secrets: aws_sdk_secretsmanager::Client::new(&aws.config),
            store: Store::new(aws.dynamodb.clone(), &cfg.names),
            queues,
            aws,
        })
    }
}

/// The runner's adapters on AWS, the engine process and the task's SIGTERM.
#[derive(Debug)]
pub struct AwsPorts;

impl Ports for AwsPorts {
    type Store = Store;
    type Sinks = LogSinks;
    type Reporter = SqsReporter;
    type Secrets = aws_sdk_secretsmanager::Client;
    type Keys = KmsKeys;
    type Cloud = AwsCloud;
    type Engine = ProcessEngine;
    type Signals = UnixSignals;
    type Kube = crate::kube::HttpKube;
}

/// The adapters of the run `cfg` names, on `clients`.
pub fn adapters(cfg: &Config, clients: Clients) -> RunPorts<AwsPorts> {
    let artifacts_bucket = cfg.names.bucket("artifacts");
    RunPorts {
        sinks: LogSinks {
            sqs: clients.aws.sqs.clone(),
            logs_url: clients.queues.logs.clone(),
            s3: clients.aws.s3.clone(),
            artifacts_bucket: artifacts_bucket.clone(),
            traceparent: cfg.traceparent,
        },
        reporter: SqsReporter {
            sqs: clients.aws.sqs.clone(),
            events_url: clients.queues.events.clone(),
            s3: clients.aws.s3.clone(),
            artifacts_bucket,
            proof: cfg.run_proof.clone(),
            traceparent: cfg.traceparent,
        },
        keys: KmsKeys::new(&clients.aws.kms, &cfg.names),
        cloud: AwsCloud {
            names: cfg.names.clone(),
            sts_endpoint: cfg.sts_endpoint.clone().or_else(|| cfg.provider_endpoint.clone()),
            provider_endpoint: cfg.provider_endpoint.clone(),
            timeout: cfg.preflight_timeout,
            endpoints: cfg.cloud_endpoints.clone(),
            aws: clients.aws,
        },
        engine: ProcessEngine {
            bin: cfg.terraform.clone(),
            env: cfg.extra_engine_env.clone(),
            grace: cfg.grace,
        },
        store: clients.store,
        secrets: clients.secrets,
        signals: UnixSignals,
        kube: crate::kube::HttpKube {
            timeout: cfg.kube_timeout,
        },
    }
}

/// SIGTERM, which ECS sends a task it stops.
#[derive(Debug, Clone, Copy)]
pub struct UnixSignals;

impl TaskSignals for UnixSignals {
    fn terminated(&self) -> impl Future<Output = ()> + Send + 'static {
        sigterm()
    }
}

/// Resolves on SIGTERM; never, when it cannot be listened for.
async fn sigterm() {
    use tokio::signal::unix::{SignalKind, signal};
    if let Ok(mut sig) = signal(SignalKind::terminate())
        && sig.recv().await.is_some()
    {
        return;
    }
    std::future::pending::<()>().await
}
