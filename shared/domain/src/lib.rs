//! Strato's domain: identifiers, domain records, the cluster state machine, template manifests and provider
//! catalogs, validation, rendering and composition of Terraform inputs, cost estimates, the queue and event
//! contracts, log frames and webhook signatures. Pure: no AWS SDK, no I/O beyond reading template files.

pub mod agent;
pub mod artifacts;
pub mod bundle;
pub mod catalog;
pub mod catalog_check;
pub mod compose;
pub mod cost;
pub mod ecs_event;
pub mod error;
pub mod ids;
pub mod logs;
pub mod messages;
pub mod model;
pub mod modules;
pub mod render;
pub mod state_machine;
pub mod template;
pub mod ts;
pub mod validate;
pub mod webhook;

pub use error::{Error, ErrorCategory, UserError};
