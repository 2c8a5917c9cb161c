//! The decisions the wiring is built on, on plain values: which clusters a selector takes (and every refusal
//! naming its field), and how an ended operation becomes the rollout's input.

use std::collections::BTreeMap;

use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, OperationStatus, TemplateRef,
};
use strato_domain::preview::{
    ChangeAction, CostDifference, PolicyResults, Preview, PreviewChange, PreviewCounts,
};
use strato_domain::ts;

use crate::RolloutError;
use crate::machine::Input;
use crate::outcome::input_of;
use crate::select::{Selector, select};
use crate::store::{MAX_ADDRESSES, MAX_MEMBERS};

fn cluster(tenant: &str, name: &str, template: &str, version: &str, state: ClusterState) -> Cluster {
    let spec = ClusterSpec {
        name: name.parse().unwrap(),
        template: TemplateRef {
            name: template.into(),
            version: version.into(),
        },
        provider: CloudProvider::Aws,
        region: "us-east-1".into(),
        variables: BTreeMap::new(),
        target: None,
    };
    Cluster::new(tenant.parse().unwrap(), ClusterId::generate(), spec, ts::now()).in_state(state)
}

fn fleet() -> Vec<Cluster> {
    vec![
        cluster("acme", "one", "eks", "1.0.0", ClusterState::Active),
        cluster("acme", "two", "eks", "1.1.0", ClusterState::Active),
        cluster("acme", "three", "eks", "2.0.0", ClusterState::Active),
        cluster("acme", "gone", "eks", "1.0.0", ClusterState::Deleting),
        cluster("acme", "broken", "eks", "1.0.0", ClusterState::Failed),
        cluster("acme", "other", "vpc", "1.0.0", ClusterState::Active),
        cluster("globex", "four", "eks", "1.0.0", ClusterState::Active),
    ]
}

