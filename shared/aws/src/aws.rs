//! SDK clients, built once per process from one `SdkConfig`. With an endpoint (moto, devstack) every client
//! is pointed at it; in AWS the default credential and region chain applies.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
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

/// Every SDK call's bounds, retries included (`operation`) and per attempt, and the connect timeout.
/// Without them a call to an endpoint that accepts and never answers waits for ever: a Lambda until its
/// own timeout, the runner until its hard deadline, with the cluster's lock held. The operation bound is
/// above the longest long poll (SQS, 20 s) and an artifact upload's time; a caller that needs other
/// bounds sets its own on its client (the runner's STS preflight does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub attempt: Duration,
    pub operation: Duration,
}

pub const TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(5),
    attempt: Duration::from_secs(60),
    operation: Duration::from_secs(120),
};

/// `config` with `limits` wherever it has none of its own.
pub fn bounded(config: SdkConfig, limits: Timeouts) -> SdkConfig {
    let own = config
        .timeout_config()
        .cloned()
        .unwrap_or_else(TimeoutConfig::disabled);
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(own.connect_timeout().unwrap_or(limits.connect))
        .operation_attempt_timeout(own.operation_attempt_timeout().unwrap_or(limits.attempt))
        .operation_timeout(own.operation_timeout().unwrap_or(limits.operation));
    let timeouts = match own.read_timeout() {
        Some(read) => timeouts.read_timeout(read),
        None => timeouts,
    };
    config.to_builder().timeout_config(timeouts.build()).build()
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
    /// Every client built here, and every client built later from `config` (`Builder::from(&aws.config)`),
    /// has [`TIMEOUTS`] unless `config` sets its own.
    pub fn from_config(config: SdkConfig) -> Self {
        let config = bounded(config, TIMEOUTS);
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

    /// The same clients with `interceptor` seeing every request they send (`strato_calls`' recorder: the IAM
    /// check of the devstack test).
    pub fn intercepted(&self, interceptor: &(impl Intercept + Clone + 'static)) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Per attempt and per operation; a connect timeout is always there (the SDK's default one is kept).
    fn limits_of(t: Option<&TimeoutConfig>) -> (Option<Duration>, Option<Duration>) {
        let t = t.expect("a timeout config");
        assert!(t.connect_timeout().is_some());
        (t.operation_attempt_timeout(), t.operation_timeout())
    }

    #[tokio::test]
    async fn every_client_has_operation_timeouts() {
        let aws = AwsClients::for_endpoint("http://127.0.0.1:9", "us-east-1").await;
        let want = (Some(TIMEOUTS.attempt), Some(TIMEOUTS.operation));
        assert_eq!(limits_of(aws.config.timeout_config()), want, "the shared config");
        assert_eq!(
            limits_of(aws.dynamodb.config().timeout_config()),
            want,
            "dynamodb"
        );
        assert_eq!(limits_of(aws.s3.config().timeout_config()), want, "s3");
        assert_eq!(limits_of(aws.sqs.config().timeout_config()), want, "sqs");
        assert_eq!(limits_of(aws.kms.config().timeout_config()), want, "kms");
        let counted = aws.counted(&CallCounter::default());
        assert_eq!(
            limits_of(counted.dynamodb.config().timeout_config()),
            want,
            "intercepted"
        );
        // Clients the functions build from the shared config (ECS, Secrets Manager, the WebSocket
        // management API) inherit them.
        let ecs = aws_sdk_dynamodb::config::Builder::from(&aws.config).build();
        assert_eq!(limits_of(ecs.timeout_config()), want, "built from the config");
    }

    #[tokio::test]
    async fn a_call_to_an_endpoint_that_never_answers_ends_within_its_bound() {
        // Accepts connections and never answers a byte.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let _held = std::thread::spawn(move || {
            let held: Vec<_> = listener.incoming().take(8).collect();
            std::thread::sleep(Duration::from_secs(30));
            drop(held);
        });
        let base = AwsClients::for_endpoint(&url, "us-east-1").await.config;
        let short = Timeouts {
            connect: Duration::from_millis(500),
            attempt: Duration::from_millis(300),
            operation: Duration::from_millis(800),
        };
        // A config without timeouts of its own gets these.
        let base = base
            .to_builder()
            .timeout_config(TimeoutConfig::disabled())
            .build();
        let aws = AwsClients::from_config(bounded(base, short));
        let began = std::time::Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(10), aws.dynamodb.list_tables().send()).await;
        let took = began.elapsed();
        assert!(matches!(r, Ok(Err(_))), "the call fails by itself: {r:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    }
}
