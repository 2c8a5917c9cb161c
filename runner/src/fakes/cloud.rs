//! The cloud side of preparing a run, in memory: bundles by key, role sessions that are recorded (and can
//! be refused), a scripted credential check, and state lock tables and buckets.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use secrecy::SecretString;
use strato_aws::state_lock::HeldLock;
use strato_aws::store::StoredTemplate;
use strato_domain::template::Template;
use strato_terraform::bundle::Bundle;

use super::lock;
use crate::RunnerError;
use crate::clouds::storage::StorageAccess;
use crate::clouds::{CloudCheck, PreflightError};
use crate::credentials::EngineCredentials;
use crate::ports::{Cloud, StateBackend};
use crate::trust::AssumeFailure;
use strato_domain::model::ListedStateVersion;

/// A role session the run asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub role_arn: String,
    pub region: String,
    /// The session policy (own roles), or the external id the target role was assumed with.
    pub policy: Option<String>,
    pub external_id: Option<String>,
    /// The identity token the role was assumed with (`AssumeRoleWithWebIdentity`).
    pub web_identity: Option<String>,
}

#[derive(Default)]
struct CloudState {
    bundles: HashMap<String, Vec<u8>>,
    sessions: Vec<Session>,
    refused_roles: Vec<String>,
    /// Target roles that may be assumed without the external id (a trust policy that does not ask).
    open_roles: Vec<String>,
    /// Target roles that take any external id (`StringLike "*"`), though not none.
    any_id_roles: Vec<String>,
    /// The external id each other target role trusts: the first one it was assumed with (its trust policy
    /// was written for that tenant); any other is refused, as STS would.
    trusted_ids: BTreeMap<String, String>,
    preflight_error: Option<String>,
    /// The other clouds' checks asked for (the cloud's name), and the scripted refusal.
    cloud_checks: Vec<String>,
    cloud_preflight_error: Option<PreflightError>,
    /// Lock tables: table → lock id → info.
    locks: BTreeMap<String, BTreeMap<String, String>>,
    /// State objects made no longer current, as `bucket/key`.
    retired: Vec<String>,
    customer_buckets: Vec<String>,
    /// A customer's storage: the versions of each state object, oldest first, as (key, version id, bytes).
    stored_versions: Vec<(String, String, Vec<u8>)>,
    /// The restores asked for, as (key, version).
    restores: Vec<(String, String)>,
    /// The storage's scripted refusal of a list or a copy.
    storage_error: Option<PreflightError>,
}

/// [`Cloud`] in memory. Clones share the data.
#[derive(Clone, Default)]
pub struct FakeCloud(Arc<Mutex<CloudState>>);

impl FakeCloud {
    /// Stores a new current version of `key` in the customer's storage.
    pub fn put_state_version(&self, key: &str, version: &str, bytes: &[u8]) {
        lock(&self.0)
            .stored_versions
            .push((key.to_owned(), version.to_owned(), bytes.to_vec()));
    }

    /// The current bytes of `key` in the customer's storage.
    pub fn current_state(&self, key: &str) -> Option<Vec<u8>> {
        let st = lock(&self.0);
        st.stored_versions
            .iter()
            .rev()
            .find(|(k, ..)| k == key)
            .map(|(.., b)| b.clone())
    }

    /// The restores asked for, as (key, version).
    pub fn state_restores(&self) -> Vec<(String, String)> {
        lock(&self.0).restores.clone()
    }

    /// Every list and copy in the customer's storage fails with `e`.
    pub fn refuse_storage(&self, e: PreflightError) {
        lock(&self.0).storage_error = Some(e);
    }

    /// Stores `bundle` as published; returns its catalog entry.
    pub fn publish(&self, bundle: &Bundle) -> StoredTemplate {
        lock(&self.0).bundles.insert(bundle.key(), bundle.bytes.clone());
        StoredTemplate {
            template: bundle.template.clone(),
            sha256: bundle.sha256.clone(),
            bundle_key: bundle.key(),
        }
    }

    /// Every session assumed, in order.
    pub fn sessions(&self) -> Vec<Session> {
        lock(&self.0).sessions.clone()
    }

    /// `role_arn` refuses every AssumeRole.
    pub fn refuse_role(&self, role_arn: &str) {
        lock(&self.0).refused_roles.push(role_arn.to_owned());
    }

    /// `role_arn` can also be assumed without the external id.
    pub fn open_role(&self, role_arn: &str) {
        lock(&self.0).open_roles.push(role_arn.to_owned());
    }

