//! The `webhooks` queue: tenant webhook notifications, posted by their own consumer (`strato-webhooks`).

use strato_domain::ids::TenantId;
use strato_domain::messages::WebhookMessage;
use strato_domain::ports::{PortError, Webhooks};
use strato_domain::webhook::Webhook;

use crate::store::Store;

/// The tenants' webhooks as the tenants table holds them, and the `webhooks` queue through SQS.
#[derive(Debug, Clone, Copy)]
pub struct SqsWebhooks<'a> {
    pub store: &'a Store,
    pub sqs: &'a aws_sdk_sqs::Client,
    pub url: &'a str,
}

impl Webhooks for SqsWebhooks<'_> {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(self.store.tenant_webhook(tenant).await?)
    }

    async fn enqueue(&self, delivery: &WebhookMessage) -> Result<(), PortError> {
        Ok(crate::queues::send_json(self.sqs, self.url, "webhook message", delivery, 0).await?)
    }
}
