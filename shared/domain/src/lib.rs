//! Strato's domain: template manifests and provider catalogs, validation of requests, sealing of values at
//! rest, run identities, cluster health and expiry, the audit log, the ports decisions take their
//! dependencies through, and the hand-off rules written against them. Pure: no AWS SDK, no I/O beyond
//! reading template files.
//!
//! Below it: `strato-model` (ids, records, the state machine, queue messages, vitals, trace context) and
//! `strato-webhook` (tenant webhooks), re-exported here under their module names (`strato_domain::ids`,
//! `strato_domain::webhook`, …) so every path holds. Above it: `strato-terraform` (what a run hands the
//! engine), `strato-coordination` (the hand-off rules) and `strato-fakes` (the ports' in-memory
//! implementations).

pub mod agent;
pub mod audit;
pub mod catalog;
pub mod connect;
pub mod expiry;
pub mod health;
pub mod identity;
pub mod ports;
pub mod sealed;
pub mod secret;
pub mod template;
pub mod template_status;
pub mod validate;

pub use strato_model::{Error, ErrorCategory, UserError};
pub use strato_model::{
    approval, approval_rules, cost, ecs_event, error, ids, model, plan, preview, recent, run_proof,
    state_machine, telemetry, ts, vitals,
};
pub use strato_webhook as webhook;

/// The queue contracts: the model's messages, and the `webhooks` queue's, which is the webhook concern's.
/// Declared here rather than in a file of its own so that `messages.rs` has one home, `strato-model`'s.
pub mod messages {
    pub use strato_model::messages::*;
    pub use strato_webhook::WebhookMessage;
}
