//! Cluster expiry: when a cluster is deleted on its own, how a request sets it (`expires_at` or
//! `ttl_hours`, bounded by the tenant's maximum), and what the scheduler does about a cluster near or past
//! its expiry. Pure decisions; the API and the scheduler apply them.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::model::{Cluster, ClusterState};

/// Environment default of the tenant maximum (hours), used when the tenant item has no `max_ttl_hours`.
/// Unset: no maximum.
pub const MAX_TTL_ENV: &str = "STRATO_MAX_TTL_HOURS";

/// How long before its expiry a cluster's `cluster.expiring` notification is sent (hours; default 24).
pub const EXPIRY_NOTICE_ENV: &str = "STRATO_EXPIRY_NOTICE_HOURS";
pub const DEFAULT_EXPIRY_NOTICE_HOURS: u64 = 24;

/// The partition key value of the sparse `by_expiry` index: set on clusters with an expiry that are not
/// being deleted.
pub const EXPIRY_BUCKET: &str = "expiring";

/// The largest `ttl_hours` taken: a hundred years.
pub const MAX_TTL_HOURS: u64 = 24 * 365 * 100;

/// What a request asks of a cluster's expiry, as read from its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExpiryRequest {
    /// `Some(None)`: `"expires_at": null` (PATCH: clear it).
    pub expires_at: Option<Option<OffsetDateTime>>,
    pub ttl_hours: Option<u64>,
}

/// A field of the request that is wrong, and why (the API answers 422 naming it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ExpiryError {
    pub field: &'static str,
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> ExpiryError {
    ExpiryError {
        field,
        message: message.into(),
    }
}

/// What becomes of the cluster's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryChange {
    /// The request says nothing about it.
    Keep,
    Set(OffsetDateTime),
    Clear,
}

/// Reads `req` at `now` for a tenant whose maximum is `max_ttl_hours` (`None`: unlimited). On create
/// (`creating`) a cluster of a tenant with a maximum gets that maximum when it asks for nothing, so no
/// cluster outlives it.
pub fn resolve(
    req: ExpiryRequest,
    now: OffsetDateTime,
    max_ttl_hours: Option<u64>,
    creating: bool,
) -> Result<ExpiryChange, ExpiryError> {
    // Hours far beyond any real lifetime would overflow the date: capped (a limit that large is none).
    let hours = |h: u64| now.checked_add(Duration::hours(h.min(MAX_TTL_HOURS) as i64));
    let max = max_ttl_hours.and_then(hours);
    let beyond = |field, at: OffsetDateTime| match (max, max_ttl_hours) {
        (Some(m), Some(h)) if at > m => Err(err(
            field,
            format!(
                "is beyond your tenant's maximum lifetime of {h} hours (at most {})",
                crate::ts::format(m)
            ),
        )),
        _ => Ok(()),
    };
    match (req.expires_at, req.ttl_hours) {
        (Some(_), Some(_)) => Err(err("ttl_hours", "give expires_at or ttl_hours, not both")),
        (None, Some(0)) => Err(err("ttl_hours", "must be at least 1")),
        (None, Some(h)) if h > MAX_TTL_HOURS => Err(err(
            "ttl_hours",
            format!("must be at most {MAX_TTL_HOURS} (a hundred years)"),
        )),
        (None, Some(h)) => {
            let at = hours(h).ok_or_else(|| err("ttl_hours", "is too far in the future"))?;
            beyond("ttl_hours", at)?;
            Ok(ExpiryChange::Set(at))
        }
        (Some(Some(at)), None) => {
            if at <= now {
                return Err(err(
                    "expires_at",
                    "is in the past; give a time to come (RFC 3339)",
                ));
            }
            beyond("expires_at", at)?;
            Ok(ExpiryChange::Set(at))
        }
        (Some(None), None) if creating => Ok(default_on_create(max)),
        (Some(None), None) => match max_ttl_hours {
            Some(h) => Err(err(
                "expires_at",
                format!(
                    "cannot be cleared: your tenant's clusters live at most {h} hours; extend it instead"
                ),
            )),
            None => Ok(ExpiryChange::Clear),
        },
        (None, None) if creating => Ok(default_on_create(max)),
        (None, None) => Ok(ExpiryChange::Keep),
    }
}

fn default_on_create(max: Option<OffsetDateTime>) -> ExpiryChange {
    max.map_or(ExpiryChange::Keep, ExpiryChange::Set)
}

impl ExpiryChange {
    /// Applies the change to `c`. A new expiry time gets its own `cluster.expiring` notice.
    pub fn apply(self, c: &mut Cluster) -> bool {
        let next = match self {
            ExpiryChange::Keep => return false,
            ExpiryChange::Set(at) => Some(at),
            ExpiryChange::Clear => None,
        };
        let changed = c.expires_at != next;
        c.expires_at = next;
        c.expiry_bucket = index_bucket(c);
        changed
    }
}

/// Keeps the `by_expiry` index attribute in step with the cluster: present while it has an expiry and is
/// not being deleted (the index is sparse, so deleted clusters leave it).
pub fn index_bucket(c: &Cluster) -> Option<String> {
    let gone = matches!(c.state(), ClusterState::Deleting | ClusterState::Deleted);
    (c.expires_at.is_some() && !gone).then(|| EXPIRY_BUCKET.to_owned())
}

/// What the scheduler does about a cluster the `by_expiry` index returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpiryAction {
    /// Past its expiry: queue a delete (unless an operation is open: then next run).
    Delete,
    /// Within the notice window and not yet told for this expiry time.
    Notify,
    /// Nothing now (told already, no expiry any more, or being deleted).
    Nothing,
}

/// The action for `c` at `now` with a notice `notice` ahead of expiry.
pub fn action(c: &Cluster, now: OffsetDateTime, notice: Duration) -> ExpiryAction {
    let Some(at) = c.expires_at else {
        return ExpiryAction::Nothing;
    };
    if matches!(c.state(), ClusterState::Deleting | ClusterState::Deleted) {
        return ExpiryAction::Nothing;
    }
    if at <= now {
        ExpiryAction::Delete
    } else if at - notice <= now && c.expiry_notified_for != Some(at) {
        ExpiryAction::Notify
    } else {
        ExpiryAction::Nothing
    }
}

/// The `data` of a `cluster.expiring` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiringEvent {
    pub tenant_id: crate::ids::TenantId,
    pub cluster_id: crate::ids::ClusterId,
    pub cluster_name: String,
    #[serde(with = "crate::ts")]
    pub expires_at: OffsetDateTime,
}

#[cfg(test)]
#[path = "expiry/tests.rs"]
mod tests;
