//! The clouds besides AWS, as the runner reaches them itself (the engine's providers reach them on their own):
//! the preflight of each cloud's credentials ([`preflight::check`]) and where each cloud's identity endpoints
//! are ([`CloudEndpoints`]).

mod azure;
mod endpoints;
mod gcp;
pub(crate) mod http;
pub mod preflight;
mod tokens;

pub use endpoints::CloudEndpoints;
pub use preflight::{CloudCheck, PreflightError};

#[cfg(test)]
mod tests;
