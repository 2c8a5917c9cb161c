//! Strato on one machine: moto, API Gateway HTTP + WebSocket, SQS event source mappings, schedules and
//! Fargate emulated around the real function code.
//!
//! The pieces, each usable alone (tests use them directly):
//! - [`stack::Devstack`] starts everything ([`stack::DevstackConfig`]) and stops it cleanly;
//! - [`registry::Registry`] says which handler serves the HTTP API, which handler each queue feeds and which
//!   handler each schedule fires — functions not built yet plug in through [`registry::Plugin`];
//! - [`gateway`] is the API Gateway HTTP API (payload v2, JWT authorizer from [`auth`]);
//! - [`sqs`] the SQS event source mappings, [`schedule`] the EventBridge schedules;
//! - [`fargate`] runs one runner process per ECS task and reports ECS Task State Change events;
//! - [`runtime_api`] serves the Lambda Runtime API so each function's real binary can be invoked;
//! - [`kube`] emulates a tenant's Kubernetes cluster the runner installs the real cluster agent into, and
//!   [`cluster_agents`] gives each cluster of an agent template one, with the real agent running in it;
//! - [`client`] is what a user (the demo, end-to-end tests) calls the stack with.

pub mod apigw_ws;
pub mod auth;
pub mod capture;
pub mod chaos;
pub mod cli_profile;
pub mod client;
pub mod cluster_agents;
pub mod console;
pub mod demo;
pub mod demo_cloud;
pub mod error;
pub mod fargate;
pub mod gateway;
pub mod kube;
pub mod metrics;
pub mod moto_ctl;
pub mod paths;
pub mod registry;
pub mod runtime_api;
pub mod schedule;
pub mod sqs;
pub mod stack;
pub mod xray;

pub use error::DevstackError;
pub use registry::{Plugin, Registry};
pub use stack::{Applied, Deployment, Devstack, DevstackConfig, Endpoints, StackEnv};

/// Pulls an operation id (`op-…`) out of a message or event body, for logging every hop with it. Looks at
/// `operation_id` fields, the `STRATO_OPERATION_ID` override of an ECS event, and `startedBy`.
pub fn operation_id_in(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    find_operation_id(&v)
}

fn find_operation_id(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for key in ["operation_id", "startedBy"] {
                if let Some(Value::String(s)) = m.get(key)
                    && s.starts_with("op-")
                {
                    return Some(s.clone());
                }
            }
            if m.get("name").and_then(Value::as_str) == Some(strato_domain::messages::ENV_OPERATION_ID)
                && let Some(Value::String(s)) = m.get("value")
            {
                return Some(s.clone());
            }
            m.values().find_map(find_operation_id)
        }
        Value::Array(a) => a.iter().find_map(find_operation_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_found_in_jobs_runner_events_and_ecs_events() {
        assert_eq!(
            operation_id_in(r#"{"operation_id":"op-1","cluster_id":"cl-1"}"#).as_deref(),
            Some("op-1")
        );
        let ecs = r#"{"detail-type":"ECS Task State Change","detail":{"overrides":{"containerOverrides":
            [{"name":"runner","environment":[{"name":"STRATO_OPERATION_ID","value":"op-2"}]}]}}}"#;
        assert_eq!(operation_id_in(ecs).as_deref(), Some("op-2"));
        assert_eq!(
            operation_id_in(r#"{"detail":{"startedBy":"op-3"}}"#).as_deref(),
            Some("op-3")
        );
        assert_eq!(operation_id_in("not json"), None);
        assert_eq!(operation_id_in(r#"{"x":1}"#), None);
    }
}
