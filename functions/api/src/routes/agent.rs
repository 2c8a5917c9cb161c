//! The cluster agent's routes (entries of [`super::ROUTES`]): registration with the one-time token, then
//! heartbeats and credential rotation with the agent's own credential. No tenant JWT: the handlers check
//! the agent's token themselves.

use axum::routing::on;

use super::texts::{CREDENTIAL_DESCRIPTION, HEARTBEAT_DESCRIPTION, REGISTER_DESCRIPTION};
use crate::handlers as h;
use crate::route::{Access, Body, Doc, Endpoint, Route, doc};

// Once, with the registration token; answers the credential.
pub(super) const REGISTER: Route = Route {
    endpoint: Endpoint::AgentRegister,
    method: "POST",
    path: "/v1/agent/register",
    access: Access::Agent,
    body: Body::Limited,
    handler: |m| on(m, h::agent_register),
    audit: None,
    doc: Doc {
        description: Some(REGISTER_DESCRIPTION),
        ..doc(
            "Register a cluster's agent (registration token)",
            Some("AgentReportRequest"),
            &[(201, "AgentRegistered", "Registered: the agent's credential")],
            &[400, 409, 410],
        )
    },
};

// Reports with the credential: health, throttled.
pub(super) const HEARTBEAT: Route = Route {
    endpoint: Endpoint::AgentHeartbeat,
    method: "POST",
    path: "/v1/agent/heartbeat",
    access: Access::Agent,
    body: Body::Limited,
    handler: |m| on(m, h::agent_heartbeat),
    audit: None,
    doc: Doc {
        description: Some(HEARTBEAT_DESCRIPTION),
        ..doc(
            "A cluster agent's heartbeat (agent credential)",
            Some("AgentReportRequest"),
            &[(200, "AgentAck", "Recorded")],
            &[400, 409, 429],
        )
    },
};

// A new credential; the old one retires when the new one is first used.
pub(super) const CREDENTIAL: Route = Route {
    endpoint: Endpoint::AgentCredential,
    method: "POST",
    path: "/v1/agent/credential",
    access: Access::Agent,
    body: Body::Limited,
    handler: |m| on(m, h::agent_credential),
    audit: None,
    doc: Doc {
        description: Some(CREDENTIAL_DESCRIPTION),
        ..doc(
            "Rotate a cluster agent's credential (agent credential)",
            None,
            &[(200, "AgentRotated", "The new credential")],
            &[409],
        )
    },
};
