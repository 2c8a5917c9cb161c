//! Strato's domain: identifiers, domain records, the cluster state machine, template manifests and provider
//! catalogs, validation of requests, cost estimates, the queue and event contracts, webhook signatures, the
//! ports decisions take their dependencies through, and the hand-off rules written against them. Pure: no AWS
//! SDK, no I/O beyond reading template files.
//!
//! Beside it, above it: `strato-terraform` (what a run hands the engine: rendering, composition, bundles,
//! module interfaces, provider locks, session policies), `strato-stream` (log framing) and `strato-fakes`
//! (the ports' in-memory implementations).

pub mod agent;
pub mod approval;
pub mod approval_rules;
pub mod audit;
pub mod catalog;
pub mod connect;
pub mod cost;
pub mod ecs_event;
pub mod error;
pub mod expiry;
pub mod health;
pub mod identity;
pub mod ids;
pub mod messages;
pub mod model;
pub mod plan;
pub mod ports;
pub mod preview;
pub mod run_proof;
pub mod sealed;
pub mod secret;
pub mod state_machine;
pub mod telemetry;
pub mod template;
pub mod template_status;
pub mod ts;
pub mod validate;
pub mod vitals;
pub mod webhook;

pub use error::{Error, ErrorCategory, UserError};
