//! OpenAPI schemas of the domain types the API shows (they live in strato-shared, which knows nothing of
//! OpenAPI). Enumerations are built from the domain's own lists or wire names, so they cannot drift; the
//! response test validates real answers against them.

use serde::Serialize;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{KnownFormat, RefOr, SchemaFormat};
use utoipa::{PartialSchema, ToSchema};

/// The wire name of a serde enum value.
fn wire<T: Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn string_enum(values: Vec<String>, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .description(Some(description))
        .into()
}

macro_rules! enum_schema {
    ($name:ident, $values:expr, $doc:literal) => {
        #[doc = $doc]
        pub struct $name;
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                string_enum($values, $doc)
            }
        }
        impl ToSchema for $name {}
    };
}

enum_schema!(
    CloudProvider,
    strato_domain::model::CloudProvider::ALL
        .iter()
        .map(|p| p.as_str().to_owned())
        .collect(),
    "A cloud provider Strato supports."
);
enum_schema!(
    ClusterState,
    strato_domain::model::ClusterState::ALL
        .iter()
        .map(|s| s.as_str().to_owned())
        .collect(),
    "Where a cluster is in its lifecycle."
);
enum_schema!(
    DriftPolicy,
    {
        use strato_domain::model::DriftPolicy as P;
        let listed = |p: P| match p {
            P::Notify | P::Reconcile => wire(p),
        };
        vec![listed(P::Notify), listed(P::Reconcile)]
    },
    "What happens when drift is found: notify only, or reconcile (apply the spec again)."
);
enum_schema!(
    OperationKind,
    {
        use strato_domain::model::OperationKind as K;
        // The match makes a new kind a compile error here until it is listed.
        let listed = |k: K| match k {
            K::Create | K::Update | K::Delete | K::Plan | K::DriftCheck | K::RestoreState | K::Estimate => {
                wire(k)
            }
        };
        [
            K::Create,
            K::Update,
            K::Delete,
            K::Plan,
            K::DriftCheck,
            K::RestoreState,
            K::Estimate,
        ]
        .into_iter()
        .map(listed)
        .collect()
    },
    "What an operation does."
);
enum_schema!(
    OperationStatus,
    {
        use strato_domain::model::OperationStatus as S;
        let listed = |s: S| match s {
            S::Queued
            | S::Dispatched
            | S::Running
            | S::AwaitingApproval
            | S::Succeeded
            | S::Failed
            | S::Cancelled => wire(s),
        };
        [
            S::Queued,
            S::Dispatched,
            S::Running,
            S::AwaitingApproval,
            S::Succeeded,
            S::Failed,
            S::Cancelled,
        ]
        .into_iter()
        .map(listed)
        .collect()
    },
    "Where an operation is."
);

/// An RFC 3339 timestamp in UTC.
pub struct Timestamp;

impl PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .into()
    }
}

impl ToSchema for Timestamp {}

/// What went wrong, where, and what to do (an operation's or a cluster's error).
#[derive(ToSchema)]
#[schema(as = UserError)]
#[allow(dead_code)] // Schema only: the value is strato_domain's `UserError`.
pub struct UserErrorSchema {
    what: String,
    step: String,
    fix: String,
    /// The failure's class (transient, quota, credentials, …).
    category: String,
    /// Whether trying again can help.
    retryable: bool,
}

/// A resource Terraform would change to undo drift.
#[derive(ToSchema)]
#[schema(as = ResourceChange)]
#[allow(dead_code)] // Schema only: the value is strato_domain's `ResourceChange`.
pub struct ResourceChangeSchema {
    address: String,
    actions: Vec<String>,
}

/// A monthly cost estimate from a plan.
#[derive(ToSchema)]
#[schema(as = CostEstimate)]
#[allow(dead_code)] // Schema only: the value is strato_domain's `CostEstimate`.
pub struct CostEstimateSchema {
    currency: String,
    total_monthly: f64,
    /// Each priced resource.
    #[schema(value_type = Vec<Object>)]
    resources: Vec<serde_json::Value>,
    not_estimated: Vec<String>,
    price_table_date: String,
    price_table_source: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerations_are_the_wire_names() {
        let s = serde_json::to_value(OperationStatus::schema()).unwrap();
        assert_eq!(s["enum"][0], "queued");
        let k = serde_json::to_value(OperationKind::schema()).unwrap();
        assert!(k["enum"].as_array().unwrap().contains(&"drift-check".into()));
        let d = serde_json::to_value(DriftPolicy::schema()).unwrap();
        assert_eq!(d["enum"], serde_json::json!(["notify", "reconcile"]));
    }
}
