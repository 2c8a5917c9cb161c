//! A create's audit entry is written in the create's own write (the store's transaction): it exists exactly
//! when the cluster does, and a create the log cannot record does not happen. Refused creates write nothing
//! here; the route layer records them (the draft says so).

use strato_api::decide::Api;
use strato_api::{AuditDraft, SpecBody};
use strato_domain::audit::Outcome;
use strato_domain::ports::TenantRules;

use super::{World, caller, spec};

fn draft() -> AuditDraft {
    AuditDraft::new(
        caller().tenant,
        "user-7f3a",
        "cluster.create",
        Some("req-1".into()),
    )
}

#[tokio::test]
async fn an_accepted_create_writes_its_entry_with_the_cluster() {
    let w = World::new();
    let d = draft();
    let api = Api {
        audit: Some(&d),
        ..w.api()
    };
    let s = api.create(&caller(), spec("prod-eu")).await.unwrap();
    assert!(d.is_written(), "the layer must not write it again");
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    // What the layer wrote from the 202 answer: the same fields.
    let expected = d.entry(
        e.time,
        202,
        Some(s.cluster.cluster_id.clone()),
        Some(s.operation.operation_id.clone()),
        None,
    );
    assert_eq!(
        (&e.action, &e.principal, e.outcome, e.status),
        (
            &expected.action,
            &expected.principal,
            Outcome::Accepted,
            Some(202)
        )
    );
    assert_eq!(e.tenant_id, expected.tenant_id);
    assert_eq!(e.cluster_id.as_ref(), Some(&s.cluster.cluster_id));
    assert_eq!(e.operation_id.as_ref(), Some(&s.operation.operation_id));
    assert_eq!(e.request_id.as_deref(), Some("req-1"));
    assert_eq!(e.detail, None);
    assert_eq!(e.time, s.cluster.created_at, "recorded at the create's time");
}

#[tokio::test]
async fn a_refused_create_writes_no_entry_and_leaves_it_to_the_layer() {
    let w = World::new();
    w.create("prod-eu").await;
    let d = draft();
    let api = Api {
        audit: Some(&d),
        ..w.api()
    };
    let e = api.create(&caller(), spec("prod-eu")).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 409, "{e}");
    assert!(!d.is_written());
    assert!(w.audit.entries().is_empty());
}

#[tokio::test]
async fn a_create_its_entry_cannot_be_written_for_does_not_happen() {
    let w = World::new();
    w.audit.fail_appends(true);
    let d = draft();
    let api = Api {
        audit: Some(&d),
        ..w.api()
    };
    assert!(api.create(&caller(), spec("prod-eu")).await.is_err());
    assert!(!d.is_written());
    assert!(w.store.clusters().is_empty() && w.store.operations().is_empty());
    assert!(w.jobs.sent().is_empty());
}

/// The rules read with the tenant's policies (one read of the tenant item) are the ones applied: the store is
/// not asked again.
#[tokio::test]
async fn rules_read_with_the_policies_are_the_ones_applied() {
    let w = World::new();
    let api = Api {
        rules: Some(TenantRules {
            max_ttl_hours: Some(2),
            approval: None,
        }),
        ..w.api()
    };
    let mut body = super::spec_json("prod-eu");
    body["ttl_hours"] = serde_json::json!(5);
    let e = api
        .create(&caller(), serde_json::from_value::<SpecBody>(body).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        super::invalid_fields(e),
        ["ttl_hours"],
        "the store has no maximum; the rules given do"
    );
}
