//! The api's handler driven with API Gateway events against moto (one server for the run, each test its
//! own resources): routes, roles, audit, sealed values, estimates, policies, the contract and hardening.

mod common;
#[allow(dead_code)] // each module uses a different part
mod conformance;

mod agent;
mod api;
mod audit;
mod contract;
mod estimates;
mod governance;
mod hardening;
mod operator;
mod operator_templates;
mod policies;
mod roles;
mod rollouts_store;
mod sealed;
mod settings;
mod views;
