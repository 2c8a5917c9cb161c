//! The versioned state bucket the API's state restore reads and writes.

use std::sync::{Arc, Mutex};

use super::lock;
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::ports::{PortError, RestoredState, StateArchive, StateVersion};

/// The versioned state bucket in memory: versions per key, newest last. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeStateArchive {
    versions: Arc<Mutex<Vec<(ClusterId, StateVersion)>>>,
    restored: Arc<Mutex<Vec<StateVersion>>>,
}

impl FakeStateArchive {
    /// Stores a new current version of `key` for `cluster`.
    pub fn put(&self, cluster: &ClusterId, key: &str, version_id: &str) {
        let mut all = lock(&self.versions);
        for (_, v) in all.iter_mut().filter(|(_, v)| v.key == key) {
            v.is_latest = false;
        }
        all.push((
            cluster.clone(),
            StateVersion {
                key: key.to_owned(),
                version_id: version_id.to_owned(),
                last_modified: None,
                size: 1,
                is_latest: true,
            },
        ));
    }

    /// The versions restored so far, in order.
    pub fn restored(&self) -> Vec<StateVersion> {
        lock(&self.restored).clone()
    }
}

impl StateArchive for FakeStateArchive {
    async fn state_versions(
        &self,
        _: &TenantId,
        cluster: &ClusterId,
    ) -> Result<Vec<StateVersion>, PortError> {
        Ok(lock(&self.versions)
            .iter()
            .filter(|(c, _)| c == cluster)
            .map(|(_, v)| v.clone())
            .collect())
    }

    async fn restore_state_version(&self, version: &StateVersion) -> Result<RestoredState, PortError> {
        let cluster = lock(&self.versions)
            .iter()
            .find(|(_, v)| v == version)
            .map(|(c, _)| c.clone())
            .ok_or_else(|| PortError::NotFound(format!("state version {}", version.version_id)))?;
        let new_version = format!("{}-restored", version.version_id);
        self.put(&cluster, &version.key, &new_version);
        lock(&self.restored).push(version.clone());
        Ok(RestoredState { new_version })
    }
}
