//! Which clusters a rollout takes: those on the rollout's template, not on the new version already, and not
//! being deleted, narrowed by the selector. A tenant's rollout sees only its own fleet (the caller passes
//! only its clusters); `tenants` narrows the platform operator's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Cluster, ClusterState};

use crate::RolloutError;
use crate::store::MAX_MEMBERS;

/// What the rollout selects (each member given narrows the selection; all absent: the template's whole fleet).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// Only clusters on one of these versions of the template.
    #[serde(default)]
    pub from_versions: Vec<String>,
    /// Only these clusters, by id or by name; each must be one the caller's fleet holds on the template.
    #[serde(default)]
    pub clusters: Vec<String>,
    /// Clusters carry no labels yet: any label given is refused rather than silently matching nothing.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Only clusters in these states (`ACTIVE`, any case); default: every state but being deleted or deleted.
    #[serde(default)]
    pub states: Vec<String>,
    /// Platform operator only: these tenants' clusters.
    #[serde(default)]
    pub tenants: Vec<TenantId>,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> RolloutError {
    RolloutError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// The members (tenant, cluster, version it is on) that `sel` picks from `fleet` for a rollout of
/// `template` to `to_version`, ordered by tenant then cluster id (oldest first). `platform`: the caller is
/// the platform operator (else `tenants` is refused).
pub fn select(
    sel: &Selector,
    template: &str,
    to_version: &str,
    fleet: &[Cluster],
    platform: bool,
) -> Result<Vec<(TenantId, ClusterId, String)>, RolloutError> {
    if !sel.labels.is_empty() {
        return Err(invalid(
            "selector.labels",
            "clusters carry no labels: select by clusters, from_versions, states or tenants",
        ));
    }
    if !sel.tenants.is_empty() && !platform {
        return Err(invalid(
            "selector.tenants",
            "only the platform operator selects across tenants; a tenant's rollout takes its own fleet: leave tenants out",
        ));
    }
    let states = sel
        .states
        .iter()
        .map(|s| {
            s.to_ascii_uppercase().parse::<ClusterState>().map_err(|_| {
                invalid(
                    "selector.states",
                    format!(
                        "'{}' is not a cluster state (e.g. ACTIVE, FAILED)",
                        s.chars().take(40).collect::<String>()
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let on_template = |c: &&Cluster| {
        c.spec.template.name == template
            && !matches!(c.state(), ClusterState::Deleting | ClusterState::Deleted)
            && (sel.tenants.is_empty() || sel.tenants.contains(&c.tenant_id))
    };
    for wanted in &sel.clusters {
        let known = fleet
            .iter()
            .filter(on_template)
            .any(|c| c.cluster_id.as_str() == wanted || c.spec.name.as_str() == wanted);
        if !known {
            return Err(invalid(
                "selector.clusters",
                format!(
                    "no cluster '{}' on template {template} in the fleet you may roll out",
                    wanted.chars().take(64).collect::<String>()
                ),
            ));
        }
    }
    let mut out: Vec<_> = fleet
        .iter()
        .filter(on_template)
        .filter(|c| c.spec.template.version != to_version)
        .filter(|c| sel.from_versions.is_empty() || sel.from_versions.contains(&c.spec.template.version))
        .filter(|c| states.is_empty() || states.contains(&c.state()))
        .filter(|c| {
            sel.clusters.is_empty()
                || sel
                    .clusters
                    .iter()
                    .any(|w| c.cluster_id.as_str() == w || c.spec.name.as_str() == w)
        })
        .map(|c| {
            (
                c.tenant_id.clone(),
                c.cluster_id.clone(),
                c.spec.template.version.clone(),
            )
        })
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(RolloutError::NothingSelected);
    }
    if out.len() > MAX_MEMBERS {
        return Err(RolloutError::TooMany {
            found: out.len(),
            max: MAX_MEMBERS,
        });
    }
    Ok(out)
}
