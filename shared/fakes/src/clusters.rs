//! Cluster records in memory, saved by version as the store does, and the queries of its indexes (drift
//! due, expiring, silent agents), which keep the sparse indexes' keys as the store sets them.

use time::OffsetDateTime;

use super::{FakeStore, lock};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Cluster, ClusterState};
use strato_domain::ports::{Clock, Clusters, PortError};

impl Clusters for FakeStore {
    async fn load_cluster(&self, tenant: &TenantId, id: &ClusterId) -> Result<Option<Cluster>, PortError> {
        Ok(lock(&self.state)
            .clusters
            .get(&(tenant.clone(), id.clone()))
            .cloned())
    }

    async fn store_cluster(&self, cluster: &mut Cluster) -> Result<(), PortError> {
        let mut s = lock(&self.state);
        Self::check_cluster_version(&mut s, cluster)?;
        let key = (cluster.tenant_id.clone(), cluster.cluster_id.clone());
        cluster.version += 1;
        cluster.updated_at = self.clock.now();
        // As the store keeps the sparse expiry index's key.
        cluster.expiry_bucket = strato_domain::expiry::index_bucket(cluster);
        cluster.agent_watch = strato_domain::health::watch_bucket(cluster);
        s.clusters.insert(key, cluster.clone());
        Ok(())
    }

    async fn clusters_expiring_before(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        // As the sparse index holds them: those with the bucket set, by expiry time.
        Ok(self.oldest_first(limit, |c| {
            c.expiry_bucket.as_ref()?;
            c.expires_at.filter(|at| *at <= before)
        }))
    }

    async fn clusters_silent_since(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        // As the sparse index holds them: those with the bucket set, by the agent's last report.
        Ok(self.oldest_first(limit, |c| {
            c.agent_watch.as_ref()?;
            c.agent_last_seen.filter(|at| *at <= before)
        }))
    }

    async fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        // As the index orders them: by next check time.
        Ok(self.oldest_first(limit, |c| {
            if c.state() != ClusterState::Active {
                return None;
            }
            let at = strato_domain::ts::parse(c.next_drift_check_at.as_deref()?)?;
            (at <= now).then_some(at)
        }))
    }
}

impl FakeStore {
    /// The clusters an index query finds: those `at` gives a time (the index's key), earliest first, at
    /// most `limit`.
    fn oldest_first(&self, limit: i32, at: impl Fn(&Cluster) -> Option<OffsetDateTime>) -> Vec<Cluster> {
        let s = lock(&self.state);
        let mut due: Vec<(OffsetDateTime, Cluster)> = s
            .clusters
            .values()
            .filter_map(|c| at(c).map(|t| (t, c.clone())))
            .collect();
        due.sort_by_key(|(t, _)| *t);
        due.into_iter()
            .take(limit.max(0) as usize)
            .map(|(_, c)| c)
            .collect()
    }
}
