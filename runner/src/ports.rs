//! The runner's ports: the small interfaces a run takes everything outside its own decisions through. The
//! lifecycle (`lifecycle/`) is written against them only; [`crate::aws`] implements them on AWS (DynamoDB,
//! S3, SQS, STS, Secrets Manager, KMS) and [`crate::engine::ProcessEngine`] runs the real engine process;
//! the fakes (`fakes` feature, and the crate's own unit tests) implement them in memory with a scripted
//! engine, so every decision of a run is tested in milliseconds without moto or Terraform.
//!
//! [`Ports`] names the adapters' types once (as the status function's `Ports` does), [`RunPorts`] holds
//! one run's instances. Types used by the run's background tasks (heartbeats, log shipping, progress
//! events) are `Clone + 'static`: those tasks own a handle each. Every future is `Send`: the slow tests and
//! devstack drive a run on a multi-threaded runtime.

use std::future::Future;
use std::path::Path;

use serde_json::{Map, Value};
use strato_aws::state_lock::HeldLock;
use strato_aws::store::StoredTemplate;
use strato_domain::identity::cloud_tokens::CloudToken;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{CloudProvider, Cluster, ListedStateVersion, Operation};
use strato_domain::sealed::{Envelope, Keys};
use strato_domain::template::Template;

use crate::RunnerError;
use crate::clouds::storage::StorageAccess;
use crate::clouds::{CloudCheck, PreflightError};
use crate::credentials::EngineCredentials;
pub use crate::kube::KubeApi;
use crate::logs::LogHub;
use crate::outcome::{Outcome, StopRx};
pub use crate::sinks::{Artifacts, LiveLog};
use crate::trust::AssumeFailure;

/// The types of a run's adapters, named once so the lifecycle reads `RunContext<P>`.
pub trait Ports: Send + Sync + 'static {
    type Store: RunStore;
    /// The live `logs` queue and the artifacts bucket (log archive, debug logs, sealed plans).
    type Sinks: LiveLog + Artifacts;
    type Reporter: Reporter;
    type Secrets: OutputSecrets;
    /// Strato's key, which opens sealed values and seals plans.
    type Keys: Keys + Clone + 'static;
    type Cloud: Cloud;
    type Engine: Engine;
    type Signals: TaskSignals;
    /// A new cluster's Kubernetes API (the runner installs the cluster agent through it).
    type Kube: KubeApi;
}

/// One run's adapters.
pub struct RunPorts<P: Ports> {
    pub store: P::Store,
    pub sinks: P::Sinks,
    pub reporter: P::Reporter,
    pub secrets: P::Secrets,
    pub keys: P::Keys,
    pub cloud: P::Cloud,
    /// The engine with the runner's own engine environment (extras only): it probes the version; the run's
    /// commands get [`Engine::with_env`] with their credentials.
    pub engine: P::Engine,
    pub signals: P::Signals,
    pub kube: P::Kube,
}

