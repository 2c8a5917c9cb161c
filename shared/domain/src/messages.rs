//! The queue contracts: the model's messages, and the `webhooks` queue's, which is the webhook concern's.

pub use crate::webhook::WebhookMessage;
pub use strato_model::messages::*;
