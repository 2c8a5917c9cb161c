//! Governance in the decisions: a cluster's approval setting can tighten what its template and tenant
//! require but only an administrator lowers it (never below the template's or tenant's), the request
//! policies see it, and a change needs a requester who is named.

use super::*;
use strato_api::scopes::Scope;
use strato_domain::approval::{ApprovalMode, Verdict};
use strato_policy::{Policy, PolicySet};

fn admin() -> Caller {
    Caller {
        subject: Some("admin-1".into()),
        scopes: vec![Scope::Admin],
        ..caller()
    }
}

fn with_approval(name: &str, mode: &str) -> SpecBody {
    let mut body = spec_json(name);
    body["approval"] = json!(mode);
    serde_json::from_value(body).unwrap()
}

/// The caller's create of cluster `name` asking for approval `mode`.
async fn create_with_approval(w: &World, name: &str, mode: &str) -> Result<Started, ApiError> {
    w.api().create(&caller(), with_approval(name, mode)).await
}

/// The 403 a writer gets for lowering: it names the field `approval` and the scope it needs.
fn refused_lowering(e: ApiError) {
    assert_eq!(e.status().as_u16(), 403, "{e}");
    let (p, _) = e.problem();
    assert_eq!(p.kind, "urn:strato:problem:forbidden", "{p:?}");
    assert_eq!(p.errors.len(), 1, "{p:?}");
    assert_eq!(p.errors[0].field, "approval", "{p:?}");
    assert!(p.errors[0].allowed.contains("'admin'"), "{p:?}");
    assert!(p.detail.contains("'admin' scope"), "{p:?}");
}

/// Makes the fixture template 1.0.0 require approval, as its author may.
async fn template_requires_approval(w: &World) {
    let mut t = w.templates.template("api-test", "1.0.0").await.unwrap().unwrap();
    t.manifest.approval = Some(ApprovalMode::Required);
    w.templates.publish(t);
}

#[tokio::test]
async fn a_writer_cannot_switch_approvals_off_on_create() {
    // The tenant requires approval: a writer's `approval: auto` is refused, nothing is written.
    let w = World::new();
    w.store
        .set_approval_default(&TENANT.parse().unwrap(), ApprovalMode::Required);
    let e = create_with_approval(&w, "prod-eu", "auto").await.unwrap_err();
    refused_lowering(e);
    assert!(w.store.clusters().is_empty() && w.store.operations().is_empty());
    assert!(w.jobs.sent().is_empty());

    // The template requires it: the same.
    let w = World::new();
    template_requires_approval(&w).await;
    let e = create_with_approval(&w, "prod-eu", "auto").await.unwrap_err();
    refused_lowering(e);
    // Without a setting, the template's requirement holds; `auto` where nothing requires it is no lowering.
    assert!(w.create("staging").await.operation.approval_required);
    let w = World::new();
    let s = create_with_approval(&w, "dev", "auto").await.unwrap();
    assert!(!s.operation.approval_required);
}

#[tokio::test]
async fn a_writer_cannot_switch_approvals_off_in_a_patch_even_beside_a_variable_change() {
    let w = World::new();
    // Tightening is a writer's to do.
    let s = create_with_approval(&w, "prod-eu", "required").await.unwrap();
    assert!(s.operation.approval_required);
    let mut c = s.cluster.clone().in_state(ClusterState::Active);
    c.pending_operation = None;
    w.store.put_cluster(c);
    let mut op = s.operation.clone();
    op.status = OperationStatus::Succeeded;
    w.store.put_operation(op);
    let id = s.cluster.cluster_id.to_string();
    let (ops, sent) = (w.store.operations().len(), w.jobs.sent().len());

    for body in [
        json!({"variables": {"node_count": 4}, "approval": "auto"}),
        json!({"approval": "auto"}),
        json!({"approval": null}),
    ] {
        let e = w.api().update(&caller(), &id, patch(body.clone())).await;
        refused_lowering(e.map(|_| ()).expect_err(&body.to_string()));
    }
    // Nothing changed, nothing ran.
    let stored = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(stored.approval, Some(ApprovalMode::Required));
    assert_eq!((w.store.operations().len(), w.jobs.sent().len()), (ops, sent));
    // The variable change alone waits for an approver, as the cluster says.
    assert!(
        w.updated(&id, json!({"variables": {"node_count": 4}}))
            .await
            .approval_required
    );
}

#[tokio::test]
async fn no_cluster_setting_lowers_the_templates_or_tenants_requirement() {
    let w = World::new();
    let tenant = TENANT.parse().unwrap();
    let s = w.active().await;
    // A cluster that says `auto` (set while nothing required approval) follows a later tenant requirement.
    let mut c = w.store.cluster(&s.cluster.cluster_id).unwrap();
    c.approval = Some(ApprovalMode::Auto);
    c.pending_operation = None;
    w.store.put_cluster(c);
    w.store.set_approval_default(&tenant, ApprovalMode::Required);
    let id = s.cluster.cluster_id.to_string();
    assert!(
        w.updated(&id, json!({"variables": {"node_count": 4}}))
            .await
            .approval_required
    );
    // Not even an administrator sets `auto` under it: a 422 saying whose requirement it is.
    let e = w
        .api()
        .create(&admin(), with_approval("staging", "auto"))
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 422, "{e}");
    let (p, _) = e.problem();
    assert_eq!(p.errors[0].field, "approval");
    assert!(p.errors[0].problem.contains("tenant"), "{p:?}");
}

