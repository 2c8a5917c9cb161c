//! One way to start a function. Every Lambda's `main` does the same five things in the same order — the
//! log subscriber (Lambda's log controls), the EMF metrics collector, the SDK clients, the environment with
//! its secret references resolved ([`crate::secret_env`]), then its own `Config` and context — and then
//! hands each invocation to its handler with the metrics flushed after it. [`Boot::start`] does the first
//! four, [`Boot::lookup`] feeds `Config::from_lookup`, and [`Boot::serve`] runs an event function.

use std::collections::HashMap;
use std::future::Future;

use lambda_runtime::{LambdaEvent, service_fn};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::aws::AwsClients;
use crate::error::Error;
use strato_telemetry::emf::Emf;

/// What every function starts from.
pub struct Boot {
    /// The SDK clients, built once per process.
    pub aws: AwsClients,
    /// Metrics leave as EMF lines on stdout, flushed after each invocation (docs/metrics.md).
    pub emf: Emf,
    env: HashMap<String, String>,
}

impl Boot {
    /// Telemetry, metrics, clients and the resolved environment, in that order: the subscriber first, so
    /// that a failure below is logged the way Lambda's log controls ask.
    pub async fn start() -> Result<Self, Error> {
        strato_telemetry::init_lambda_subscriber();
        let emf = Emf::install();
        let aws = AwsClients::from_env().await;
        // Secrets come by reference (`NAME_ARN`) and are read once, here.
        let env = crate::secret_env::environment(&aws.config).await?;
        Ok(Self { aws, emf, env })
    }

    /// The environment as `Config::from_lookup` reads it.
    pub fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |k| self.env.get(k).cloned()
    }

    /// Runs the Lambda runtime loop: each event's payload goes to `handler`, and the metrics it recorded
    /// are flushed before the answer is returned.
    pub async fn serve<E, O, H, F, X>(&self, handler: H) -> Result<(), lambda_runtime::Error>
    where
        E: DeserializeOwned + Send + 'static,
        O: Serialize,
        H: Fn(E) -> F,
        F: Future<Output = Result<O, X>>,
        X: Into<lambda_runtime::Error>,
    {
        let emf = self.emf;
        let handler = &handler;
        lambda_runtime::run(service_fn(move |event: LambdaEvent<E>| async move {
            emf.flushing(async { handler(event.payload).await.map_err(Into::into) })
                .await
        }))
        .await
    }
}
