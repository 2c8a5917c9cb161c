//! The clouds besides AWS, as the runner reaches them itself (the engine's providers reach them on their own):
//! the preflight of each cloud's credentials ([`preflight::check`]) and where each cloud's identity endpoints
//! are ([`CloudEndpoints`]).

mod azure;
mod endpoints;
mod gcp;
pub(crate) mod http;
pub mod preflight;
mod refusal;
pub mod storage;
mod tokens;

pub use endpoints::CloudEndpoints;
pub use preflight::CloudCheck;
pub use refusal::PreflightError;

#[cfg(test)]
mod tests;
