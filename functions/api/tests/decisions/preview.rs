//! A preview (`POST /v1/clusters/{id}/plan`): validated and governed exactly as the update it previews, queued
//! as a `plan` operation with the proposed spec, and nothing of the cluster changed.

use super::*;
use strato_domain::approval::ApprovalMode;
use strato_policy::{Policy, PolicySet};

/// An ACTIVE cluster with nothing open, and its id.
async fn active(w: &World) -> (Started, String) {
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str().to_owned();
    (s, id)
}

/// The fields a 422 names, in its order.
fn fields(e: ApiError) -> Vec<String> {
    assert_eq!(e.status().as_u16(), 422, "{e}");
    let (p, _) = e.problem();
    p.errors.iter().map(|f| f.field.clone()).collect()
}

#[tokio::test]
async fn a_preview_queues_a_plan_of_the_proposed_spec_and_leaves_the_cluster_as_it_is() {
    let w = World::new();
    // Even where updates wait for an approver, a preview applies nothing and so waits for nobody.
    w.store
        .set_approval_default(&TENANT.parse().unwrap(), ApprovalMode::Required);
    let (s, id) = active(&w).await;
    let before = w.store.cluster(&s.cluster.cluster_id).unwrap();
    let sent = w.jobs.sent().len();
    let p = w
        .api()
        .plan(
            &caller(),
            &id,
            patch(json!({"variables": {"node_count": 5, "max_nodes": null}, "template_version": "1.1.0"})),
        )
        .await
        .unwrap();
    let op = w.store.operation(&p.operation.operation_id).unwrap();
    assert_eq!(op.kind, OperationKind::Plan);
    assert_eq!(op.status, OperationStatus::Queued);
    assert!(!op.approval_required);
    let spec = op.spec.clone().unwrap();
    assert_eq!(spec.variables["node_count"], json!(5));
    assert_eq!(spec.template.version, "1.1.0");
    assert!(!spec.variables.contains_key("max_nodes"));
    assert!(
        !serde_json::to_string(&spec).unwrap().contains("hunter2"),
        "the sensitive variable stays sealed in the proposed spec"
    );
    // Queued like any operation: its job sent, the cluster pointing at it as its newest operation.
    assert_eq!(w.jobs.sent().len(), sent + 1);
    let after = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(after.pending_operation, Some(op.operation_id.clone()));
    // ...and nothing else of the cluster changed: spec, state, drift, outputs.
    assert_eq!(after.spec, before.spec);
    assert_eq!(after.state(), ClusterState::Active);
    assert_eq!(after.drift, before.drift);
    assert_eq!(after.outputs, before.outputs);
}

#[tokio::test]
async fn a_bad_preview_names_every_field_in_one_422_and_queues_nothing() {
    let w = World::new();
    let (_, id) = active(&w).await;
    let ops = w.store.operations().len();
    let sent = w.jobs.sent().len();
    let api = w.api();
    // The body's own problems, settings included (no plan can preview them), all at once.
    let e = api
        .plan(
            &caller(),
            &id,
            patch(json!({
                "variables": {"node_count": 5},
                "surprise": 1,
                "drift": {"policy": "reconcile"},
                "approval": "required",
                "ttl_hours": 4,
                "template_version": "one",
            })),
        )
        .await
        .unwrap_err();
    let mut got = fields(e);
    got.sort();
    assert_eq!(
        got,
        [
            "approval",
            "drift.policy",
            "expires_at",
            "surprise",
            "template_version"
        ],
    );
    // The template's checks, every one at once, as for the update.
    let e = api
        .plan(
            &caller(),
            &id,
            patch(json!({"variables": {"node_count": 99, "owner_email": "nobody", "nope": 1}})),
        )
        .await
        .unwrap_err();
    let mut got = fields(e);
    got.sort();
    assert_eq!(
        got,
        ["variables.node_count", "variables.nope", "variables.owner_email"],
    );
    // An unpublished version, and a body that proposes nothing.
    let e = api
        .plan(&caller(), &id, patch(json!({"template_version": "9.9.9"})))
        .await
        .unwrap_err();
    assert_eq!(fields(e), ["template_version"]);
    for nothing in [json!({}), json!({"variables": {}})] {
        let e = api.plan(&caller(), &id, patch(nothing)).await.unwrap_err();
        assert_eq!(fields(e), ["variables"]);
    }
    assert_eq!(w.store.operations().len(), ops);
    assert_eq!(w.jobs.sent().len(), sent);
}

