//! Strato's model: the vocabulary every other crate speaks. Identifiers, timestamps, the errors a tenant
//! sees, the cluster and operation records, the cluster state machine, the queue messages and the ECS event,
//! run proofs, approvals and plan summaries, cost and preview types, vitals (the metrics every function
//! emits) and the trace context. These modules import only each other, so a crate that needs only the model
//! (the log stream, the agent's wire users) is not rebuilt when templates, catalogs, validation or the ports
//! change. `strato-domain` re-exports every module under its own name (`strato_domain::ids`, …).

pub mod approval;
pub mod approval_rules;
pub mod cost;
pub mod ecs_event;
pub mod envelope;
pub mod error;
pub mod health;
pub mod ids;
pub mod messages;
pub mod model;
pub mod plan;
pub mod preview;
pub mod recent;
pub mod run_identity;
pub mod run_proof;
pub mod state_machine;
pub mod telemetry;
pub mod ts;
pub mod vitals;

pub use error::{Error, ErrorCategory, UserError};
