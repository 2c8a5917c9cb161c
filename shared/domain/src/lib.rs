//! Strato's domain: identifiers, domain records, the cluster state machine, template manifests and provider
//! catalogs, validation of requests, cost estimates, the queue and event contracts, webhook signatures, the
//! ports decisions take their dependencies through, and the hand-off rules written against them. Pure: no AWS
//! SDK, no I/O beyond reading template files.
//!
//! Beside it, above it: `strato-terraform` (what a run hands the engine: rendering, composition, bundles,
//! module interfaces, provider locks, session policies), `strato-stream` (log framing) and `strato-fakes`
//! (the ports' in-memory implementations).

pub mod agent;
pub mod audit;
pub mod catalog;
pub mod connect;
pub mod expiry;
pub mod health;
pub mod identity;
pub mod messages;
pub mod ports;
pub mod sealed;
pub mod secret;
pub mod template;
pub mod validate;

pub use strato_model::{Error, ErrorCategory, UserError};
pub use strato_model::{
    approval, approval_rules, cost, ecs_event, error, ids, model, plan, preview, run_proof, state_machine,
    telemetry, ts, vitals,
};
pub use strato_webhook as webhook;