#[tokio::test]
async fn an_admin_may_lower_the_clusters_own_requirement_and_it_is_reported_for_the_audit() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.to_string();
    let u = w
        .api()
        .update(&caller(), &id, patch(json!({"approval": "required"})))
        .await
        .unwrap();
    assert_eq!(u.approval_lowered, None, "tightening is no lowering");
    let u = w
        .api()
        .update(&admin(), &id, patch(json!({"approval": "auto"})))
        .await
        .unwrap();
    assert_eq!(u.cluster.approval, Some(ApprovalMode::Auto));
    let lowered = u.approval_lowered.expect("a lowering to audit");
    assert_eq!(
        lowered.detail(),
        "approval setting lowered by an admin: required -> auto (applies now: auto)"
    );
}

const NO_AUTO: &str = r#"package strato.request

deny contains "clusters of this tenant wait for an approver" if input.approval == "auto"

deny contains "approval is this tenant's to set" if {
	input.action == "update"
	input.approval_setting != null
}
"#;

#[tokio::test]
async fn request_policies_see_the_approval_that_applies_and_the_clusters_setting() {
    let w = World::new();
    let set = PolicySet::compile(&[Policy::tenant("no-auto", NO_AUTO)]).unwrap();
    let api = Api {
        policies: Some(&set),
        ..w.api()
    };
    let e = api
        .create(&caller(), with_approval("prod-eu", "auto"))
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 422, "{e}");
    assert!(format!("{e:?}").contains("wait for an approver"), "{e:?}");
    assert!(w.store.clusters().is_empty());
    let s = api
        .create(&caller(), with_approval("prod-eu", "required"))
        .await
        .unwrap();
    let mut c = s.cluster.clone().in_state(ClusterState::Active);
    c.pending_operation = None;
    w.store.put_cluster(c);
    // A PATCH of the setting alone is checked too.
    let e = api
        .update(
            &admin(),
            s.cluster.cluster_id.as_str(),
            patch(json!({"approval": "required"})),
        )
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(format!("{e:?}").contains("this tenant's to set"), "{e:?}");
}

#[tokio::test]
async fn a_caller_without_a_subject_can_neither_request_nor_approve() {
    let w = World::new();
    let anonymous = Caller {
        subject: None,
        ..caller()
    };
    let e = w.api().create(&anonymous, spec("prod-eu")).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 401, "{e}");
    assert!(w.store.clusters().is_empty());

    // An operation recorded without a requester (before subjects were required) waits for an approver:
    // nobody can show they are not its requester, so with separation on it is not approved, only rejected.
    let mut s = w.create("prod-eu").await;
    s.operation.requested_by = None;
    let s = super::approvals::parked_for_approval(&w, s);
    let id = s.operation.operation_id.to_string();
    let e = w.decide(&anonymous, &id, Verdict::Approved).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 401, "{e}");
    let lead = Caller {
        subject: Some("lead-2".into()),
        ..caller()
    };
    let e = w.decide(&lead, &id, Verdict::Approved).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 403, "{e}");
    assert!(w.awaits_decision(&s));
    w.decide(&lead, &id, Verdict::Rejected).await.unwrap();
}

/// Prints what it sees of the variables, as a warning and (for one cluster name) as a deny.
const LEAKY: &str = r#"package strato.request

warn contains msg if {
	msg := sprintf("variables %v", [input.variables])
}

deny contains msg if {
	input.cluster.name == "leaky-deny"
	msg := sprintf("password %v", [input.variables.db_password])
}
"#;

#[tokio::test]
async fn a_request_policy_that_prints_a_sensitive_variable_sees_and_shows_it_only_redacted() {
    let w = World::new();
    let set = PolicySet::compile(&[Policy::tenant("leaky", LEAKY)]).unwrap();
    let api = Api {
        policies: Some(&set),
        ..w.api()
    };
    // `db_password` is sensitive in the template; the request carries it in the clear (not sealed yet).
    let e = api.create(&caller(), spec("leaky-deny")).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 422, "{e}");
    let shown = format!("{e:?} {e}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("password (sensitive value)"), "{shown}");
    let s = api.create(&caller(), spec("prod-eu")).await.unwrap();
    let notes = s.operation.notes.join("\n");
    assert!(!notes.contains("hunter2"), "{notes}");
    assert!(
        notes.contains("(sensitive value)") && notes.contains("ops@example.com"),
        "the policy saw the other variables: {notes}"
    );
}
