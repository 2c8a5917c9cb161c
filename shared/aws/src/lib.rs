//! Strato's AWS adapters: SDK clients, the resource definitions (tables, queues, buckets), the DynamoDB store,
//! the queues and the SQS batch loop every consumer uses, the template bundle catalog, log I/O, cluster-lock
//! coordination, Terraform state locks, and the domain ports implemented on them.

pub mod aws;
pub mod batch;
pub mod boot;
pub mod bundles;
pub mod coordination;
pub mod eks_token;
pub mod env;
pub mod error;
pub mod log_io;
pub mod ports;
pub mod queues;
pub mod resources;
pub mod secret_env;
pub mod spill;
pub mod state_lock;
pub mod store;

pub use error::Error;
