//! What the cluster agent's calls may do to its cluster, decided on the cluster record alone (no I/O): the
//! handlers in `crate::agent` read the cluster, run these, and write it back with its version check.
//!
//! - A registration (the one-time registration token, only while CONFIGURING, before the deadline) issues
//!   the agent's credential; only its sha256 is kept.
//! - A credential is checked against the cluster named in it, in constant time; one not used yet after a
//!   rotation retires the previous one when it is first used. Every refusal is the same 401, so a caller
//!   learns nothing about which clusters exist or what went wrong.
//! - Reports closer together than `MIN_HEARTBEAT_SECS` are refused (429) before anything is written.
//! - Each accepted report records the cluster's health and says whether its status changed.

use strato_agent_wire::{MIN_HEARTBEAT_SECS, Report};
use strato_domain::agent::{credential_matches, new_credential, token_hash};
use strato_domain::health::{self, HealthChange};
use strato_domain::model::{Cluster, ClusterState};
use strato_domain::ts;
use time::OffsetDateTime;

use crate::error::ApiError;

/// The one answer to any credential that does not open the cluster it names.
pub fn refused() -> ApiError {
    ApiError::Unauthorized(
        "the agent credential is not valid; send the credential registration gave as \
         'Authorization: Bearer <cluster id>.<secret>'"
            .into(),
    )
}

/// Checks the registration and issues the credential (its hash is recorded on `c`; the credential itself
/// is returned, to be shown once).
pub fn register(c: &mut Cluster, now: OffsetDateTime) -> Result<String, ApiError> {
    if c.agent_registered_at.is_some() {
        return Err(ApiError::Conflict(
            "this cluster's agent is already registered; the registration token works once. The agent \
             sends heartbeats with the credential registration gave it"
                .into(),
        ));
    }
    if c.state() != ClusterState::Configuring {
        return Err(ApiError::Conflict(format!(
            "the cluster is {}; agents register only while it is CONFIGURING",
            c.state()
        )));
    }
    if let Some(deadline) = c.configuring_deadline
        && now > deadline
    {
        return Err(ApiError::Gone(format!(
            "the registration deadline passed at {}; the cluster fails — retry it once the agent can \
             reach the control plane",
            ts::format(deadline)
        )));
    }
    let credential = new_credential(&c.cluster_id);
    c.agent_credential_hash = Some(token_hash(&credential));
    c.agent_next_credential_hash = None;
    c.agent_registered_at = Some(now);
    Ok(credential)
}

/// Whether `credential` opens `c` (the cluster its id names). A rotated credential used for the first
/// time becomes the only one.
pub fn authenticate(c: &mut Cluster, credential: &str) -> Result<(), ApiError> {
    let named = strato_agent_wire::credential_cluster(credential);
    if named != Some(c.cluster_id.as_str()) || matches!(c.state(), ClusterState::Deleted) {
        return Err(refused());
    }
    // Both compared whatever the first gives, so the time taken does not tell which one matched.
    let current = c
        .agent_credential_hash
        .as_deref()
        .is_some_and(|h| credential_matches(h, credential));
    let next = c
        .agent_next_credential_hash
        .as_deref()
        .is_some_and(|h| credential_matches(h, credential));
    if next {
        c.agent_credential_hash = c.agent_next_credential_hash.take();
        return Ok(());
    }
    if current { Ok(()) } else { Err(refused()) }
}

/// Refuses a report closer than `MIN_HEARTBEAT_SECS` to the last accepted one: 429 with the seconds to wait.
pub fn throttle(c: &Cluster, now: OffsetDateTime) -> Result<(), ApiError> {
    let Some(last) = c.agent_last_seen else {
        return Ok(());
    };
    let since = (now - last).whole_milliseconds();
    let min = i128::from(MIN_HEARTBEAT_SECS) * 1000;
    if since >= min {
        return Ok(());
    }
    let wait = ((min - since.max(0)) as u64).div_ceil(1000).max(1);
    Err(ApiError::TooSoon {
        retry_after_secs: wait,
        detail: format!(
            "the last report arrived {} ms ago; report at most every {MIN_HEARTBEAT_SECS} s (retry after \
             {wait} s)",
            since.max(0)
        ),
    })
}

/// Records an accepted report of `requested` Ready nodes' cluster at `now`: its health, and the change of
/// health status, if any.
pub fn accept(c: &mut Cluster, report: &Report, requested: u64, now: OffsetDateTime) -> Option<HealthChange> {
    c.agent_last_seen = Some(now);
    health::record(c, health::assess(report, requested, now))
}

/// A new credential for `c`'s agent; the current one keeps working until the new one is first used.
pub fn rotate(c: &mut Cluster) -> String {
    let credential = new_credential(&c.cluster_id);
    c.agent_next_credential_hash = Some(token_hash(&credential));
    credential
}
