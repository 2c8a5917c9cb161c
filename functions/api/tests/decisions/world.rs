//! The decisions tests' world: the shared fakes with the api-test templates published, the API on them,
//! a writer as the caller, and the requests and answers the tests share.

use serde_json::{Value, json};
use strato_api::decide::{Api, Cancelled, Started};
use strato_api::{ApiError, Caller, SpecBody, UpdateBody};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::{ClusterState, Operation, OperationStatus, StateRestore};
use strato_domain::template::Template;
use strato_fakes::{FakeClock, FakeJobQueue, FakeKeys, FakeStateArchive, FakeStore, FakeTemplates};

pub(crate) const TENANT: &str = "acme";

/// The shared world (its catalog holds the api-test template), Strato's key for sealed values, and the
/// platform's default maximum lifetime (none unless a test sets one).
pub(crate) struct World {
    pub(crate) base: strato_fakes::World,
    pub(crate) keys: FakeKeys,
    pub(crate) default_max: Option<u64>,
}

impl std::ops::Deref for World {
    type Target = strato_fakes::World;
    fn deref(&self) -> &strato_fakes::World {
        &self.base
    }
}

/// The API on the fakes with every optional part off (no policies, rules, audit or agent secret) and
/// separation of duties on: the base each decision test starts from.
pub(crate) fn fake_api<'a>(
    store: &'a FakeStore,
    templates: &'a FakeTemplates,
    jobs: FakeJobQueue,
    clock: FakeClock,
    keys: &'a FakeKeys,
) -> Api<'a, FakeStore, FakeTemplates, FakeJobQueue, FakeClock, FakeKeys> {
    Api {
        store,
        templates,
        jobs,
        clock,
        agent_token_secret: None,
        default_max_ttl_hours: None,
        approval_separation: true,
        keys,
        policies: None,
        rules: None,
        audit: None,
        operation_id: None,
    }
}

/// The fields a 422 names, in its order.
pub(crate) fn invalid_fields(e: ApiError) -> Vec<String> {
    match e {
        ApiError::Invalid { errors, .. } => errors.into_iter().map(|f| f.field).collect(),
        other => panic!("not a 422: {other}"),
    }
}

impl World {
    pub(crate) fn new() -> Self {
        Self::with_default_max(None)
    }

    pub(crate) fn with_default_max(default_max: Option<u64>) -> Self {
        let base = strato_fakes::World::default();
        for text in [
            include_str!("../fixtures/api-test/template-1.0.0.toml"),
            include_str!("../fixtures/api-test/template-1.1.0.toml"),
        ] {
            base.templates.publish(Template::from_toml(text).unwrap());
        }
        Self {
            base,
            keys: FakeKeys::default(),
            default_max,
        }
    }

    pub(crate) fn api(&self) -> Api<'_, FakeStore, FakeTemplates, FakeJobQueue, FakeClock, FakeKeys> {
        Api {
            default_max_ttl_hours: self.default_max,
            ..fake_api(
                &self.store,
                &self.templates,
                self.jobs.clone(),
                self.clock.clone(),
                &self.keys,
            )
        }
    }

    pub(crate) async fn create(&self, name: &str) -> Started {
        self.api().create(&caller(), spec(name)).await.unwrap()
    }

    /// An active cluster (its create succeeded), and an archive holding `versions` of its state file in
    /// Strato's bucket, oldest first.
    pub(crate) async fn active_with_state(&self, versions: &[&str]) -> (ClusterId, FakeStateArchive) {
        let s = self.active().await;
        let cid = s.cluster.cluster_id.clone();
        let archive = FakeStateArchive::default();
        let key = format!("tenants/{TENANT}/clusters/{cid}/main.tfstate");
        for v in versions {
            archive.put(&cid, &key, v);
        }
        (cid, archive)
    }

    /// The caller restores cluster `cid` to `version` of `archive`.
    pub(crate) async fn restore(
        &self,
        archive: &FakeStateArchive,
        cid: &ClusterId,
        version: &str,
    ) -> Result<StateRestore, ApiError> {
        self.api()
            .restore_state(archive, &caller(), cid.as_str(), version)
            .await
    }

    /// `who`'s `verdict`, without a comment, on operation `id`.
    pub(crate) async fn decide(
        &self,
        who: &Caller,
        id: &str,
        verdict: strato_domain::approval::Verdict,
    ) -> Result<strato_domain::model::Operation, ApiError> {
        self.api().decide_approval(who, id, verdict, None).await
    }

    /// Whether `s`'s operation, as stored, still waits for an approver's decision.
    pub(crate) fn awaits_decision(&self, s: &Started) -> bool {
        let op = self.store.operation(&s.operation.operation_id).unwrap();
        op.awaits_decision()
    }

    /// A created cluster made ACTIVE, its create succeeded.
    pub(crate) async fn active(&self) -> Started {
        self.cluster_in(ClusterState::Active, OperationStatus::Succeeded)
            .await
    }

    /// The caller's `PATCH` of cluster `id` with `body`: the operation it queued.
    pub(crate) async fn updated(&self, id: &str, body: Value) -> Operation {
        let out = self.api().update(&caller(), id, patch(body)).await.unwrap();
        out.operation.expect("a new spec queues an operation")
    }

    /// The caller's cancel of operation `id`.
    pub(crate) async fn cancel(&self, id: &OperationId) -> Result<Cancelled, ApiError> {
        self.api().cancel(&caller(), id.as_str()).await
    }

    /// The operations woken since the job queue had sent `before` messages.
    pub(crate) fn woken_since(&self, before: usize) -> Vec<OperationId> {
        self.jobs.sent()[before..]
            .iter()
            .map(|j| j.job.operation_id.clone())
            .collect()
    }

    /// A created cluster moved to `state`, its create operation ended as `op_status`.
    pub(crate) async fn cluster_in(&self, state: ClusterState, op_status: OperationStatus) -> Started {
        let mut s = self.create("prod-eu").await;
        s.cluster = s.cluster.clone().in_state(state);
        self.store.put_cluster(s.cluster.clone());
        s.operation.status = op_status;
        self.store.put_operation(s.operation.clone());
        s
    }
}

/// A writer, as the sample events' tokens are (`clusters:write clusters:read`).
pub(crate) fn caller() -> Caller {
    Caller {
        tenant: TENANT.parse().unwrap(),
        subject: Some("user-7f3a".into()),
        traceparent: None,
        scopes: vec![
            strato_api::scopes::Scope::ClustersWrite,
            strato_api::scopes::Scope::ClustersRead,
        ],
    }
}

pub(crate) fn spec_json(name: &str) -> Value {
    json!({
        "name": name,
        "template": {"name": "api-test", "version": "1.0.0"},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {"owner_email": "ops@example.com", "node_count": 3, "db_password": "hunter2"},
    })
}

pub(crate) fn spec(name: &str) -> SpecBody {
    serde_json::from_value(spec_json(name)).unwrap()
}

pub(crate) fn patch(v: Value) -> UpdateBody {
    serde_json::from_value(v).unwrap()
}

pub(crate) fn conflict(e: ApiError) -> String {
    assert_eq!(e.status().as_u16(), 409, "{e}");
    e.to_string()
}
