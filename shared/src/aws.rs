//! SDK clients, built once per process from one `SdkConfig`. With an endpoint (moto, devstack) every client
//! is pointed at it; in AWS the default credential and region chain applies.

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;

#[derive(Debug, Clone)]
pub struct AwsClients {
    pub config: SdkConfig,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
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
            config,
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
