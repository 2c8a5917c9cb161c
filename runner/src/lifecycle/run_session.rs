//! What every step that takes credentials shares: the name of the run's STS sessions (CloudTrail shows it, so
//! a session is traced back to its operation) and the redaction of the credentials it gets. The AWS steps
//! (`access`) and the federated ones (`federation`) both use it.

use secrecy::ExposeSecret;

use super::RunContext;
use crate::credentials::EngineCredentials;
use crate::ports::Ports;

pub(super) fn session_name<P: Ports>(ctx: &RunContext<P>) -> String {
    format!("strato-{}", ctx.op.operation_id)
}

/// Credentials never reach a log line or a message.
pub(super) fn redact<P: Ports>(ctx: &RunContext<P>, c: &EngineCredentials) {
    ctx.logs.redactor.add(c.secret_access_key.expose_secret());
    if let Some(t) = &c.session_token {
        ctx.logs.redactor.add(t.expose_secret());
    }
}
