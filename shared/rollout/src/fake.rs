//! The rollout store in memory, with the adapters' conditional-write semantics (claims all or nothing, saves
//! on the version read), for fast tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use strato_domain::ids::ClusterId;

use crate::RolloutError;
use crate::store::{Record, RolloutId, RolloutStore};

#[derive(Debug, Clone, Default)]
pub struct FakeRollouts {
    rollouts: Arc<Mutex<BTreeMap<RolloutId, Record>>>,
    /// Saves to fail with a conflict before one holds (a concurrent writer, scripted).
    conflicts: Arc<Mutex<usize>>,
}

impl FakeRollouts {
    /// The next `n` saves lose their condition (as if another writer saved first).
    pub fn conflict_next(&self, n: usize) {
        *self.conflicts.lock().unwrap() = n;
    }

    fn holder(map: &BTreeMap<RolloutId, Record>, cluster: &ClusterId) -> Option<RolloutId> {
        map.values()
            .find(|r| r.active() && r.rollout.members.iter().any(|m| &m.cluster == cluster))
            .map(|r| r.id.clone())
    }
}

impl RolloutStore for FakeRollouts {
    async fn create(&self, r: &Record) -> Result<(), RolloutError> {
        let mut map = self.rollouts.lock().unwrap();
        if map.contains_key(&r.id) {
            return Err(RolloutError::Conflict);
        }
        for m in &r.rollout.members {
            if let Some(by) = Self::holder(&map, &m.cluster) {
                return Err(RolloutError::Claimed {
                    cluster: m.cluster.clone(),
                    rollout: by,
                });
            }
        }
        let mut stored = r.clone();
        stored.version = 0;
        map.insert(r.id.clone(), stored);
        Ok(())
    }

    async fn load(&self, id: &RolloutId) -> Result<Option<Record>, RolloutError> {
        Ok(self.rollouts.lock().unwrap().get(id).cloned())
    }

    async fn save(&self, r: &mut Record) -> Result<(), RolloutError> {
        {
            let mut c = self.conflicts.lock().unwrap();
            if *c > 0 {
                *c -= 1;
                // The other writer's save: the stored version moves on.
                if let Some(s) = self.rollouts.lock().unwrap().get_mut(&r.id) {
                    s.version += 1;
                }
                return Err(RolloutError::Conflict);
            }
        }
        let mut map = self.rollouts.lock().unwrap();
        match map.get(&r.id) {
            Some(s) if s.version == r.version => {}
            _ => return Err(RolloutError::Conflict),
        }
        r.version += 1;
        map.insert(r.id.clone(), r.clone());
        Ok(())
    }

    async fn list(&self) -> Result<Vec<Record>, RolloutError> {
        Ok(self.rollouts.lock().unwrap().values().rev().cloned().collect())
    }

    async fn claimed_by(&self, cluster: &ClusterId) -> Result<Option<RolloutId>, RolloutError> {
        Ok(Self::holder(&self.rollouts.lock().unwrap(), cluster))
    }

    async fn due(&self, now: i64) -> Result<Vec<RolloutId>, RolloutError> {
        Ok(self
            .rollouts
            .lock()
            .unwrap()
            .values()
            .filter(|r| r.active() && r.wake_at().is_some_and(|w| w <= now))
            .map(|r| r.id.clone())
            .collect())
    }
}

/// The `rollouts` queue in memory: records what was sent; `fail` makes every send fail (a queue outage).
#[derive(Debug, Clone, Default)]
pub struct FakeQueue {
    sent: Arc<Mutex<Vec<crate::feed::RolloutMessage>>>,
    failing: Arc<Mutex<bool>>,
}

impl FakeQueue {
    pub fn sent(&self) -> Vec<crate::feed::RolloutMessage> {
        self.sent.lock().unwrap().clone()
    }

    pub fn fail(&self, failing: bool) {
        *self.failing.lock().unwrap() = failing;
    }
}

impl crate::feed::Queue for FakeQueue {
    async fn send(&self, m: &crate::feed::RolloutMessage, _now: i64) -> Result<(), String> {
        if *self.failing.lock().unwrap() {
            return Err("the queue is unavailable".into());
        }
        self.sent.lock().unwrap().push(m.clone());
        Ok(())
    }
}
