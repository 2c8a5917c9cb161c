//! What a run hands the engine, built from the domain's validated requests: the tfvars and provider files
//! ([`render`]), the stages composed from a template's modules ([`compose`]), template bundles packed and
//! unpacked with their digests ([`bundle`]), the modules' declared interfaces ([`modules`]) and the catalog's
//! check against them ([`catalog_check`]), provider lock files ([`provider_lock`]), modules checked against providers' schema facts ([`provider_schema`]), and the STS session
//! policies that cut a run's credentials down to its cluster ([`run_access`]).
//!
//! It sits above `strato-domain` (whose errors it returns) so that the functions that never touch a
//! template's files — the dispatcher, status, the log functions — do not build HCL parsing or tar.

pub mod artifacts;
pub mod backend;
pub mod bundle;
pub mod bundle_check;
pub mod catalog_check;
pub mod compose;
pub mod cost;
pub mod modules;
pub mod provider_lock;
pub mod provider_schema;
pub mod render;
pub mod run_access;
pub mod state_key;
pub mod state_lock;
