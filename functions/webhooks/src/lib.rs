//! `strato-webhooks`: consumes the `webhooks` queue. Each message ([`WebhookMessage`]) is one notification
//! for a tenant's webhook, queued by the status function once the result it is about and the hand-off are
//! saved; this function reads the tenant's webhook, signs and POSTs the payload, and records the outcome on
//! the operation. Delivering here, not in the status function, keeps a slow receiver out of the state
//! machine's path (issue 15 defect 7): it can hold up only its own record.
//!
//! At least once, with a stable event id: the id is fixed in the message (`webhook-id`), so a
//! retry or a duplicate message carries the same one and receivers deduplicate on it. One attempt per
//! delivery of the message with a short timeout, no redirects followed; a failure that may pass (no answer,
//! 408, 429, 5xx) hands the record back with a growing back-off, others and the last attempt are final. The
//! operation has one note per delivery id, updated (not duplicated) by each attempt; a message whose note
//! is final is acknowledged without a call. A record that cannot be handled at all (bad body, the store
//! down on every delivery) ends in the queue's DLQ. Secrets never reach a log or a note (host only).
//!
//! Layout: `decide` ([`Deliveries`], over the [`Receivers`] and operation ports) decides; `deliver` posts
//! one attempt and writes the notes; [`handle`] wires the AWS adapters.
//!
//! [`WebhookMessage`]: strato_domain::messages::WebhookMessage

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod decide;
pub mod deliver;

pub use decide::{Deliveries, Outcome, Receivers, backoff_secs};
pub use deliver::{Attempt, DeliveryPolicy};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use strato_aws::aws::AwsClients;
use strato_aws::env::{Env, EnvError};
use strato_aws::queues::{QueueUrls, delay_redelivery};
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::ids::TenantId;
use strato_domain::ports::{PortError, SystemClock};
use strato_domain::webhook::{Egress, Webhook};

/// Records per invocation (infra/'s event source mapping and devstack use it): each may wait
/// [`DeliveryPolicy::attempt_timeout`] for a hanging receiver, and the batch must end within the consumer's
/// timeout.
pub const BATCH_SIZE: i32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum WebhooksError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error("record {message_id} has no body")]
    EmptyBody { message_id: String },
    #[error("record {message_id} is not a webhook message: {source}")]
    BadBody {
        message_id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("webhook payload could not be rendered: {source}")]
    Render {
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    /// Every address a receiver's host name resolved to is one webhooks may not reach.
    #[error("webhook host {host} resolves only to addresses webhooks may not reach")]
    ForbiddenAddress { host: String },
    /// A port failure (the adapter's error travels inside it).
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
    /// Where receivers may be: https to public addresses, unless devstack's own switches
    /// (`STRATO_DEVSTACK_ONLY_ALLOW_*_WEBHOOKS`) allow its local receivers.
    pub egress: Egress,
    /// Days a finished operation is kept (`STRATO_OPERATION_RETENTION_DAYS`, default 90): a delivery's note
    /// saves the operation, which keeps its expiry.
    pub operation_retention_days: u32,
}

impl Config {
    pub fn from_env() -> Result<Self, WebhooksError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// `lookup` stands for the environment, so the parsing is testable without mutating it.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, WebhooksError> {
        let egress = Egress::from_lookup(&lookup);
        let env = Env::new(lookup);
        Ok(Self {
            egress,
            names: env.names()?,
            operation_retention_days: strato_aws::store::operation_retention_days(&env)?,
        })
    }
}

/// Everything a handler needs, built once per process.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub config: Config,
    pub store: Store,
    pub sqs: aws_sdk_sqs::Client,
    pub queues: QueueUrls,
    pub http: reqwest::Client,
    pub policy: DeliveryPolicy,
}

impl Ctx {
    pub async fn new(config: Config, aws: &AwsClients) -> Result<Self, WebhooksError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names)
                .with_operation_retention(config.operation_retention_days),
            sqs: aws.sqs.clone(),
            queues,
            http: deliver::client(config.egress),
            config,
            policy: DeliveryPolicy::default(),
        })
    }
}

/// Tenants' receivers on AWS: the webhook as the tenants table holds it, posted over HTTP(S), back-offs
/// through the `webhooks` queue's visibility.
#[derive(Debug, Clone, Copy)]
pub struct HttpReceivers<'a> {
    pub ctx: &'a Ctx,
}

impl Receivers for HttpReceivers<'_> {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(self.ctx.store.tenant_webhook(tenant).await?)
    }

    async fn post(&self, hook: &Webhook, event: &str, delivery_id: &str, body: &[u8]) -> Attempt {
        let timeout = self.ctx.policy.attempt_timeout;
        let egress = self.ctx.config.egress;
        deliver::post(&self.ctx.http, egress, hook, event, delivery_id, body, timeout).await
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        delay_redelivery(
            &self.ctx.sqs,
            &self.ctx.queues.webhooks,
            Some(receipt_handle),
            secs,
        )
        .await;
    }
}

/// Processes a batch on the AWS adapters (see [`Deliveries::handle`]).
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, WebhooksError> {
    let receivers = HttpReceivers { ctx };
    let deliveries = Deliveries {
        store: &ctx.store,
        receivers: &receivers,
        clock: &SystemClock,
        max_attempts: ctx.policy.max_attempts,
    };
    Ok(deliveries.handle(event).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff_secs(1), 10);
        assert_eq!(backoff_secs(2), 20);
        assert_eq!(backoff_secs(4), 80);
        assert_eq!(backoff_secs(30), 300);
    }

    #[test]
    fn config_needs_the_prefix_and_the_policy_matches_the_queue() {
        let err = Config::from_lookup(|_| None).unwrap_err();
        assert!(err.to_string().contains("STRATO_RESOURCE_PREFIX"), "{err}");
        let c =
            Config::from_lookup(|k| (k == "STRATO_RESOURCE_PREFIX").then(|| "strato-dev".into())).unwrap();
        assert_eq!(c.names.queue("webhooks"), "strato-dev-webhooks");
        let q = strato_aws::resources::queue("webhooks");
        let p = DeliveryPolicy::default();
        assert_eq!(p.max_attempts, q.max_receive_count);
        // A batch of hanging receivers still ends within the consumer's timeout.
        assert!(
            p.attempt_timeout.as_secs() * BATCH_SIZE.unsigned_abs() as u64 + 10
                < u64::from(q.consumer_timeout_secs()),
            "{p:?}"
        );
    }
}
