//! SDK clients, built once per process from one `SdkConfig`. With an endpoint (moto, devstack) every client
//! is pointed at it; in AWS the default credential and region chain applies.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Counts every request an SDK client transmits (retries included), by `Service.Operation`. Used by
/// benchmarks to report how many AWS calls a code path makes.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounter {
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    pub fn reset(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "strato-call-counter"
    }

    fn read_before_transmit(
        &self,
        _ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let key = cfg
            .load::<Metadata>()
            .map(|m| format!("{}.{}", m.service(), m.name()))
            .unwrap_or_else(|| "unknown".into());
        if let Ok(mut m) = self.0.lock() {
            *m.entry(key).or_default() += 1;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct AwsClients {
    pub config: SdkConfig,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
    /// Strato's data key (envelope encryption of sensitive values at rest, `ports::KmsKeys`).
    pub kms: aws_sdk_kms::Client,
}

impl AwsClients {
    pub fn from_config(config: SdkConfig) -> Self {
        // Emulators (and customer buckets with dots) need path-style addressing.
        let s3 = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(config.endpoint_url().is_some())
            .build();
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(&config),
            s3: aws_sdk_s3::Client::from_conf(s3),
            sqs: aws_sdk_sqs::Client::new(&config),
            kms: aws_sdk_kms::Client::new(&config),
            config,
        }
    }

    /// The same clients with `counter` counting every request they send (benchmarks).
    pub fn counted(&self, counter: &CallCounter) -> Self {
        self.intercepted(counter)
    }

    /// The same clients with `recorder` recording every call they make (the IAM check of the devstack test).
    pub fn recorded(&self, recorder: &crate::calls::recorder::CallRecorder) -> Self {
        self.intercepted(recorder)
    }

    fn intercepted(&self, interceptor: &(impl Intercept + Clone + 'static)) -> Self {
        let config = &self.config;
        let s3 = aws_sdk_s3::config::Builder::from(config)
            .force_path_style(config.endpoint_url().is_some())
            .interceptor(interceptor.clone())
            .build();
        Self {
            dynamodb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(config)
                    .interceptor(interceptor.clone())
                    .build(),
            ),
            s3: aws_sdk_s3::Client::from_conf(s3),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(config)
                    .interceptor(interceptor.clone())
                    .build(),
            ),
            kms: aws_sdk_kms::Client::from_conf(
                aws_sdk_kms::config::Builder::from(config)
                    .interceptor(interceptor.clone())
                    .build(),
            ),
            config: config.clone(),
        }
    }

    /// Reads the standard environment (`AWS_ENDPOINT_URL`, `AWS_REGION`, credentials chain).
    pub async fn from_env() -> Self {
        Self::from_config(aws_config::defaults(BehaviorVersion::latest()).load().await)
    }

    /// Clients for an emulator at `endpoint` with static dummy credentials.
    pub async fn for_endpoint(endpoint: &str, region: &str) -> Self {
        let config = aws_config::defaults(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new(region.to_owned()))
            .credentials_provider(Credentials::new(
                "testing",
                "testing",
                None,
                None,
                "strato-testbed",
            ))
            .load()
            .await;
        Self::from_config(config)
    }
}
