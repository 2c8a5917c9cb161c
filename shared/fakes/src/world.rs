//! The world every decision test starts from: one clock, the store, the jobs queue, the template catalog
//! and the audit log on it, one tenant, and the few ways tests put a cluster or a queued operation in it.
//! A function's tests wrap it (with `Deref`) and add the fakes only that function uses.

use std::collections::BTreeMap;

use time::Duration;

use super::{FakeAuditLog, FakeClock, FakeJobQueue, FakeStore, FakeTemplates};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef,
};
use strato_domain::ports::Clock;

pub struct World {
    pub clock: FakeClock,
    pub store: FakeStore,
    pub jobs: FakeJobQueue,
    pub templates: FakeTemplates,
    pub audit: FakeAuditLog,
    /// `acme`: the tenant the helpers below act for.
    pub tenant: TenantId,
}

impl Default for World {
    fn default() -> Self {
        let clock = FakeClock::default();
        let audit = FakeAuditLog::default();
        Self {
            store: FakeStore::new(clock.clone()).with_audit_log(audit.clone()),
            jobs: FakeJobQueue::new(clock.clone()),
            templates: FakeTemplates::default(),
            audit,
            clock,
            tenant: "acme".parse().expect("a tenant id"),
        }
    }
}

impl World {
    /// A cluster named `name` of `aws-eks-basic` 1.2.0 in us-east-1, no variables.
    pub fn spec(name: &str) -> ClusterSpec {
        ClusterSpec {
            name: name.parse().expect("a cluster name"),
            template: TemplateRef {
                name: "aws-eks-basic".into(),
                version: "1.2.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "us-east-1".into(),
            variables: BTreeMap::new(),
            target: None,
        }
    }

    /// A cluster of [`World::spec`] recorded in `state`.
    pub fn cluster_in(&self, name: &str, state: ClusterState) -> ClusterId {
        let c = Cluster::new(
            self.tenant.clone(),
            ClusterId::generate(),
            Self::spec(name),
            self.clock.now(),
        )
        .in_state(state);
        self.store.put_cluster(c.clone());
        c.cluster_id
    }

    /// A queued operation as the API records it, one second after the previous one.
    pub fn queued(&self, cluster: &ClusterId, kind: OperationKind) -> Operation {
        self.clock.advance(Duration::seconds(1));
        let op = Operation::new(self.tenant.clone(), cluster.clone(), kind, self.clock.now());
        self.store.put_operation(op.clone());
        op
    }
}
