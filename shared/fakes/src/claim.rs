//! [`Claims`] in memory: every condition checked under one lock, then everything written, as a DynamoDB
//! transaction does.

use time::Duration;

use super::{DEFAULT_CONCURRENCY_LIMIT, FakeStore, lock};
use strato_domain::model::Operation;
use strato_domain::ports::{Claim, ClaimLost, Claims, Clock, ClusterStep, PortError};

impl Claims for FakeStore {
    async fn claim(&self, op: &mut Operation, claim: &Claim) -> Result<Result<(), ClaimLost>, PortError> {
        let mut s = lock(&self.state);
        let item = s.locks.get(&op.cluster_id).cloned().unwrap_or_default();
        let free = item.owner.is_none() || item.lease_expires_at.is_some_and(|exp| exp < claim.now);
        if !free || item.fencing_token >= claim.token {
            return Ok(Err(ClaimLost::Lock));
        }
        let limit = s
            .limits
            .get(&op.tenant_id)
            .copied()
            .unwrap_or(DEFAULT_CONCURRENCY_LIMIT);
        let running = s.slots.get(&op.tenant_id);
        let has_slot = running.is_some_and(|r| r.contains(&op.operation_id));
        if !has_slot && running.map_or(0, |r| r.len() as u32) >= limit {
            return Ok(Err(ClaimLost::Slot));
        }
        let stored_at = s.operations.get(&op.operation_id).map(|o| o.updated_at);
        if stored_at != Some(op.updated_at) || Self::take_injected_conflict(&mut s) {
            return Ok(Err(ClaimLost::Operation));
        }
        let key = (op.tenant_id.clone(), op.cluster_id.clone());
        let mut cluster = s.clusters.get(&key).cloned();
        match (claim.cluster, &mut cluster) {
            (ClusterStep::Untouched, _) => {}
            (ClusterStep::Not(state), Some(c)) if c.state() != state => {}
            (ClusterStep::Move { to, clear_error }, Some(c)) => {
                if c.state() == to || c.transition(to).is_err() {
                    return Ok(Err(ClaimLost::Cluster));
                }
                if clear_error {
                    c.last_error = None;
                }
                c.version += 1;
                c.updated_at = self.clock.now();
            }
            _ => return Ok(Err(ClaimLost::Cluster)),
        }

        let lock_item = s.locks.entry(op.cluster_id.clone()).or_default();
        lock_item.owner = Some(op.operation_id.clone());
        lock_item.lease_expires_at = Some(claim.now + claim.lease);
        lock_item.fencing_token = claim.token;
        s.slots
            .entry(op.tenant_id.clone())
            .or_default()
            .insert(op.operation_id.clone());
        if let (ClusterStep::Move { .. }, Some(c)) = (claim.cluster, cluster) {
            s.clusters.insert(key, c);
        }
        op.updated_at = self.clock.now().max(op.updated_at + Duration::microseconds(1));
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(Ok(()))
    }
}
