//! A cluster's expiry through the API's decisions, on the fakes: `expires_at` or `ttl_hours` on create and
//! PATCH, each problem a 422 naming its field, the tenant maximum (its own or the platform default), and
//! PATCH extending or clearing it without an operation.

use serde_json::{Value, json};
use strato_api::{Caller, SpecBody};
use strato_domain::ports::Clock;
use strato_domain::ts;
use time::Duration;

use super::{World, invalid_fields as fields, patch};

fn world(default_max: Option<u64>) -> World {
    World::with_default_max(default_max)
}

fn caller() -> Caller {
    Caller {
        tenant: "acme".parse().unwrap(),
        subject: Some("user-7f3a".into()),
        traceparent: None,
        scopes: vec![strato_api::scopes::Scope::ClustersWrite],
    }
}

fn create_body(name: &str, extra: Value) -> SpecBody {
    let mut v = super::spec_json(name);
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn create_takes_expires_at_or_ttl_hours_and_names_what_is_wrong() {
    let w = world(None);
    let api = w.api();
    let now = w.clock.now();
    let s = api
        .create(&caller(), create_body("ttl", json!({"ttl_hours": 2})))
        .await
        .unwrap();
    assert_eq!(s.cluster.expires_at, Some(now + Duration::hours(2)));
    assert_eq!(
        s.cluster.expiry_bucket.as_deref(),
        Some("expiring"),
        "in the expiry index"
    );
    let at = ts::format(now + Duration::hours(5));
    let s = api
        .create(&caller(), create_body("at-five", json!({"expires_at": at})))
        .await
        .unwrap();
    assert_eq!(s.cluster.expires_at.map(ts::format), Some(at.clone()));
    let s = api
        .create(&caller(), create_body("never", json!({})))
        .await
        .unwrap();
    assert_eq!(s.cluster.expires_at, None, "no maximum: no expiry");

    let who = caller();
    let bad = |extra| api.create(&who, create_body("bad", extra));
    assert_eq!(
        fields(bad(json!({"ttl_hours": 2, "expires_at": at})).await.unwrap_err()),
        ["ttl_hours"]
    );
    assert_eq!(
        fields(
            bad(json!({"expires_at": "2020-01-01T00:00:00Z"}))
                .await
                .unwrap_err()
        ),
        ["expires_at"]
    );
    assert_eq!(
        fields(bad(json!({"expires_at": "tomorrow"})).await.unwrap_err()),
        ["expires_at"]
    );
    assert_eq!(
        fields(bad(json!({"ttl_hours": "two"})).await.unwrap_err()),
        ["ttl_hours"]
    );
    // Shape problems come with the spec's own, all at once.
    let both = create_body("bad", json!({"ttl_hours": -1, "colour": "blue"}));
    assert_eq!(
        fields(api.create(&caller(), both).await.unwrap_err()),
        ["colour", "ttl_hours"]
    );
}

#[tokio::test]
async fn the_tenant_maximum_bounds_create_and_patch_and_forbids_clearing() {
    let w = world(Some(240));
    w.store.set_max_ttl_hours(&"acme".parse().unwrap(), 24);
    let api = w.api();
    let now = w.clock.now();
    // The tenant's own maximum wins over the platform default; asking nothing gets the maximum.
    let s = api
        .create(&caller(), create_body("capped", json!({})))
        .await
        .unwrap();
    assert_eq!(s.cluster.expires_at, Some(now + Duration::hours(24)));
    let err = api
        .create(&caller(), create_body("long", json!({"ttl_hours": 25})))
        .await
        .unwrap_err();
    assert_eq!(fields(err), ["ttl_hours"]);

    let id = s.cluster.cluster_id.to_string();
    let shorter = api
        .update(&caller(), &id, patch(json!({"ttl_hours": 3})))
        .await
        .unwrap();
    assert!(shorter.operation.is_none(), "an expiry alone queues no operation");
    assert_eq!(shorter.cluster.expires_at, Some(now + Duration::hours(3)));
    let stored = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(stored.expires_at, Some(now + Duration::hours(3)));
    let err = api
        .update(&caller(), &id, patch(json!({"expires_at": null})))
        .await
        .unwrap_err();
    assert_eq!(fields(err), ["expires_at"], "cannot be cleared under a maximum");
    let err = api
        .update(
            &caller(),
            &id,
            patch(json!({"expires_at": ts::format(now + Duration::hours(30))})),
        )
        .await
        .unwrap_err();
    assert_eq!(fields(err), ["expires_at"]);
}

#[tokio::test]
async fn patch_extends_or_clears_an_expiry_without_a_maximum() {
    let w = world(None);
    let api = w.api();
    let now = w.clock.now();
    let s = api
        .create(&caller(), create_body("temp", json!({"ttl_hours": 1})))
        .await
        .unwrap();
    let id = s.cluster.cluster_id.to_string();
    let later = ts::format(now + Duration::hours(48));
    let u = api
        .update(&caller(), &id, patch(json!({"expires_at": later})))
        .await
        .unwrap();
    assert_eq!(u.cluster.expires_at.map(ts::format), Some(later));
    let u = api
        .update(&caller(), &id, patch(json!({"expires_at": null})))
        .await
        .unwrap();
    assert_eq!(u.cluster.expires_at, None);
    assert_eq!(
        w.store.cluster(&s.cluster.cluster_id).unwrap().expiry_bucket,
        None,
        "out of the index"
    );
    // Only the create's job was sent.
    assert_eq!(w.jobs.sent().len(), 1);
}
