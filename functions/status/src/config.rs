//! Configuration and the clients every handler shares.

use strato_aws::aws::AwsClients;
use strato_aws::env::Env;
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;

use crate::StatusError;
use crate::webhook::WebhookPolicy;

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
