//! The `webhooks` queue: tenant webhook notifications, posted by their own consumer (`strato-webhooks`).

use strato_domain::messages::WebhookMessage;
use strato_domain::ports::{PortError, Webhooks};

use crate::error::Error;

/// The `webhooks` queue through SQS.
#[derive(Debug, Clone, Copy)]
pub struct SqsWebhooks<'a> {
    pub sqs: &'a aws_sdk_sqs::Client,
    pub url: &'a str,
}

impl Webhooks for SqsWebhooks<'_> {
    async fn enqueue(&self, delivery: &WebhookMessage) -> Result<(), PortError> {
        let body = serde_json::to_string(delivery).map_err(|source| Error::Render {
            what: "webhook message",
            source,
        })?;
        self.sqs
            .send_message()
            .queue_url(self.url)
            .message_body(body)
            .send()
            .await
            .map_err(|e| Error::aws("SendMessage", e))?;
        Ok(())
    }
}