#[tokio::test]
async fn no_input_makes_a_preview_answer_a_5xx() {
    let w = World::new();
    let (_, id) = active(&w).await;
    let bodies = [
        json!({"variables": null}),
        json!({"variables": []}),
        json!({"variables": "x"}),
        json!({"variables": {"node_count": "many"}}),
        json!({"variables": {"node_count": 1e300}}),
        json!({"variables": {"tags": {"a": {"b": [1, 2]}}}}),
        json!({"variables": {"": 1}}),
        json!({"template_version": 7}),
        json!({"template_version": "../../etc"}),
        json!({"template_version": "1.0.0".repeat(400)}),
        json!({"template_version": null}),
        json!({"drift": "x", "expires_at": "yesterday"}),
        json!({"variables": {"node_count": 4}, "approval": null}),
    ];
    for body in bodies {
        // What does not even read as the request's shape is the HTTP layer's 400.
        let Ok(parsed) = serde_json::from_value::<UpdateBody>(body.clone()) else {
            continue;
        };
        let e = w.api().plan(&caller(), &id, parsed).await.unwrap_err();
        let status = e.status().as_u16();
        assert!((400..500).contains(&status), "{body}: {status} {e}");
    }
    for id in ["", "cl-nope", "../x", &"9".repeat(500)] {
        let e = w
            .api()
            .plan(&caller(), id, patch(json!({"variables": {"node_count": 4}})))
            .await
            .unwrap_err();
        assert_eq!(e.status().as_u16(), 404, "{id}: {e}");
    }
}

#[tokio::test]
async fn a_preview_is_refused_where_the_update_would_be() {
    // A FAILED cluster cannot be updated, so there is nothing to preview.
    let w = World::new();
    let s = w.cluster_in(ClusterState::Failed, OperationStatus::Failed).await;
    let e = w
        .api()
        .plan(
            &caller(),
            s.cluster.cluster_id.as_str(),
            patch(json!({"variables": {"node_count": 4}})),
        )
        .await
        .unwrap_err();
    assert!(conflict(e).contains("FAILED"));
    // A cluster being deleted neither.
    let w = World::new();
    let (_, id) = active(&w).await;
    w.api().delete(&caller(), &id).await.unwrap();
    let e = w
        .api()
        .plan(&caller(), &id, patch(json!({"variables": {"node_count": 4}})))
        .await
        .unwrap_err();
    assert!(conflict(e).contains("delete"));

    // A request policy that denies the update denies its preview, with the same 422.
    const SMALL: &str = r#"package strato.request

deny contains "at most 4 nodes" if input.variables.node_count > 4

warn contains "previewing is free" if input.action == "update"
"#;
    let w = World::new();
    let (_, id) = active(&w).await;
    let set = PolicySet::compile(&[Policy::tenant("small", SMALL)]).unwrap();
    let api = Api {
        policies: Some(&set),
        ..w.api()
    };
    let ops = w.store.operations().len();
    let body = || patch(json!({"variables": {"node_count": 5}}));
    let update = api.update(&caller(), &id, body()).await.unwrap_err();
    let preview = api.plan(&caller(), &id, body()).await.unwrap_err();
    assert_eq!(preview.status().as_u16(), 422, "{preview}");
    let names = |e: ApiError| -> Vec<String> {
        let (p, _) = e.problem();
        p.errors
            .iter()
            .map(|f| format!("{}: {}", f.field, f.problem))
            .collect()
    };
    assert!(
        format!("{preview:?}").contains("at most 4 nodes"),
        "{preview:?} / {update:?}"
    );
    assert_eq!(names(preview), names(update));
    assert_eq!(w.store.operations().len(), ops);
    // Allowed, its warnings and the policy version are recorded on the plan operation, as on an update.
    let p = api
        .plan(&caller(), &id, patch(json!({"variables": {"node_count": 4}})))
        .await
        .unwrap();
    assert!(p.operation.policy_version.is_some());
    assert!(
        p.operation.notes.iter().any(|n| n.contains("previewing is free")),
        "{:?}",
        p.operation.notes
    );
}

#[tokio::test]
async fn a_preview_builds_on_an_open_update_and_no_update_builds_on_a_preview() {
    let w = World::new();
    let (s, id) = active(&w).await;
    w.api()
        .update(&caller(), &id, patch(json!({"variables": {"node_count": 5}})))
        .await
        .unwrap();
    // Planned after the update (they run in order), it previews the update's spec with its own change.
    let p = w
        .api()
        .plan(&caller(), &id, patch(json!({"variables": {"max_nodes": 10}})))
        .await
        .unwrap();
    let spec = p.operation.spec.clone().unwrap();
    assert_eq!(
        (
            spec.variables["node_count"].clone(),
            spec.variables["max_nodes"].clone()
        ),
        (json!(5), json!(10))
    );
    // A later PATCH builds on the open update, never on the preview's proposal.
    let u = w.updated(&id, json!({"variables": {"min_nodes": 2}})).await;
    let spec = u.spec.unwrap();
    assert_eq!(spec.variables["node_count"], json!(5));
    assert!(!spec.variables.contains_key("max_nodes"), "{spec:?}");
    // Three operations queued on the cluster, in order; the cluster's applied spec is still the create's.
    let kinds: Vec<_> = w
        .store
        .operations_of(&s.cluster.cluster_id)
        .into_iter()
        .filter(|o| !o.status.is_terminal())
        .map(|o| o.kind)
        .collect();
    assert_eq!(
        kinds,
        [OperationKind::Update, OperationKind::Plan, OperationKind::Update]
    );
    assert_eq!(
        w.store.cluster(&s.cluster.cluster_id).unwrap().spec,
        s.cluster.spec
    );
}
