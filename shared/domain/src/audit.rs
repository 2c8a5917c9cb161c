//! The audit log (issue 22): who did what to which cluster, when, and how it ended. Every mutating API call
//! (refused ones too) and every action Strato takes on its own is one [`AuditEntry`], appended through the
//! [`AuditLog`] port and never changed afterwards: the port has no update or delete, and the AWS adapter's
//! IAM allows `PutItem` and `Query` only.

use std::future::Future;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::{ClusterId, OperationId, TenantId};
use crate::model::{Operation, OperationKind, OperationStatus};
// The ports' error (`ports::PortError` is this type), named from its home: ports.rs names this module.
use crate::error::Error as PortError;

/// Largest page `GET /v1/audit` returns; also its default.
pub const MAX_PAGE: u32 = 100;

/// How an audited action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Succeeded,
    /// A request that queued work (a 202): it was accepted, and how the work ended is the operation's own
    /// entry ([`operation_ended`]), not this one.
    Accepted,
    /// Refused for the caller's reason (a 4xx: missing scope, invalid input, a conflict).
    Refused,
    /// Failed on Strato's side (a 5xx, a system action that did not complete, an operation that failed).
    Failed,
    /// An operation that ended cancelled.
    Cancelled,
}

impl Outcome {
    /// The outcome an HTTP answer with `status` stands for: a 202 only accepted the request, since the
    /// operation it queued may still fail.
    pub fn of_status(status: u16) -> Self {
        match status {
            202 => Outcome::Accepted,
            ..400 => Outcome::Succeeded,
            400..500 => Outcome::Refused,
            _ => Outcome::Failed,
        }
    }
}

/// The entry of an operation's end, by Strato's `function` that ended it: action `operation.end`, the
/// operation's status as the outcome (`None` for one that has not ended), and a detail of its kind, and for
/// a failure its step and error category — never the error's text, which may quote what Terraform or a
/// provider printed.
pub fn operation_ended(function: &str, op: &Operation, now: OffsetDateTime) -> Option<AuditEntry> {
    let outcome = match op.status {
        OperationStatus::Succeeded => Outcome::Succeeded,
        OperationStatus::Failed => Outcome::Failed,
        OperationStatus::Cancelled => Outcome::Cancelled,
        _ => return None,
    };
    let kind = crate::vitals::label(&op.kind);
    let mut detail = format!("{kind} operation {}", crate::vitals::label(&op.status));
    if let (Outcome::Failed | Outcome::Cancelled, Some(e)) = (outcome, &op.error) {
        detail.push_str(&format!(
            " at step {} ({})",
            e.step,
            crate::vitals::label(&e.category)
        ));
    }
    let cluster = (op.kind != OperationKind::Estimate).then(|| op.cluster_id.clone());
    Some(
        AuditEntry::system(function, op.tenant_id.clone(), now, "operation.end", outcome)
            .on_cluster(cluster)
            .on_operation(Some(op.operation_id.clone()))
            .with_detail(detail),
    )
}

/// One recorded action. `id` sorts like `time` (a fixed-width timestamp, then a unique suffix), so two
/// entries of the same instant both land and keep an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub tenant_id: TenantId,
    pub id: String,
    #[serde(with = "crate::ts")]
    pub time: OffsetDateTime,
    /// The token's `sub`, or `strato:<function>` for what Strato did on its own.
    pub principal: String,
    /// What was done, `noun.verb`: `cluster.create`, `operation.dispatch`, `lock.release`…
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<ClusterId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<OperationId>,
    /// The API request (Lambda request id) that did it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub outcome: Outcome,
    /// The HTTP status of an API call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// A short reason for a refused or failed action (a problem's title), or what a system action did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl AuditEntry {
    /// A new entry at `time`, with a fresh unique id.
    pub fn new(
        tenant_id: TenantId,
        time: OffsetDateTime,
        principal: impl Into<String>,
        action: impl Into<String>,
        outcome: Outcome,
    ) -> Self {
        Self {
            id: entry_id(time),
            tenant_id,
            time,
            principal: principal.into(),
            action: action.into(),
            cluster_id: None,
            operation_id: None,
            request_id: None,
            outcome,
            status: None,
            detail: None,
        }
    }

    /// An action Strato's function `function` took on its own (principal `strato:<function>`).
    pub fn system(
        function: &str,
        tenant_id: TenantId,
        time: OffsetDateTime,
        action: impl Into<String>,
        outcome: Outcome,
    ) -> Self {
        Self::new(tenant_id, time, format!("strato:{function}"), action, outcome)
    }

    pub fn on_cluster(mut self, id: Option<ClusterId>) -> Self {
        self.cluster_id = id.or(self.cluster_id);
        self
    }

    pub fn on_operation(mut self, id: Option<OperationId>) -> Self {
        self.operation_id = id.or(self.operation_id);
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// `{time}#{uuid}`: the fixed-width time sorts first; the UUID (v7, with random bits) makes it unique.
pub fn entry_id(time: OffsetDateTime) -> String {
    format!("{}#{}", crate::ts::format(time), uuid::Uuid::now_v7().simple())
}

/// What to list: one tenant's entries, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub cluster: Option<ClusterId>,
    pub actor: Option<String>,
    /// Only entries at or after this time.
    pub since: Option<OffsetDateTime>,
    /// At most this many entries (1..=[`MAX_PAGE`]).
    pub limit: u32,
    /// Continue after (older than) this entry id: the previous page's `next`.
    pub after: Option<String>,
}

