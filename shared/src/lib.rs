//! Strato's shared core: identifiers, domain records, the cluster state machine, template manifests and
//! provider catalogs, validation and rendering of Terraform inputs, the AWS resource definitions, and the
//! offline test bed (feature `testbed`).

pub mod agent;
pub mod artifacts;
pub mod aws;
pub mod bundle;
pub mod catalog;
pub mod catalog_check;
pub mod compose;
pub mod coordination;
pub mod cost;
pub mod env;
pub mod error;
pub mod ids;
pub mod logs;
pub mod messages;
pub mod model;
pub mod modules;
pub mod queues;
pub mod render;
pub mod resources;
pub mod state_lock;
pub mod state_machine;
pub mod store;
pub mod template;
#[cfg(feature = "testbed")]
pub mod testbed;
pub mod ts;
pub mod validate;
pub mod webhook;

pub use error::{Error, ErrorCategory, UserError};