/// The control plane's records a run reads: its operation (and cancel request), its cluster and the
/// cluster's other operations, the cluster lock (fencing), the tenant's budget, policies and external id,
/// and the template catalog. A run never writes them: its events do, through the status function. (The
/// domain's `Operations` and `ClusterLocks` ports carry the writes the other functions make; the fake of this
/// one wraps the domain's `FakeStore`.)
pub trait RunStore: Clone + Send + Sync + 'static {
    /// The operation, read consistently (a cancel request must be seen).
    fn operation(
        &self,
        id: &OperationId,
    ) -> impl Future<Output = Result<Option<Operation>, RunnerError>> + Send;

    /// The cluster with this id, whichever tenant's.
    fn cluster(&self, id: &ClusterId) -> impl Future<Output = Result<Option<Cluster>, RunnerError>> + Send;

    /// The cluster's open operations (for the state-lock verdict, which looks at nothing else).
    fn open_cluster_operations(
        &self,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Vec<Operation>, RunnerError>> + Send;

    /// The cluster lock's holder and fencing token; `None` while it is free.
    fn lock_owner(
        &self,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Option<(OperationId, u64)>, RunnerError>> + Send;

    /// The tenant's monthly budget (USD), if set.
    fn monthly_budget(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Option<f64>, RunnerError>> + Send;

    /// The policies stored for the tenant (its own, and those the platform operator set for it).
    fn tenant_policies(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<strato_domain::ports::StoredPolicies, RunnerError>> + Send;

    /// The external id Strato issued the tenant, sealed.
    fn tenant_external_id(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Option<Envelope>, RunnerError>> + Send;

    /// The tenant's API token record for `cloud` (DigitalOcean, Linode), sealed.
    fn cloud_token(
        &self,
        tenant: &TenantId,
        cloud: CloudProvider,
    ) -> impl Future<Output = Result<Option<CloudToken>, RunnerError>> + Send;

    /// A published template with its bundle's key and checksum.
    fn template(
        &self,
        name: &str,
        version: &str,
    ) -> impl Future<Output = Result<Option<StoredTemplate>, RunnerError>> + Send;
}

/// The `events` queue: progress events and the run's one final event, each carrying the run's proof.
pub trait Reporter: Clone + Send + Sync + 'static {
    fn send(&self, ev: &RunnerEvent) -> impl Future<Output = Result<(), RunnerError>> + Send;

    /// The final event; one too large for a message is stored whole in the artifacts bucket and the message
    /// names it (`strato_aws::spill`).
    fn send_final(&self, ev: &RunnerEvent) -> impl Future<Output = Result<(), RunnerError>> + Send;
}

/// Sensitive outputs: one secret per cluster, by name (`secrets::secret_name`).
pub trait OutputSecrets: Send + Sync + 'static {
    /// Creates the secret or stores a new version of it.
    fn store_outputs(
        &self,
        name: &str,
        values: &Map<String, Value>,
    ) -> impl Future<Output = Result<(), RunnerError>> + Send;

    /// Removes the secret; absent is fine.
    fn delete_outputs(&self, name: &str) -> impl Future<Output = Result<(), RunnerError>> + Send;
}

/// The cloud side of preparing a run: the template bundle, the roles whose sessions the engine gets, the
/// credential check, and the state's bucket and lock table. Which role, with which session policy, and
/// what a failure tells the tenant are the lifecycle's decisions (`lifecycle/access.rs`).
pub trait Cloud: Send + Sync + 'static {
    /// Where one run's state lives.
    type State: StateBackend;

    /// The stored template's bundle, fetched, checked against its sha256 and unpacked into `dest`.
    fn fetch_bundle(
        &self,
        stored: &StoredTemplate,
        dest: &Path,
    ) -> impl Future<Output = Result<Template, RunnerError>> + Send;

    /// A session of one of the deployment's own roles (engine or state role), narrowed by the session
    /// `policy`. The error is a message for the tenant.
    fn assume_own_role(
        &self,
        role_arn: &str,
        region: &str,
        policy: &str,
        session: &str,
    ) -> impl Future<Output = Result<EngineCredentials, String>> + Send;

    /// A session of a tenant's target role, with or without the external id (see [`crate::trust`]).
    fn assume_target_role(
        &self,
        role_arn: &str,
        region: &str,
        session: &str,
        external_id: Option<&str>,
    ) -> impl Future<Output = Result<EngineCredentials, AssumeFailure>> + Send;

    /// A session of a tenant's target role assumed with a run identity token
    /// (`sts:AssumeRoleWithWebIdentity`: the role trusts Strato's OIDC issuer). The error is a message for
    /// the tenant, without the token.
    fn assume_web_identity(
        &self,
        role_arn: &str,
        region: &str,
        session: &str,
        token: &str,
    ) -> impl Future<Output = Result<EngineCredentials, String>> + Send;

    /// `sts:GetCallerIdentity` with `creds`, bounded by the preflight timeout: the account id, or a message
    /// for the tenant.
    fn preflight(
        &self,
        region: &str,
        creds: &EngineCredentials,
    ) -> impl Future<Output = Result<String, String>> + Send;

    /// The identity call(s) of a cloud other than AWS ([`crate::clouds::preflight::check`]), bounded by the
    /// preflight timeout: what was proven, or what failed and the fix.
    fn cloud_preflight(
        &self,
        check: CloudCheck<'_>,
    ) -> impl Future<Output = Result<String, PreflightError>> + Send;

    /// The versions of the state objects in a customer's own storage ([`crate::clouds::storage`]), each
    /// key's newest first; the error says what failed and the fix, without any credential.
    fn list_state_versions(
        &self,
        access: &StorageAccess,
    ) -> impl Future<Output = Result<Vec<ListedStateVersion>, PreflightError>> + Send;

    /// Copies `version` of `key` back on top of it in a customer's own storage: the new current version.
    fn restore_state_version(
        &self,
        access: &StorageAccess,
        key: &str,
        version: &str,
    ) -> impl Future<Output = Result<String, PreflightError>> + Send;

    /// The region of the runner's own clients (where the platform's state bucket is), if configured.
    fn home_region(&self) -> Option<String>;

    /// The platform's state bucket and lock table through the run's state-role session.
    fn platform_state(&self, creds: &EngineCredentials) -> Self::State;

    /// A customer's state bucket (versioned, encrypted) and lock table, created with the target account's
    /// credentials if missing. The error is a message for the tenant.
    fn customer_state(
        &self,
        region: &str,
        creds: &EngineCredentials,
        bucket: &str,
        lock_table: &str,
    ) -> impl Future<Output = Result<Self::State, String>> + Send;
}

/// One run's view of its state's lock table and bucket.
pub trait StateBackend: Send + Sync {
    /// The Terraform state locks held among `lock_ids`.
    fn held_locks(
        &self,
        table: &str,
        lock_ids: &[String],
    ) -> impl Future<Output = Result<Vec<HeldLock>, RunnerError>> + Send;

    /// Releases exactly `locks` as read (a lock taken again meanwhile stays); those it released.
    fn release_locks(
        &self,
        table: &str,
        locks: Vec<HeldLock>,
    ) -> impl Future<Output = Result<Vec<HeldLock>, RunnerError>> + Send;

    /// Makes a state object no longer current (a delete marker in the versioned platform bucket; only the
    /// platform's state is retired).
    fn retire(&self, bucket: &str, key: &str) -> impl Future<Output = Result<(), RunnerError>> + Send;
}

/// The engine (Terraform or OpenTofu): one command at a time in a stage's directory.
pub trait Engine: Clone + Send + Sync + 'static {
    /// The same engine with `env` as its environment (region, credentials, plugin cache, extras).
    fn with_env(&self, env: Vec<(String, String)>) -> Self;

    /// What `version -json` prints (parsed by the lifecycle).
    fn version_text(&self) -> impl Future<Output = std::io::Result<String>> + Send;

    /// Runs `args` in `dir`: user lines go to `logs` under `step` (stdout captured instead when
    /// `capture_stdout`), debug lines to the outcome. When `stop` fires the engine is interrupted
    /// gracefully and the outcome says why; a stop already fired runs nothing.
    fn run(
        &self,
        dir: &Path,
        args: &[String],
        step: &str,
        capture_stdout: bool,
        logs: &LogHub,
        stop: &mut StopRx,
    ) -> impl Future<Output = std::io::Result<Outcome>> + Send;
}

/// The task's own stop: SIGTERM from ECS.
pub trait TaskSignals: Send + Sync + 'static {
    /// Resolves when the task is told to stop; never, when that cannot be listened for.
    fn terminated(&self) -> impl Future<Output = ()> + Send + 'static;
}