fn names(fleet: &[Cluster], picked: &[(TenantId, ClusterId, String)]) -> Vec<String> {
    let mut out: Vec<String> = picked
        .iter()
        .map(|(_, id, _)| {
            fleet
                .iter()
                .find(|c| &c.cluster_id == id)
                .unwrap()
                .spec
                .name
                .to_string()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_template_fleet_not_on_the_new_version_and_not_being_deleted_is_selected() {
    let f = fleet();
    let all = select(&Selector::default(), "eks", "2.0.0", &f, true).unwrap();
    assert_eq!(names(&f, &all), ["broken", "four", "one", "two"]);
    let one = all.iter().find(|(_, id, _)| *id == f[0].cluster_id).unwrap();
    assert_eq!(one.2, "1.0.0", "the version it is on is kept");
}

#[test]
fn each_selector_member_narrows_the_selection() {
    let f = fleet();
    let sel = |v: serde_json::Value| -> Selector { serde_json::from_value(v).unwrap() };
    let by_version = select(
        &sel(serde_json::json!({"from_versions": ["1.1.0"]})),
        "eks",
        "2.0.0",
        &f,
        false,
    );
    assert_eq!(names(&f, &by_version.unwrap()), ["two"]);
    let by_state = select(
        &sel(serde_json::json!({"states": ["active"]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(names(&f, &by_state.unwrap()), ["four", "one", "two"]);
    let id = f[6].cluster_id.to_string();
    let by_cluster = select(
        &sel(serde_json::json!({"clusters": ["one", id]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(names(&f, &by_cluster.unwrap()), ["four", "one"]);
    let by_tenant = select(
        &sel(serde_json::json!({"tenants": ["globex"]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(names(&f, &by_tenant.unwrap()), ["four"]);
}

#[test]
fn refusals_name_their_field() {
    let f = fleet();
    let sel = |v: serde_json::Value| -> Selector { serde_json::from_value(v).unwrap() };
    let field = |r: Result<_, RolloutError>| match r {
        Err(RolloutError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let tenants = select(
        &sel(serde_json::json!({"tenants": ["globex"]})),
        "eks",
        "2.0.0",
        &f,
        false,
    );
    assert_eq!(field(tenants), "selector.tenants");
    let labels = select(
        &sel(serde_json::json!({"labels": {"env": "prod"}})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(field(labels), "selector.labels");
    let states = select(
        &sel(serde_json::json!({"states": ["sleepy"]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(field(states), "selector.states");
    let unknown = select(
        &sel(serde_json::json!({"clusters": ["other"]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(
        field(unknown),
        "selector.clusters",
        "a cluster on another template is not in the fleet"
    );
    assert!(serde_json::from_value::<Selector>(serde_json::json!({"colour": "red"})).is_err());
    assert_eq!(
        select(&Selector::default(), "eks", "9.9.9", &[], true),
        Err(RolloutError::NothingSelected)
    );
    let on_target = select(
        &sel(serde_json::json!({"clusters": ["three"]})),
        "eks",
        "2.0.0",
        &f,
        true,
    );
    assert_eq!(
        on_target,
        Err(RolloutError::NothingSelected),
        "already on the new version"
    );
    let big: Vec<Cluster> = (0..=MAX_MEMBERS)
        .map(|i| cluster("acme", &format!("c{i:04}"), "eks", "1.0.0", ClusterState::Active))
        .collect();
    assert!(matches!(
        select(&Selector::default(), "eks", "2.0.0", &big, false),
        Err(RolloutError::TooMany { max: MAX_MEMBERS, .. })
    ));
}

fn preview(changes: &[(&str, ChangeAction)], difference: f64, denied: &[&str]) -> Preview {
    Preview {
        changes: changes
            .iter()
            .map(|(a, action)| PreviewChange {
                stage: "infra".into(),
                address: (*a).into(),
                action: *action,
            })
            .collect(),
        counts: PreviewCounts {
            add: 1,
            change: 2,
            destroy: 1,
            replace: 1,
        },
        cost: CostDifference {
            currency: "USD".into(),
            current_monthly: 10.0,
            proposed_monthly: 10.0 + difference,
            difference_monthly: difference,
            not_estimated: vec![],
            price_table_date: "2026-11-01".into(),
        },
        policy: PolicyResults {
            version: "sha256:x".into(),
            denied: denied.iter().map(|d| (*d).to_owned()).collect(),
            warnings: vec![],
        },
    }
}

fn ended(kind: OperationKind, status: OperationStatus) -> Operation {
    let mut op = Operation::new("acme".parse().unwrap(), ClusterId::generate(), kind, ts::now());
    op.status = status;
    op
}

#[test]
fn an_ended_plan_brings_its_findings() {
    let mut op = ended(OperationKind::Plan, OperationStatus::Succeeded);
    op.preview = Some(preview(
        &[
            ("aws_eks_node_group.this", ChangeAction::Replace),
            ("aws_s3_bucket.logs", ChangeAction::Delete),
            ("aws_iam_role.x", ChangeAction::Update),
        ],
        12.5,
        &["no-public-buckets"],
    ));
    let Some(Input::Planned {
        cluster,
        operation,
        findings,
    }) = input_of(&op)
    else {
        panic!()
    };
    assert_eq!(
        (cluster, operation),
        (op.cluster_id.clone(), op.operation_id.clone())
    );
    assert_eq!(findings.replace, ["aws_eks_node_group.this"]);
    assert_eq!(findings.destroy, ["aws_s3_bucket.logs"]);
    assert_eq!((findings.add, findings.change), (1, 2));
    assert_eq!(findings.monthly_difference, Some(12.5));
    assert_eq!(findings.denied, ["no-public-buckets"]);

    let many: Vec<(String, ChangeAction)> = (0..30)
        .map(|i| (format!("aws_instance.n[{i}]"), ChangeAction::Replace))
        .collect();
    let many: Vec<(&str, ChangeAction)> = many.iter().map(|(a, c)| (a.as_str(), *c)).collect();
    op.preview = Some(preview(&many, 0.0, &[]));
    let Some(Input::Planned { findings, .. }) = input_of(&op) else {
        panic!()
    };
    assert_eq!(findings.replace.len(), MAX_ADDRESSES, "addresses are bounded");
}

#[test]
fn ends_map_to_upgrades_and_failures_and_open_or_foreign_operations_to_nothing() {
    let op = ended(OperationKind::Update, OperationStatus::Succeeded);
    assert!(matches!(input_of(&op), Some(Input::Upgraded { .. })));

    let mut op = ended(OperationKind::Update, OperationStatus::Failed);
    op.error = Some(UserError {
        what: "the node group did not become ready".into(),
        step: "apply".into(),
        fix: "check the instance type's quota".into(),
        category: ErrorCategory::Quota,
        retryable: false,
    });
    let Some(Input::Failed { reason, .. }) = input_of(&op) else {
        panic!()
    };
    assert!(
        reason.contains("did not become ready") && reason.contains("quota"),
        "{reason}"
    );

    let op = ended(OperationKind::Plan, OperationStatus::Cancelled);
    assert!(matches!(input_of(&op), Some(Input::Failed { reason, .. }) if reason == "cancelled"));
    let op = ended(OperationKind::Plan, OperationStatus::Succeeded);
    assert!(
        matches!(input_of(&op), Some(Input::Failed { .. })),
        "a plan without a preview"
    );
    assert_eq!(
        input_of(&ended(OperationKind::Plan, OperationStatus::Running)),
        None
    );
    assert_eq!(
        input_of(&ended(OperationKind::DriftCheck, OperationStatus::Succeeded)),
        None
    );
}
