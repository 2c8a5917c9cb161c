//! The audit log in memory, with the adapter's semantics: an id is written once, pages go newest first and
//! continue after the previous page's last id.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::lock;
use strato_domain::audit::{AuditEntry, AuditLog, AuditPage, AuditQuery};
use strato_domain::ids::TenantId;
use strato_domain::ports::PortError;

#[derive(Debug, Clone, Default)]
pub struct FakeAuditLog {
    entries: Arc<Mutex<BTreeMap<(TenantId, String), AuditEntry>>>,
    /// When set, every append fails (a test of the "never fails the action" rule).
    failing: Arc<Mutex<bool>>,
}

impl FakeAuditLog {
    /// Every entry recorded, oldest first.
    pub fn entries(&self) -> Vec<AuditEntry> {
        lock(&self.entries).values().cloned().collect()
    }

    pub fn fail_appends(&self, fail: bool) {
        *lock(&self.failing) = fail;
    }
}

impl FakeAuditLog {
    /// Appends `entry` at once: [`AuditLog::append`], and the entries the store writes with a change.
    pub(crate) fn insert(&self, entry: &AuditEntry) -> Result<(), PortError> {
        if *lock(&self.failing) {
            return Err(PortError::Unavailable("audit log (scripted)".into()));
        }
        let key = (entry.tenant_id.clone(), entry.id.clone());
        let mut entries = lock(&self.entries);
        if entries.contains_key(&key) {
            return Err(PortError::Conflict(format!("audit entry {} exists", entry.id)));
        }
        entries.insert(key, entry.clone());
        Ok(())
    }
}

impl AuditLog for FakeAuditLog {
    async fn append(&self, entry: &AuditEntry) -> Result<(), PortError> {
        self.insert(entry)
    }

    async fn query(&self, tenant: &TenantId, q: &AuditQuery) -> Result<AuditPage, PortError> {
        let since = q.since.map(strato_domain::ts::format);
        let mut matching = lock(&self.entries)
            .range((tenant.clone(), String::new())..)
            .take_while(|((t, _), _)| t == tenant)
            .map(|(_, e)| e)
            .filter(|e| since.as_deref().is_none_or(|s| e.id.as_str() >= s))
            .filter(|e| q.after.as_deref().is_none_or(|a| e.id.as_str() < a))
            .filter(|e| q.cluster.is_none() || e.cluster_id == q.cluster)
            .filter(|e| q.actor.as_deref().is_none_or(|a| e.principal == a))
            .cloned()
            .collect::<Vec<_>>();
        matching.reverse();
        let limit = q.limit.max(1) as usize;
        let more = matching.len() > limit;
        matching.truncate(limit);
        let next = more.then(|| matching.last().map(|e| e.id.clone())).flatten();
        Ok(AuditPage {
            entries: matching,
            next,
        })
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use strato_domain::audit::{Outcome, record};

    fn entry(tenant: &str, at: time::OffsetDateTime, who: &str, cluster: Option<&str>) -> AuditEntry {
        AuditEntry::new(
            tenant.parse().unwrap(),
            at,
            who,
            "cluster.update",
            Outcome::Succeeded,
        )
        .on_cluster(cluster.map(|c| c.parse().unwrap()))
    }

    #[tokio::test]
    async fn pages_go_newest_first_and_filters_and_tenants_hold() {
        let log = FakeAuditLog::default();
        let t0 = datetime!(2026-11-25 10:00:00 UTC);
        let cl = "cl-0123456789abcdef0123456789abcdef";
        for i in 0..5 {
            let who = if i % 2 == 0 { "alice" } else { "bob" };
            log.append(&entry("acme", t0 + time::Duration::minutes(i), who, Some(cl)))
                .await
                .unwrap();
        }
        // Same instant twice: both land.
        log.append(&entry("acme", t0, "carol", None)).await.unwrap();
        log.append(&entry("other", t0, "mallory", Some(cl)))
            .await
            .unwrap();
        let acme: TenantId = "acme".parse().unwrap();

        let mut q = AuditQuery {
            limit: 2,
            ..Default::default()
        };
        let mut seen = Vec::new();
        loop {
            let page = log.query(&acme, &q).await.unwrap();
            assert!(page.entries.len() <= 2);
            seen.extend(page.entries.iter().map(|e| e.id.clone()));
            match page.next {
                Some(n) => q.after = Some(n),
                None => break,
            }
        }
        assert_eq!(seen.len(), 6, "every acme entry once, none of the other tenant's");
        assert!(seen.windows(2).all(|w| w[0] > w[1]), "newest first");

        let bob = AuditQuery {
            actor: Some("bob".into()),
            limit: 10,
            ..Default::default()
        };
        assert_eq!(log.query(&acme, &bob).await.unwrap().entries.len(), 2);
        let on_cluster = AuditQuery {
            cluster: Some(cl.parse().unwrap()),
            since: Some(t0 + time::Duration::minutes(3)),
            limit: 10,
            ..Default::default()
        };
        assert_eq!(log.query(&acme, &on_cluster).await.unwrap().entries.len(), 2);
    }

    #[tokio::test]
    async fn an_id_is_written_once_and_a_failed_append_is_swallowed() {
        let log = FakeAuditLog::default();
        let e = entry("acme", datetime!(2026-11-25 10:00:00 UTC), "alice", None);
        log.append(&e).await.unwrap();
        assert!(matches!(log.append(&e).await, Err(PortError::Conflict(_))));
        log.fail_appends(true);
        record(
            &log,
            entry("acme", datetime!(2026-11-25 10:00:00 UTC), "alice", None),
        )
        .await;
        assert_eq!(log.entries().len(), 1);
    }
}