/// One page of entries; `next` is where the following page starts (`None`: nothing more).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub next: Option<String>,
}

/// The append-only log. There is deliberately no way to change or remove an entry (retention is the
/// store's TTL).
pub trait AuditLog: Send + Sync {
    /// Records `entry`; never overwrites one already recorded (a repeated id is a conflict).
    fn append(&self, entry: &AuditEntry) -> impl Future<Output = Result<(), PortError>> + Send;

    /// A page of `tenant`'s entries matching `query`, newest first. A page may hold fewer than `limit`
    /// entries and still have a `next` (the store filters after reading a page).
    fn query(
        &self,
        tenant: &TenantId,
        query: &AuditQuery,
    ) -> impl Future<Output = Result<AuditPage, PortError>> + Send;
}

/// Records `entry`, logging and counting a failure instead of returning it: the audit record of an action
/// must never turn the action (already done) into an error.
pub async fn record(log: &impl AuditLog, entry: AuditEntry) {
    if let Err(e) = log.append(&entry).await {
        metrics::counter!(crate::vitals::AUDIT_WRITE_FAILURES).increment(1);
        tracing::error!(
            error = %e,
            action = %entry.action,
            tenant_id = %entry.tenant_id.as_str(),
            principal = %entry.principal,
            "audit entry not recorded"
        );
    }
}

/// Parses `since`: an RFC 3339 time, or a duration back from `now` (`90s`, `15m`, `24h`, `7d`).
pub fn parse_since(raw: &str, now: OffsetDateTime) -> Option<OffsetDateTime> {
    if let Some(t) = crate::ts::parse(raw) {
        return Some(t);
    }
    let raw = raw.trim();
    let unit = raw.chars().last()?;
    let n: i64 = raw[..raw.len() - unit.len_utf8()].parse().ok()?;
    if n < 0 {
        return None;
    }
    let d = match unit {
        's' => time::Duration::seconds(n),
        'm' => time::Duration::minutes(n),
        'h' => time::Duration::hours(n),
        'd' => time::Duration::days(n),
        _ => return None,
    };
    now.checked_sub(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn ids_sort_by_time_and_never_collide() {
        let t = datetime!(2026-11-25 10:00:00 UTC);
        let a = entry_id(t);
        let b = entry_id(t);
        assert_ne!(a, b, "two entries of one instant both land");
        let later = entry_id(t + time::Duration::microseconds(1));
        assert!(a < later && b < later);
        let earlier = entry_id(datetime!(2026-11-25 09:59:59.999999 UTC));
        assert!(earlier < a);
    }

    #[test]
    fn outcomes_follow_the_status_class() {
        // A 202 queued an operation that may still fail: accepted, not succeeded.
        assert_eq!(Outcome::of_status(202), Outcome::Accepted);
        assert_eq!(Outcome::of_status(200), Outcome::Succeeded);
        assert_eq!(Outcome::of_status(204), Outcome::Succeeded);
        assert_eq!(Outcome::of_status(403), Outcome::Refused);
        assert_eq!(Outcome::of_status(409), Outcome::Refused);
        assert_eq!(Outcome::of_status(500), Outcome::Failed);
    }

    #[test]
    fn since_takes_a_time_or_a_duration() {
        let now = datetime!(2026-11-25 12:00:00 UTC);
        assert_eq!(parse_since("2d", now), Some(datetime!(2026-11-23 12:00:00 UTC)));
        assert_eq!(parse_since("15m", now), Some(datetime!(2026-11-25 11:45:00 UTC)));
        assert_eq!(
            parse_since("2026-11-01T00:00:00Z", now),
            Some(datetime!(2026-11-01 00:00:00 UTC))
        );
        for bad in ["", "d", "yesterday", "-1h", "5w", "2026-13-01"] {
            assert_eq!(parse_since(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn system_entries_name_the_function() {
        let e = AuditEntry::system(
            "scheduler",
            "acme".parse().unwrap(),
            datetime!(2026-11-25 12:00:00 UTC),
            "lock.release",
            Outcome::Succeeded,
        );
        assert_eq!(e.principal, "strato:scheduler");
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["outcome"], "succeeded");
        assert_eq!(json["time"], "2026-11-25T12:00:00.000000Z");
        assert!(json.get("cluster_id").is_none());
    }
}
