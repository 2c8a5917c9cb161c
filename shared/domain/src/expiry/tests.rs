use super::*;
use crate::ids::ClusterId;
use crate::model::ClusterSpec;

fn now() -> OffsetDateTime {
    crate::ts::parse("2026-11-22T12:00:00Z").unwrap()
}

fn cluster(state: ClusterState) -> Cluster {
    let spec: ClusterSpec = serde_json::from_value(serde_json::json!({"name": "prod",
        "template": {"name": "t", "version": "1.0.0"}, "provider": "aws", "region": "us-east-1"}))
    .unwrap();
    Cluster::new("t1".parse().unwrap(), ClusterId::generate(), spec, now()).in_state(state)
}

fn req(expires_at: Option<Option<OffsetDateTime>>, ttl_hours: Option<u64>) -> ExpiryRequest {
    ExpiryRequest {
        expires_at,
        ttl_hours,
    }
}

#[test]
fn a_request_sets_extends_or_clears_expiry_within_the_tenant_maximum() {
    let n = now();
    let in_2h = n + Duration::hours(2);
    assert_eq!(
        resolve(req(None, Some(2)), n, None, true),
        Ok(ExpiryChange::Set(in_2h))
    );
    assert_eq!(
        resolve(req(Some(Some(in_2h)), None), n, Some(2), false),
        Ok(ExpiryChange::Set(in_2h))
    );
    assert_eq!(resolve(req(None, None), n, None, false), Ok(ExpiryChange::Keep));
    assert_eq!(
        resolve(req(None, None), n, None, true),
        Ok(ExpiryChange::Keep),
        "no maximum: never"
    );
    assert_eq!(
        resolve(req(None, None), n, Some(48), true),
        Ok(ExpiryChange::Set(n + Duration::hours(48))),
        "a create asking nothing gets the tenant maximum"
    );
    assert_eq!(
        resolve(req(Some(None), None), n, None, false),
        Ok(ExpiryChange::Clear)
    );

    let field = |r, max, creating| resolve(r, n, max, creating).unwrap_err().field;
    assert_eq!(
        field(req(Some(Some(in_2h)), Some(2)), None, true),
        "ttl_hours",
        "both"
    );
    assert_eq!(field(req(None, Some(0)), None, true), "ttl_hours");
    assert_eq!(
        field(req(None, Some(u64::MAX)), None, true),
        "ttl_hours",
        "no overflow"
    );
    assert_eq!(
        resolve(req(None, Some(5)), n, Some(u64::MAX), true),
        Ok(ExpiryChange::Set(n + Duration::hours(5))),
        "a huge maximum is as good as none"
    );
    assert_eq!(
        field(req(Some(Some(n - Duration::seconds(1))), None), None, true),
        "expires_at"
    );
    assert_eq!(
        field(req(Some(Some(n)), None), None, false),
        "expires_at",
        "now is not to come"
    );
    assert_eq!(
        field(req(None, Some(3)), Some(2), true),
        "ttl_hours",
        "beyond the maximum"
    );
    assert_eq!(
        field(req(Some(Some(n + Duration::hours(3))), None), Some(2), false),
        "expires_at"
    );
    let e = resolve(req(Some(None), None), n, Some(2), false).unwrap_err();
    assert_eq!(e.field, "expires_at");
    assert!(
        e.message.contains("cannot be cleared") && e.message.contains("2 hours"),
        "{e}"
    );
}

#[test]
fn a_new_expiry_time_gets_its_own_notice_and_due_clusters_are_deleted() {
    let n = now();
    let notice = Duration::hours(24);
    let mut c = cluster(ClusterState::Active);
    assert_eq!(action(&c, n, notice), ExpiryAction::Nothing, "no expiry");
    assert_eq!(index_bucket(&c), None);

    assert!(ExpiryChange::Set(n + Duration::hours(30)).apply(&mut c));
    assert_eq!(index_bucket(&c).as_deref(), Some(EXPIRY_BUCKET));
    assert_eq!(
        action(&c, n, notice),
        ExpiryAction::Nothing,
        "not yet in the notice window"
    );
    assert_eq!(action(&c, n + Duration::hours(6), notice), ExpiryAction::Notify);
    c.expiry_notified_for = c.expires_at;
    assert_eq!(
        action(&c, n + Duration::hours(7), notice),
        ExpiryAction::Nothing,
        "told once"
    );

    // Extended: a new notice is due once the new time nears.
    assert!(ExpiryChange::Set(n + Duration::hours(40)).apply(&mut c));
    assert!(
        !ExpiryChange::Set(n + Duration::hours(40)).apply(&mut c),
        "unchanged"
    );
    assert_eq!(action(&c, n + Duration::hours(7), notice), ExpiryAction::Nothing);
    assert_eq!(action(&c, n + Duration::hours(17), notice), ExpiryAction::Notify);
    assert_eq!(action(&c, n + Duration::hours(40), notice), ExpiryAction::Delete);

    for gone in [ClusterState::Deleting, ClusterState::Deleted] {
        let d = c.clone().in_state(gone);
        assert_eq!(action(&d, n + Duration::hours(50), notice), ExpiryAction::Nothing);
        assert_eq!(index_bucket(&d), None, "leaves the index");
    }
    assert!(ExpiryChange::Clear.apply(&mut c));
    assert_eq!(action(&c, n + Duration::hours(50), notice), ExpiryAction::Nothing);
    assert_eq!(index_bucket(&c), None);
}
