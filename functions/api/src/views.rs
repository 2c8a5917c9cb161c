//! What clients see of clusters, operations and templates. Views are built field by field so internal
//! attributes (fencing tokens, task ARNs, agent token hashes, index keys) never leak, and sensitive
//! variable values (sealed at rest) are masked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::{Value, json};
use strato_aws::store::{OperationBrief, Store};
use strato_domain::cost::CostEstimate;
use strato_domain::model::{
    AwsAuth, CloudProvider, Cluster, ClusterSpec, ClusterState, DEFAULT_DRIFT_INTERVAL_SECS, DriftPolicy,
    Operation, OperationKind, OperationStatus, ResourceChange, Target, TemplateRef,
};
use strato_domain::template::Template;
use strato_domain::ts;

use utoipa::ToSchema;

use crate::error::ApiError;
use crate::schema;

pub const MASK: &str = "(sensitive)";

/// Templates read during one request, so a listing loads each version once.
pub(crate) struct TemplateCache<'a> {
    store: &'a Store,
    loaded: HashMap<(String, String), Option<Template>>,
}

impl<'a> TemplateCache<'a> {
    pub fn new(store: &'a Store) -> Self {
        Self {
            store,
            loaded: HashMap::new(),
        }
    }

    pub async fn get(&mut self, r: &TemplateRef) -> Result<Option<&Template>, ApiError> {
        let key = (r.name.clone(), r.version.clone());
        if !self.loaded.contains_key(&key) {
            let t = self
                .store
                .get_template(&r.name, &r.version)
                .await?
                .map(|s| s.template);
            self.loaded.insert(key.clone(), t);
        }
        Ok(self.loaded.get(&key).and_then(Option::as_ref))
    }

    /// Names of the sensitive variables of the spec's template; `None` if the template is gone, in which
    /// case every value is masked (fail closed).
    pub async fn sensitive(&mut self, spec: &ClusterSpec) -> Result<Option<BTreeSet<String>>, ApiError> {
        Ok(self.get(&spec.template).await?.map(sensitive_of))
    }
}

pub(crate) fn sensitive_of(t: &Template) -> BTreeSet<String> {
    t.manifest
        .variables
        .iter()
        .filter(|(_, d)| d.sensitive)
        .map(|(n, _)| n.clone())
        .collect()
}

pub(crate) fn masked_variables(
    vars: &BTreeMap<String, Value>,
    sensitive: Option<&BTreeSet<String>>,
) -> serde_json::Map<String, Value> {
    vars.iter()
        .map(|(k, v)| {
            // A sealed value is masked whatever the template says now (its ciphertext is no one's business).
            let hide = sensitive.is_none_or(|s| s.contains(k)) || strato_domain::sealed::looks_sealed(v);
            (k.clone(), if hide { json!(MASK) } else { v.clone() })
        })
        .collect()
}

/// A template by name and version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct TemplateRefView {
    pub name: String,
    pub version: String,
}

impl From<&TemplateRef> for TemplateRefView {
    fn from(t: &TemplateRef) -> Self {
        Self {
            name: t.name.clone(),
            version: t.version.clone(),
        }
    }
}

/// The customer account a cluster lives in, on its cloud (`provider`): only that cloud's fields are shown.
/// An AWS role is assumed with the external id Strato issued the tenant (`GET /v1/tenant/target-access`),
/// which is not part of the cluster, or with the run's identity token (`auth: web_identity`).
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub(crate) struct TargetView {
    #[schema(value_type = schema::CloudProvider)]
    pub provider: Option<CloudProvider>,
    /// aws.
    pub role_arn: Option<String>,
    pub state_bucket: Option<String>,
    /// aws.
    pub lock_table: Option<String>,
    /// aws.
    pub region: Option<String>,
    /// aws: `assume_role` or `web_identity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// gcp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// gcp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_identity_provider: Option<String>,
    /// gcp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_container: Option<String>,
    /// azure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_resource_group: Option<String>,
    /// digitalocean, linode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_region: Option<String>,
}