    /// `role_arn` takes any external id (a `StringLike "*"` condition), but not none.
    pub fn any_id_role(&self, role_arn: &str) {
        lock(&self.0).any_id_roles.push(role_arn.to_owned());
    }

    /// The credential check fails with `why`.
    pub fn fail_preflight(&self, why: &str) {
        lock(&self.0).preflight_error = Some(why.to_owned());
    }

    /// Every other cloud's credential check asked for, by cloud name ("GCP", "Azure", …), in order.
    pub fn cloud_checks(&self) -> Vec<String> {
        lock(&self.0).cloud_checks.clone()
    }

    /// The other clouds' credential checks fail with `e`.
    pub fn fail_cloud_preflight(&self, e: PreflightError) {
        lock(&self.0).cloud_preflight_error = Some(e);
    }

    /// A Terraform state lock held in `table` (as a runner that died holding it left it).
    pub fn hold_lock(&self, table: &str, lock_id: &str, info: &str) {
        lock(&self.0)
            .locks
            .entry(table.to_owned())
            .or_default()
            .insert(lock_id.to_owned(), info.to_owned());
    }

    /// The lock ids held in `table`.
    pub fn held(&self, table: &str) -> Vec<String> {
        lock(&self.0)
            .locks
            .get(table)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// State objects retired, as `bucket/key`.
    pub fn retired(&self) -> Vec<String> {
        lock(&self.0).retired.clone()
    }

    /// Customer state buckets ensured.
    pub fn customer_buckets(&self) -> Vec<String> {
        lock(&self.0).customer_buckets.clone()
    }

    /// The keys of the `n`th session assumed (from 1, in [`FakeCloud::sessions`] order).
    pub fn credentials(n: usize) -> EngineCredentials {
        EngineCredentials {
            access_key_id: format!("ASIAFAKE{n:04}"),
            secret_access_key: SecretString::from(format!("fake-secret-key-{n:04}")),
            session_token: Some(SecretString::from(format!("fake-session-token-{n:04}"))),
        }
    }

    fn session(&self, s: Session) -> Result<EngineCredentials, ()> {
        let mut st = lock(&self.0);
        if st.refused_roles.contains(&s.role_arn) {
            return Err(());
        }
        st.sessions.push(s);
        Ok(Self::credentials(st.sessions.len()))
    }
}

impl Cloud for FakeCloud {
    type State = FakeState;

    async fn fetch_bundle(&self, stored: &StoredTemplate, dest: &Path) -> Result<Template, RunnerError> {
        let bytes = lock(&self.0).bundles.get(&stored.bundle_key).cloned();
        let bytes = bytes
            .ok_or_else(|| RunnerError::Domain(strato_domain::Error::NotFound(stored.bundle_key.clone())))?;
        Ok(strato_terraform::bundle::unpack(
            &bytes,
            &stored.bundle_key,
            &stored.sha256,
            dest,
        )?)
    }

    async fn assume_own_role(
        &self,
        role_arn: &str,
        region: &str,
        policy: &str,
        _session: &str,
    ) -> Result<EngineCredentials, String> {
        self.session(Session {
            role_arn: role_arn.to_owned(),
            region: region.to_owned(),
            policy: Some(policy.to_owned()),
            external_id: None,
            web_identity: None,
        })
        .map_err(|()| format!("assuming role {role_arn} failed: AccessDenied"))
    }

    async fn assume_target_role(
        &self,
        role_arn: &str,
        region: &str,
        _session: &str,
        external_id: Option<&str>,
    ) -> Result<EngineCredentials, AssumeFailure> {
        {
            let mut st = lock(&self.0);
            let trusted = match external_id {
                None => st.open_roles.iter().any(|r| r == role_arn),
                Some(_) if st.any_id_roles.iter().any(|r| r == role_arn) => true,
                Some(id) => {
                    st.trusted_ids
                        .entry(role_arn.to_owned())
                        .or_insert_with(|| id.to_owned())
                        == id
                }
            };
            if !trusted {
                return Err(AssumeFailure::Refused);
            }
        }
        self.session(Session {
            role_arn: role_arn.to_owned(),
            region: region.to_owned(),
            policy: None,
            external_id: external_id.map(str::to_owned),
            web_identity: None,
        })
        .map_err(|()| AssumeFailure::Refused)
    }

    async fn assume_web_identity(
        &self,
        role_arn: &str,
        region: &str,
        _session: &str,
        token: &str,
    ) -> Result<EngineCredentials, String> {
        self.session(Session {
            role_arn: role_arn.to_owned(),
            region: region.to_owned(),
            policy: None,
            external_id: None,
            web_identity: Some(token.to_owned()),
        })
        .map_err(|()| format!("assuming role {role_arn} with the run's identity token failed: AccessDenied"))
    }

