//! Strato's domain: identifiers, domain records, the cluster state machine, template manifests and provider
//! catalogs, validation, rendering and composition of Terraform inputs, cost estimates, the queue and event
//! contracts, log frames and webhook signatures, the ports decisions take their dependencies through, and the
//! hand-off rules written against them. Pure: no AWS SDK, no I/O beyond reading template files.

pub mod agent;
pub mod approval;
pub mod artifacts;
pub mod audit;
pub mod bundle;
pub mod catalog;
pub mod catalog_check;
pub mod compose;
pub mod coordination;
pub mod cost;
pub mod ecs_event;
pub mod error;
pub mod expiry;
#[cfg(feature = "fakes")]
pub mod fakes;
pub mod ids;
pub mod live_batch;
pub mod logs;
pub mod messages;
pub mod model;
pub mod modules;
pub mod ports;
pub mod provider_lock;
pub mod render;
pub mod run_access;
pub mod run_proof;
pub mod sealed;
pub mod secret;
pub mod state_lock;
pub mod state_machine;
pub mod telemetry;
pub mod template;
pub mod ts;
pub mod validate;
pub mod vitals;
pub mod webhook;

pub use error::{Error, ErrorCategory, UserError};