impl From<&Target> for TargetView {
    fn from(t: &Target) -> Self {
        let s = |v: &dyn ToString| Some(v.to_string());
        let base = TargetView {
            provider: Some(t.provider()),
            ..Default::default()
        };
        match t {
            Target::Aws(a) => TargetView {
                role_arn: Some(a.role_arn.clone()),
                auth: Some(
                    match a.auth {
                        AwsAuth::AssumeRole => "assume_role",
                        AwsAuth::WebIdentity => "web_identity",
                    }
                    .to_owned(),
                ),
                state_bucket: a.state_bucket.clone(),
                lock_table: a.lock_table.clone(),
                region: a.region.clone(),
                ..base
            },
            Target::Gcp(g) => TargetView {
                project_id: s(&g.project_id),
                workload_identity_provider: s(&g.workload_identity_provider),
                service_account: s(&g.service_account),
                state_bucket: g.state_bucket.clone(),
                ..base
            },
            Target::Azure(z) => TargetView {
                tenant_id: s(&z.tenant_id),
                client_id: s(&z.client_id),
                subscription_id: s(&z.subscription_id),
                state_storage_account: z.state_storage_account.clone(),
                state_container: z.state_container.clone(),
                state_resource_group: z.state_resource_group.clone(),
                ..base
            },
            Target::Digitalocean(d) | Target::Linode(d) => TargetView {
                state_bucket: d.state_bucket.clone(),
                state_region: d.state_region.clone(),
                ..base
            },
        }
    }
}

/// The spec an operation runs with.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct SpecView {
    pub name: String,
    pub template: TemplateRefView,
    #[schema(value_type = schema::CloudProvider)]
    pub provider: CloudProvider,
    pub region: String,
    /// Values by name; sensitive ones are `(sensitive)`.
    #[schema(value_type = Object)]
    pub variables: serde_json::Map<String, Value>,
    pub target: Option<TargetView>,
}

fn spec_view(spec: &ClusterSpec, sensitive: Option<&BTreeSet<String>>) -> SpecView {
    SpecView {
        name: spec.name.to_string(),
        template: (&spec.template).into(),
        provider: spec.provider,
        region: spec.region.clone(),
        variables: masked_variables(&spec.variables, sensitive),
        target: spec.target.as_ref().map(TargetView::from),
    }
}

/// A cluster's drift: the last check's findings and the settings.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct DriftView {
    pub drifted: bool,
    #[schema(value_type = Option<schema::Timestamp>)]
    pub checked_at: Option<String>,
    #[schema(value_type = Vec<schema::ResourceChangeSchema>)]
    pub changed_resources: Vec<ResourceChange>,
    #[schema(value_type = schema::DriftPolicy)]
    pub policy: DriftPolicy,
    /// Hours between scheduled checks.
    pub interval_hours: u64,
}

/// A cluster as its tenant sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Cluster)]
pub(crate) struct ClusterView {
    /// `cl-` and a UUIDv7.
    pub id: String,
    pub name: String,
    #[schema(value_type = schema::ClusterState)]
    pub state: ClusterState,
    pub template: TemplateRefView,
    #[schema(value_type = schema::CloudProvider)]
    pub provider: CloudProvider,
    pub region: String,
    /// Values by name; sensitive ones are `(sensitive)`.
    #[schema(value_type = Object)]
    pub variables: serde_json::Map<String, Value>,
    pub target: Option<TargetView>,
    /// The template's outputs once applied.
    #[schema(value_type = Object)]
    pub outputs: BTreeMap<String, Value>,
    pub drift: DriftView,
    #[schema(value_type = Option<schema::UserErrorSchema>)]
    pub last_error: Option<strato_domain::UserError>,
    /// The newest operation queued on the cluster (by a tenant or by Strato itself).
    pub last_operation: Option<LastOperationView>,
    /// Optimistic-concurrency version.
    pub version: u64,
    /// When the scheduler deletes the cluster on its own; null: never. Extend or clear it with a PATCH.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub expires_at: Option<String>,
    /// The cluster's own approval mode (`auto` or `required`); null: none. The strictest of it, its
    /// template's and the tenant's default applies.
    #[schema(value_type = Option<String>, example = "required")]
    pub approval: Option<strato_domain::approval::ApprovalMode>,
    /// What the cluster's agent reports (`unknown` without one).
    pub health: crate::health_view::HealthView,
    #[schema(value_type = schema::Timestamp)]
    pub created_at: String,
    #[schema(value_type = schema::Timestamp)]
    pub updated_at: String,
}

