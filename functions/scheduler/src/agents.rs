//! Silent cluster agents, run with every sweep: a cluster whose registered agent should be reporting
//! (ACTIVE or UPDATING) and has not for `STRATO_AGENT_STALE_SECS` is marked `degraded` with the reason
//! "the agent has not reported since <time>", once. Found through the sparse `by_agent_seen` index (a
//! Query, never a Scan), longest silent first; a marked cluster leaves the index, so later runs do not
//! see it again, and the agent's next accepted report (the api) brings it back.
//!
//! A change of health status goes out as the `cluster.health_changed` webhook event and a metric, as the
//! api does for reports. The mark is written first (with the cluster's version check, so a report that
//! arrived meanwhile wins): a failure to queue the event after it is logged, never sent twice.

use strato_domain::health::{self, Silence};
use strato_domain::ports::{Clusters, PortError, Webhooks};
use time::{Duration, OffsetDateTime};

use crate::decide::Report;

/// The silent-agent run's dependencies, as ports, and its settings.
#[derive(Debug, Clone, Copy)]
pub struct SilentAgents<'a, S, W> {
    pub store: &'a S,
    pub webhooks: &'a W,
    /// An agent silent this long marks its cluster degraded.
    pub stale_after: Duration,
    /// At most this many clusters per run; the rest are the next run's.
    pub batch: i32,
}

impl<S: Clusters, W: Webhooks> SilentAgents<'_, S, W> {
    /// One run at `now`; counts go to `report`.
    pub async fn run(&self, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        for mut c in self
            .store
            .clusters_silent_since(now - self.stale_after, self.batch)
            .await?
        {
            let change = match health::mark_silent(&mut c, now, self.stale_after) {
                Silence::Marked { change } => change,
                // Listed but not due (the index lags a write): saved again, which drops it from the index
                // if it no longer belongs there.
                Silence::NotDue if health::watch_bucket(&c) != c.agent_watch => None,
                Silence::NotDue => continue,
            };
            match self.store.store_cluster(&mut c).await {
                Ok(()) => {}
                // A report (or any change) arrived meanwhile: the next run decides again.
                Err(PortError::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
            if c.health.as_ref().is_some_and(|h| h.silent) {
                report.agents_marked_silent += 1;
                tracing::info!(cluster_id = %c.cluster_id, last_seen = ?c.agent_last_seen, "cluster agent silent: degraded");
            }
            if let Some(change) = change {
                match health::announce(self.webhooks, &c, &change, now).await {
                    Ok(sent) => report.health_events_sent += u32::from(sent),
                    Err(e) => {
                        tracing::warn!(cluster_id = %c.cluster_id, error = %e, "cluster.health_changed not queued")
                    }
                }
            }
        }
        Ok(())
    }
}
