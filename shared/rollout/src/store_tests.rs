//! The store's decisions on the in-memory fake: claims (one active rollout per cluster), conditional saves
//! retried on conflict, duplicate and stale inputs writing nothing, wake-ups found when due, the member cap.

use serde_json::json;
use strato_domain::ids::{ClusterId, TenantId};

use crate::RolloutError;
use crate::fake::FakeRollouts;
use crate::machine::{Effect, Input, MemberStatus, Phase, PlanFindings, Rollout};
use crate::spec::Plan;
use crate::store::{MAX_MEMBERS, Owner, Record, RolloutId, RolloutStore, apply};

fn tenant() -> TenantId {
    "acme".parse().unwrap()
}

fn record(clusters: &[ClusterId], plan: serde_json::Value) -> Record {
    let plan: Plan = serde_json::from_value(plan).unwrap();
    let members = clusters
        .iter()
        .map(|c| (tenant(), c.clone(), "1.0.0".to_owned()))
        .collect();
    Record {
        id: RolloutId::generate(),
        owner: Owner::Tenant { tenant: tenant() },
        template: "eks".into(),
        to_version: "1.1.0".into(),
        created_by: "alice".into(),
        created_at: 1_000,
        rollout: Rollout::new(plan, members).unwrap(),
        version: 0,
    }
}

fn preview() -> serde_json::Value {
    json!({"mode": "preview"})
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

#[test]
fn ids_round_trip_and_junk_is_refused() {
    let id = RolloutId::generate();
    assert_eq!(id.as_str().parse::<RolloutId>().unwrap(), id);
    assert!(id.as_str().starts_with("ro-") && id.as_str().len() == 35);
    for bad in [
        "",
        "ro-",
        "op-0123456789abcdef0123456789abcdef",
        "ro-0123456789ABCDEF0123456789abcdef",
    ] {
        assert!(
            matches!(bad.parse::<RolloutId>(), Err(RolloutError::NotFound(_))),
            "{bad}"
        );
    }
}

#[test]
fn a_cluster_is_in_one_active_rollout_until_it_ends() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let (a, b, c) = (
            ClusterId::generate(),
            ClusterId::generate(),
            ClusterId::generate(),
        );
        let first = record(&[a.clone(), b.clone()], preview());
        store.create(&first).await.unwrap();
        assert_eq!(store.claimed_by(&b).await.unwrap(), Some(first.id.clone()));
        assert_eq!(store.claimed_by(&c).await.unwrap(), None);

        let second = record(&[c.clone(), b.clone()], preview());
        let err = store.create(&second).await.unwrap_err();
        assert_eq!(
            err,
            RolloutError::Claimed {
                cluster: b.clone(),
                rollout: first.id.clone()
            }
        );
        assert!(err.to_string().contains(first.id.as_str()), "{err}");
        // All or nothing: the free cluster was not claimed either.
        assert_eq!(store.claimed_by(&c).await.unwrap(), None);

        apply(&store, &first.id, Input::Abort { by: "alice".into() }, 2_000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(store.claimed_by(&b).await.unwrap(), None);
        store.create(&second).await.unwrap();
        assert_eq!(store.claimed_by(&b).await.unwrap(), Some(second.id));
    });
}

#[test]
fn a_lost_save_is_retried_on_a_fresh_read_and_gives_up_after_the_attempts() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let c = ClusterId::generate();
        let mut r = record(std::slice::from_ref(&c), preview());
        r.rollout.start();
        store.create(&r).await.unwrap();

        store.conflict_next(2);
        let (saved, effects) = apply(&store, &r.id, Input::Pause { by: "bob".into() }, 10)
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(effects.as_slice(), [Effect::Paused(_)]), "{effects:?}");
        assert!(matches!(saved.rollout.phase, Phase::Paused { .. }));
        assert_eq!(store.load(&r.id).await.unwrap().unwrap(), saved);

        store.conflict_next(crate::store::ATTEMPTS);
        let err = apply(&store, &r.id, Input::Resume { skip_failed: false }, 20).await;
        assert_eq!(err.unwrap_err(), RolloutError::Conflict);
        assert!(matches!(
            store.load(&r.id).await.unwrap().unwrap().rollout.phase,
            Phase::Paused { .. }
        ));
    });
}

#[test]
fn a_duplicate_or_stale_outcome_writes_nothing() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let c = ClusterId::generate();
        let mut r = record(std::slice::from_ref(&c), preview());
        let effects = r.rollout.start();
        let Some(Effect::Plan { operation, .. }) = effects.first().cloned() else {
            panic!("{effects:?}")
        };
        store.create(&r).await.unwrap();
        let planned = Input::Planned {
            cluster: c.clone(),
            operation: operation.clone(),
            findings: PlanFindings::default(),
        };
        let (first, _) = apply(&store, &r.id, planned.clone(), 5).await.unwrap().unwrap();
        assert_eq!(first.rollout.phase, Phase::Completed);
        assert_eq!(first.version, 1);
        let (again, effects) = apply(&store, &r.id, planned, 6).await.unwrap().unwrap();
        assert!(effects.is_empty());
        assert_eq!(again.version, 1, "a duplicate is not saved");
        // A stale operation of a member the rollout no longer waits for: nothing either.
        let stale = Input::Failed {
            cluster: c.clone(),
            operation: strato_domain::ids::OperationId::generate(),
            reason: "x".into(),
        };
        let (after, effects) = apply(&store, &r.id, stale, 7).await.unwrap().unwrap();
        assert!(effects.is_empty());
        assert_eq!(after.version, 1);
        assert!(matches!(
            store.load(&r.id).await.unwrap().unwrap().rollout.members[0].status,
            MemberStatus::Planned { .. }
        ));
        assert!(
            apply(&store, &RolloutId::generate(), Input::Tick, 8)
                .await
                .unwrap()
                .is_none()
        );
    });
}

#[test]
fn a_soaking_rollout_is_due_at_its_wake_time() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let clusters: Vec<_> = (0..2).map(|_| ClusterId::generate()).collect();
        let mut r = record(
            &clusters,
            json!({"mode": "apply", "waves": [{"clusters": 1}, {"percent": 100}], "soak_secs": 600}),
        );
        r.rollout.phase = Phase::Soaking {
            wave: 0,
            until: 1_600,
        };
        store.create(&r).await.unwrap();
        assert!(store.due(1_599).await.unwrap().is_empty());
        assert_eq!(store.due(1_600).await.unwrap(), vec![r.id.clone()]);
        assert_eq!(r.wake_at(), Some(1_600));
    });
}

#[test]
fn more_members_than_the_cap_are_refused_naming_the_cap() {
    let plan: Plan = serde_json::from_value(preview()).unwrap();
    let members = (0..=MAX_MEMBERS)
        .map(|_| (tenant(), ClusterId::generate(), "1.0.0".to_owned()))
        .collect();
    let err = Rollout::new(plan, members).unwrap_err();
    assert_eq!(
        err,
        RolloutError::TooMany {
            found: MAX_MEMBERS + 1,
            max: MAX_MEMBERS
        }
    );
}

#[test]
fn owners_see_only_their_own() {
    let acme = Owner::Tenant { tenant: tenant() };
    let other: TenantId = "globex".parse().unwrap();
    assert!(acme.visible_to(Some(&tenant())));
    assert!(!acme.visible_to(Some(&other)));
    assert!(acme.visible_to(None));
    assert!(!Owner::Platform.visible_to(Some(&tenant())));
    assert!(Owner::Platform.visible_to(None));
}