/// Which operation a cluster last had queued, what it does and where it is.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = LastOperation)]
pub(crate) struct LastOperationView {
    /// `op-` and a UUIDv7.
    pub id: String,
    #[schema(value_type = schema::OperationKind)]
    pub kind: OperationKind,
    #[schema(value_type = schema::OperationStatus)]
    pub status: OperationStatus,
    #[schema(value_type = schema::Timestamp)]
    pub created_at: String,
    #[schema(value_type = schema::Timestamp)]
    pub updated_at: String,
}

impl From<&OperationBrief> for LastOperationView {
    fn from(b: &OperationBrief) -> Self {
        Self {
            id: b.operation_id.to_string(),
            kind: b.kind,
            status: b.status,
            created_at: ts::format(b.created_at),
            updated_at: ts::format(b.updated_at),
        }
    }
}

impl From<&Operation> for LastOperationView {
    fn from(op: &Operation) -> Self {
        Self {
            id: op.operation_id.to_string(),
            kind: op.kind,
            status: op.status,
            created_at: ts::format(op.created_at),
            updated_at: ts::format(op.updated_at),
        }
    }
}

pub(crate) fn cluster(
    c: &Cluster,
    sensitive: Option<&BTreeSet<String>>,
    last_operation: Option<LastOperationView>,
) -> ClusterView {
    let gone = c.state() == ClusterState::Deleted;
    ClusterView {
        id: c.cluster_id.to_string(),
        name: c.spec.name.to_string(),
        state: c.state(),
        template: (&c.spec.template).into(),
        provider: c.spec.provider,
        region: c.spec.region.clone(),
        variables: masked_variables(&c.spec.variables, sensitive),
        target: c.spec.target.as_ref().map(TargetView::from),
        outputs: c.outputs.clone(),
        drift: DriftView {
            // A deleted cluster has nothing that can drift (one deleted before its end cleared the flag
            // may still hold it).
            drifted: c.drift.drifted && !gone,
            checked_at: c.drift.checked_at.map(ts::format),
            changed_resources: if gone {
                Vec::new()
            } else {
                c.drift.changed_resources.clone()
            },
            policy: c.drift_policy,
            interval_hours: c.drift_interval_secs.unwrap_or(DEFAULT_DRIFT_INTERVAL_SECS) / 3600,
        },
        last_error: c.last_error.clone(),
        last_operation,
        version: c.version,
        expires_at: c.expires_at.map(ts::format),
        approval: c.approval,
        health: crate::health_view::HealthView::of(c.health.as_ref().filter(|_| !gone)),
        created_at: ts::format(c.created_at),
        updated_at: ts::format(c.updated_at),
    }
}

/// One step of an operation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct StepView {
    pub name: String,
    #[schema(value_type = schema::Timestamp)]
    pub started_at: String,
    #[schema(value_type = Option<schema::Timestamp>)]
    pub finished_at: Option<String>,
    pub ok: Option<bool>,
}

/// An operation: a create, update, delete, drift check or estimate, and where it is.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Operation)]
pub(crate) struct OperationView {
    /// `op-` and a UUIDv7.
    pub id: String,
    /// Absent (null) for an estimate, which has no cluster.
    pub cluster_id: Option<String>,
    #[schema(value_type = schema::OperationKind)]
    pub kind: OperationKind,
    #[schema(value_type = schema::OperationStatus)]
    pub status: OperationStatus,
    pub attempt: u32,
    pub current_step: Option<String>,
    pub steps: Vec<StepView>,
    #[schema(value_type = Option<schema::UserErrorSchema>)]
    pub error: Option<strato_domain::UserError>,
    #[schema(value_type = Option<schema::CostEstimateSchema>)]
    pub estimate: Option<CostEstimate>,
    pub cancel_requested: bool,
    pub wait_reason: Option<String>,
    /// The JWT subject that asked for it.
    pub requested_by: Option<String>,
    pub notes: Vec<String>,
    /// The version of the policy set the request was checked against (`sha256:…`).
    pub policy_version: Option<String>,
    /// Whether its plan waits for an approver before anything is applied.
    pub approval_required: bool,
    /// The plan it waits (or waited) with, and the decision; null until a plan needed approval.
    pub approval: Option<crate::approval::ApprovalView>,
    /// A preview's (`plan` operation's) result once it succeeded: the changes, policy results and monthly
    /// cost difference of the proposed spec, nothing applied; null otherwise.
    pub preview: Option<crate::preview_view::PreviewView>,
    pub spec: Option<SpecView>,
    /// When it was queued: its duration runs from here.
    #[schema(value_type = schema::Timestamp)]
    pub created_at: String,
    /// When the runner started its current attempt; null until then.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub started_at: Option<String>,
    /// When it ended (succeeded, failed, cancelled); null while open. The operation's duration is
    /// `ended_at - created_at`, as its timeline's `duration_ms` (`updated_at` moves on later writes, e.g. a
    /// webhook's outcome noted after the end).
    #[schema(value_type = Option<schema::Timestamp>)]
    pub ended_at: Option<String>,
    #[schema(value_type = schema::Timestamp)]
    pub updated_at: String,
}

