//! A rollout's notices as webhook events: `rollout.paused` (with the reason), `rollout.completed`,
//! `rollout.aborted`. Each goes to the tenants whose clusters are in the rollout — a tenant's rollout holds
//! only its own clusters, so that is its owner; a platform rollout tells each member tenant, as its clusters
//! are the ones changing (the operator follows it with `GET /v1/admin/rollouts/{id}`). Queued only where
//! the tenant's webhook subscribes to the event (the caller's check); each event's id is deterministic (the
//! rollout, the notice and the rollout's version), so a notice sent twice is one event to receivers.

use serde::Serialize;
use strato_domain::ids::TenantId;
use strato_domain::messages::WebhookMessage;
use strato_domain::webhook::EventType;
use time::OffsetDateTime;

use crate::effects::Notice;
use crate::machine::PauseReason;
use crate::report::FleetSummary;
use crate::store::{Record, RolloutId};

/// The `data` of the `rollout.*` events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RolloutEvent {
    pub rollout_id: RolloutId,
    pub template: String,
    pub to_version: String,
    /// `paused`, `completed` or `aborted`.
    pub phase: &'static str,
    /// Why it paused (one line for people), and the pause as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseReason>,
    /// The fleet summary when it happened.
    pub summary: FleetSummary,
}

/// The event type of `notice`.
pub fn event_type(notice: &Notice) -> EventType {
    match notice {
        Notice::Paused(_) => EventType::RolloutPaused,
        Notice::Completed => EventType::RolloutCompleted,
        Notice::Aborted => EventType::RolloutAborted,
    }
}

/// The tenants told of `r`'s notices: those with a cluster in it, each once.
pub fn tenants(r: &Record) -> Vec<TenantId> {
    let mut out: Vec<TenantId> = r.rollout.members.iter().map(|m| m.tenant.clone()).collect();
    out.sort();
    out.dedup();
    out
}

/// One webhook message per tenant told of `notice` (see [`tenants`]), at `at`.
pub fn messages(
    r: &Record,
    notice: &Notice,
    at: OffsetDateTime,
) -> Result<Vec<WebhookMessage>, serde_json::Error> {
    let kind = event_type(notice);
    let (phase, pause) = match notice {
        Notice::Paused(p) => ("paused", Some(p.clone())),
        Notice::Completed => ("completed", None),
        Notice::Aborted => ("aborted", None),
    };
    let data = serde_json::to_value(RolloutEvent {
        rollout_id: r.id.clone(),
        template: r.template.clone(),
        to_version: r.to_version.clone(),
        phase,
        reason: pause.as_ref().map(PauseReason::text),
        pause,
        summary: FleetSummary::of(&r.rollout),
    })?;
    // The version a notice was saved with tells two pauses of one rollout apart.
    let subject = format!("{}/{phase}/{}", r.id, r.version);
    tenants(r)
        .into_iter()
        .map(|t| {
            let subject = format!("{subject}/{t}");
            WebhookMessage::event(t, None, kind, &subject, at, data.clone())
        })
        .collect()
}