    async fn preflight(&self, _region: &str, _creds: &EngineCredentials) -> Result<String, String> {
        match lock(&self.0).preflight_error.clone() {
            Some(why) => Err(why),
            None => Ok("123456789012".into()),
        }
    }

    async fn cloud_preflight(&self, check: CloudCheck<'_>) -> Result<String, PreflightError> {
        let mut st = lock(&self.0);
        st.cloud_checks.push(check.cloud().to_owned());
        match st.cloud_preflight_error.clone() {
            Some(e) => Err(e),
            None => Ok(format!("{} credentials checked (fake)", check.cloud())),
        }
    }

    async fn list_state_versions(
        &self,
        _: &StorageAccess,
    ) -> Result<Vec<ListedStateVersion>, PreflightError> {
        let st = lock(&self.0);
        if let Some(e) = &st.storage_error {
            return Err(e.clone());
        }
        let mut out: Vec<ListedStateVersion> = Vec::new();
        for (i, (key, version, bytes)) in st.stored_versions.iter().enumerate().rev() {
            let newer = st.stored_versions[i + 1..].iter().any(|(k, ..)| k == key);
            out.push(ListedStateVersion {
                key: key.clone(),
                version_id: version.clone(),
                last_modified: None,
                size: bytes.len() as i64,
                is_latest: !newer,
            });
        }
        Ok(out)
    }

    async fn restore_state_version(
        &self,
        _: &StorageAccess,
        key: &str,
        version: &str,
    ) -> Result<String, PreflightError> {
        let mut st = lock(&self.0);
        if let Some(e) = &st.storage_error {
            return Err(e.clone());
        }
        let bytes = st
            .stored_versions
            .iter()
            .find(|(k, v, _)| k == key && v == version)
            .map(|(.., b)| b.clone())
            .ok_or_else(|| PreflightError {
                what: format!("no version {version} of {key}"),
                fix: "list the versions again".into(),
            })?;
        let new_version = format!("v{}", st.stored_versions.len() + 1);
        st.stored_versions
            .push((key.to_owned(), new_version.clone(), bytes));
        st.restores.push((key.to_owned(), version.to_owned()));
        Ok(new_version)
    }

    fn home_region(&self) -> Option<String> {
        Some("us-east-1".into())
    }

    fn platform_state(&self, _creds: &EngineCredentials) -> FakeState {
        FakeState {
            cloud: self.clone(),
            platform: true,
        }
    }

    async fn customer_state(
        &self,
        _region: &str,
        _creds: &EngineCredentials,
        bucket: &str,
        _lock_table: &str,
    ) -> Result<FakeState, String> {
        lock(&self.0).customer_buckets.push(bucket.to_owned());
        Ok(FakeState {
            cloud: self.clone(),
            platform: false,
        })
    }
}

/// A run's state in the [`FakeCloud`].
pub struct FakeState {
    cloud: FakeCloud,
    platform: bool,
}

impl StateBackend for FakeState {
    async fn held_locks(&self, table: &str, lock_ids: &[String]) -> Result<Vec<HeldLock>, RunnerError> {
        let s = lock(&self.cloud.0);
        let Some(t) = s.locks.get(table) else {
            return Ok(Vec::new());
        };
        Ok(lock_ids
            .iter()
            .filter_map(|id| {
                t.get(id).map(|info| HeldLock {
                    lock_id: id.clone(),
                    info: info.clone(),
                })
            })
            .collect())
    }

    async fn release_locks(&self, table: &str, locks: Vec<HeldLock>) -> Result<Vec<HeldLock>, RunnerError> {
        let mut s = lock(&self.cloud.0);
        let t = s.locks.entry(table.to_owned()).or_default();
        // As the conditional delete: only a lock still held with the info read.
        Ok(locks
            .into_iter()
            .filter(|l| {
                let same = t.get(&l.lock_id) == Some(&l.info);
                if same {
                    t.remove(&l.lock_id);
                }
                same
            })
            .collect())
    }

    async fn retire(&self, bucket: &str, key: &str) -> Result<(), RunnerError> {
        if !self.platform {
            return Err(RunnerError::Config(format!(
                "{bucket} is a customer's state bucket; only the platform's state is retired"
            )));
        }
        lock(&self.cloud.0).retired.push(format!("{bucket}/{key}"));
        Ok(())
    }
}