pub(crate) fn operation(op: &Operation, sensitive: Option<&BTreeSet<String>>) -> OperationView {
    OperationView {
        id: op.operation_id.to_string(),
        // An estimate's id is synthetic (no cluster to look up): not shown.
        cluster_id: op.kind.has_cluster().then(|| op.cluster_id.to_string()),
        kind: op.kind,
        status: op.status,
        attempt: op.attempt,
        current_step: op.current_step().map(|s| s.name.clone()),
        steps: op
            .steps
            .iter()
            .map(|s| StepView {
                name: s.name.clone(),
                started_at: ts::format(s.started_at),
                finished_at: s.finished_at.map(ts::format),
                ok: s.ok,
            })
            .collect(),
        error: op.error.clone(),
        estimate: op.estimate.clone(),
        cancel_requested: op.cancel_requested,
        wait_reason: op.wait_reason.clone(),
        requested_by: op.requested_by.clone(),
        notes: op.notes.clone(),
        policy_version: op.policy_version.clone(),
        approval_required: op.approval_required,
        approval: op.approval.as_ref().map(crate::approval::approval),
        preview: op.preview.as_ref().map(crate::preview_view::view),
        spec: op.spec.as_ref().map(|s| spec_view(s, sensitive)),
        created_at: ts::format(op.created_at),
        started_at: op.started_at.map(ts::format),
        ended_at: op
            .status
            .is_terminal()
            .then(|| ts::format(crate::timeline::end_of(op))),
        updated_at: ts::format(op.updated_at),
    }
}

/// The answer to a request that queued an operation on a cluster (202).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct Accepted {
    pub cluster: ClusterView,
    pub operation: OperationView,
}

/// The answer to `POST /v1/estimates` (202).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct EstimateAccepted {
    pub operation: OperationView,
}

/// A page of clusters, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ClusterPage {
    pub clusters: Vec<ClusterView>,
    /// The next page's token (`?next=`), or null on the last page.
    pub next: Option<String>,
}

/// A page of a cluster's operations, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct OperationList {
    pub operations: Vec<OperationView>,
    /// The next page's token (`?next=`), or null on the last page.
    pub next: Option<String>,
}

/// `GET /healthz`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct Health {
    /// Always `ok`.
    pub status: &'static str,
}

/// What a deletion answers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct Deleted {
    pub deleted: bool,
}

#[cfg(test)]
mod tests {
    use strato_domain::ids::{ClusterId, TenantId};
    use strato_domain::model::{Cluster, ClusterState, ResourceChange};

    /// A cluster deleted while flagged drifted (before deletion cleared the flag) shows no drift; the same
    /// record in any other state shows it.
    #[test]
    fn a_deleted_cluster_shows_no_drift() {
        let mut c = Cluster::new(
            "acme".parse::<TenantId>().unwrap(),
            ClusterId::generate(),
            strato_fakes::World::spec("gone"),
            strato_domain::ts::now(),
        );
        c.drift.drifted = true;
        c.drift.changed_resources = vec![ResourceChange {
            address: "aws_vpc.this".into(),
            actions: vec!["update".into()],
        }];
        let active = super::cluster(&c.clone().in_state(ClusterState::Active), None, None);
        assert!(active.drift.drifted);
        assert_eq!(active.drift.changed_resources.len(), 1);
        let deleted = super::cluster(&c.in_state(ClusterState::Deleted), None, None);
        assert!(!deleted.drift.drifted);
        assert!(deleted.drift.changed_resources.is_empty());
    }
}
