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
        let key = (cluster.tenant_id.clone(), cluster.cluster_id.clone());
        let stored = s.clusters.get(&key).map(|c| c.version);
        if stored != Some(cluster.version) || Self::take_injected_conflict(&mut s) {
            return Err(PortError::Conflict(format!(
                "cluster {} changed since version {}",
                cluster.cluster_id, cluster.version
            )));
        }
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
        let s = lock(&self.state);
        // As the sparse index holds them: those with the bucket set, by expiry time.
        let mut due: Vec<(OffsetDateTime, Cluster)> = s
            .clusters
            .values()
            .filter(|c| c.expiry_bucket.is_some())
            .filter_map(|c| c.expires_at.filter(|at| *at <= before).map(|at| (at, c.clone())))
            .collect();
        due.sort_by_key(|(at, _)| *at);
        Ok(due
            .into_iter()
            .take(limit.max(0) as usize)
            .map(|(_, c)| c)
            .collect())
    }

    async fn clusters_silent_since(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        let s = lock(&self.state);
        // As the sparse index holds them: those with the bucket set, by the agent's last report.
        let mut due: Vec<(OffsetDateTime, Cluster)> = s
            .clusters
            .values()
            .filter(|c| c.agent_watch.is_some())
            .filter_map(|c| {
                c.agent_last_seen
                    .filter(|at| *at <= before)
                    .map(|at| (at, c.clone()))
            })
            .collect();
        due.sort_by_key(|(at, _)| *at);
        Ok(due
            .into_iter()
            .take(limit.max(0) as usize)
            .map(|(_, c)| c)
            .collect())
    }

    async fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        let s = lock(&self.state);
        // As the index orders them: by next check time.
        let mut due: Vec<(OffsetDateTime, Cluster)> = s
            .clusters
            .values()
            .filter(|c| c.state() == ClusterState::Active)
            .filter_map(|c| {
                let at = strato_domain::ts::parse(c.next_drift_check_at.as_deref()?)?;
                (at <= now).then(|| (at, c.clone()))
            })
            .collect();
        due.sort_by_key(|(at, _)| *at);
        Ok(due
            .into_iter()
            .take(limit.max(0) as usize)
            .map(|(_, c)| c)
            .collect())
    }
}
