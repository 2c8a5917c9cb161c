//! What the HTTP edge asks the decisions for: each request body parsed into a command (`crate::parse`),
//! typed as far as its shape allows, with every problem found reading it. The decisions take commands, never
//! request bodies, and report those problems together with their own (the template's), every one at once.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::approval::ApprovalMode;
use strato_domain::expiry::ExpiryRequest;
use strato_domain::ids::ClusterName;
use strato_domain::model::{CloudProvider, Cluster, DriftPolicy, Target, TemplateRef};
use strato_domain::validate::FieldError;

/// A new cluster.
#[derive(Debug, Clone)]
pub struct CreateCluster {
    pub spec: SpecDraft,
    pub expiry: ExpiryRequest,
    /// The cluster's own approval mode, if the request sets one.
    pub approval: Option<ApprovalMode>,
    /// Problems found reading the request.
    pub problems: Vec<FieldError>,
}

/// The name an estimate's plan uses when the request gives none (cloud resource names in the plan derive
/// from it; nothing is created under it).
pub const ESTIMATE_NAME: &str = "estimate";

/// A cost estimate of a spec, with no cluster.
#[derive(Debug, Clone)]
pub struct Estimate {
    pub spec: SpecDraft,
    pub problems: Vec<FieldError>,
}

/// A PATCH of a cluster.
#[derive(Debug, Clone)]
pub struct UpdateCluster {
    /// A JSON merge patch of the variables.
    pub patch: BTreeMap<String, Value>,
    /// Another published version of the cluster's template.
    pub version: Option<String>,
    pub drift: DriftSettings,
    pub expiry: ExpiryRequest,
    /// `Some(None)`: back to the template's or tenant's default.
    pub approval: Option<Option<ApprovalMode>>,
    pub problems: Vec<FieldError>,
}

/// A spec (create, estimate) as far as it could be read; what is missing was reported as a problem.
#[derive(Debug, Clone)]
pub struct SpecDraft {
    pub name: Option<ClusterName>,
    pub template: Option<TemplateRef>,
    pub provider: Option<CloudProvider>,
    pub region: Option<String>,
    pub variables: BTreeMap<String, Value>,
    pub target: Option<Target>,
    /// A create's drift settings (an estimate has none).
    pub drift: DriftSettings,
}

/// Whether a spec request must name its cluster.
/// What a request asks to change; `None` leaves a setting as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftSettings {
    pub policy: Option<DriftPolicy>,
    /// `Some(None)`: back to the default interval.
    pub interval_secs: Option<Option<u64>>,
}

impl DriftSettings {
    pub fn is_empty(&self) -> bool {
        self.policy.is_none() && self.interval_secs.is_none()
    }

    /// Applies the settings; true when something changed.
    pub fn apply(&self, c: &mut Cluster) -> bool {
        let before = (c.drift_policy, c.drift_interval_secs);
        if let Some(p) = self.policy {
            c.drift_policy = p;
        }
        if let Some(i) = self.interval_secs {
            if c.drift_interval_secs != i {
                // The next check is due one new interval from now (the store recomputes it).
                c.next_drift_check_at = None;
            }
            c.drift_interval_secs = i;
        }
        before != (c.drift_policy, c.drift_interval_secs)
    }
}
