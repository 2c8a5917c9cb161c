//! Strato's HTTP API (API Gateway HTTP API, payload v2) as an axum [`router`], run by `lambda_http`.
//! Tenants come from the JWT authorizer's claims; every route is in [`routes::ROUTES`], which drives the router, the
//! authorization layer and the OpenAPI document.

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod access;
mod admin;
mod agent;
mod agent_report;
mod approval;
mod audit;
mod audit_draft;
mod caller;
mod cloud_tokens;
mod clusters;
pub mod commands;
mod connect;
mod context;
pub mod decide;
mod drift;
mod edge;
pub mod error;
mod estimates;
mod expiry;
mod federation;
mod handlers;
mod health_view;
mod idempotency;
mod lambda;
#[cfg(feature = "openapi")]
mod openapi;
mod operations;
pub mod operator;
mod parse;
mod policies;
mod preview;
mod preview_view;
pub mod problem;
mod recording;
mod requests;
pub mod rollout_queue;
pub mod rollout_runs;
mod rollouts;
pub mod route;
mod router;
pub mod routes;
mod schema;
pub mod scopes;
mod spec;
mod state;
mod suspension;
mod target;
mod target_access;
mod templates;
mod tenant;
mod tickets;
pub mod timeline;
mod views;

pub use audit_draft::AuditDraft;
pub use caller::Caller;
pub use context::{Config, Ctx, TicketSettings};
pub use error::ApiError;
pub use lambda::Invocation;
#[cfg(feature = "openapi")]
pub use openapi::{openapi, openapi_yaml};
pub use requests::{SpecBody, UpdateBody};
pub use router::{ApiService, router, service};
pub use tickets::TICKET_TTL;
