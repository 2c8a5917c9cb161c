//! Rollouts in the locks table against moto: the record round-trips with its version, saves are
//! conditional on it, a cluster is claimed by one active rollout (the second is refused naming the first,
//! and claims nothing), an ended rollout gives its claims back, and soaking rollouts are found when due.

use serde_json::json;
use strato_aws::store::Store;
use strato_domain::ids::{ClusterId, TenantId};
use strato_rollout::machine::{Input, Phase, Rollout};
use strato_rollout::store::{Owner, Record, RolloutId, RolloutStore, apply};
use strato_rollout::{Plan, RolloutError};
use strato_testbed::TestEnv;

fn record(clusters: &[ClusterId], plan: serde_json::Value) -> Record {
    let acme: TenantId = "acme".parse().unwrap();
    let plan: Plan = serde_json::from_value(plan).unwrap();
    let members = clusters
        .iter()
        .map(|c| (acme.clone(), c.clone(), "0.1.0".to_owned()))
        .collect();
    Record {
        id: RolloutId::generate(),
        owner: Owner::Tenant { tenant: acme },
        template: "fixture-vpc-sg".into(),
        to_version: "0.2.0".into(),
        created_by: "alice".into(),
        created_at: 1_000,
        rollout: Rollout::new(plan, members).unwrap(),
        version: 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rollouts_round_trip_claim_their_clusters_and_save_conditionally() {
    let env = TestEnv::new().await;
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);
    // More clusters than one transaction takes, so the claims span two.
    let clusters: Vec<ClusterId> = (0..120).map(|_| ClusterId::generate()).collect();
    let mut first = record(&clusters, json!({"mode": "preview"}));
    first.rollout.start();
    store.create(&first).await.unwrap();
    let loaded = store.load(&first.id).await.unwrap().unwrap();
    assert_eq!(loaded, first);
    assert_eq!(
        store.claimed_by(&clusters[119]).await.unwrap(),
        Some(first.id.clone())
    );

    // A second rollout over one of them is refused naming the first; its free cluster stays unclaimed.
    let free = ClusterId::generate();
    let second = record(&[free.clone(), clusters[101].clone()], json!({"mode": "preview"}));
    assert_eq!(
        store.create(&second).await.unwrap_err(),
        RolloutError::Claimed {
            cluster: clusters[101].clone(),
            rollout: first.id.clone()
        }
    );
    assert_eq!(store.claimed_by(&free).await.unwrap(), None);

    // A save on a stale version loses; the fresh one holds and bumps the version.
    let mut stale = loaded.clone();
    let mut fresh = loaded;
    fresh.rollout.step(Input::Pause { by: "bob".into() }, 5).unwrap();
    store.save(&mut fresh).await.unwrap();
    assert_eq!(fresh.version, 1);
    stale.rollout.step(Input::Abort { by: "eve".into() }, 5).unwrap();
    assert_eq!(store.save(&mut stale).await.unwrap_err(), RolloutError::Conflict);
    assert_eq!(store.load(&first.id).await.unwrap().unwrap(), fresh);

    // Aborting (through the retrying apply) gives every claim back: the second rollout may start.
    let (ended, _) = apply(&store, &first.id, Input::Abort { by: "alice".into() }, 9)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ended.rollout.phase, Phase::Aborted { .. }));
    assert_eq!(store.claimed_by(&clusters[101]).await.unwrap(), None);
    store.create(&second).await.unwrap();
    assert_eq!(store.claimed_by(&free).await.unwrap(), Some(second.id.clone()));

    // A soaking apply rollout is due at its wake time; listing holds all three, newest first.
    let mut soaking = record(
        &[ClusterId::generate(), ClusterId::generate()],
        json!({"mode": "apply", "waves": [{"clusters": 1}, {"percent": 100}], "soak_secs": 60}),
    );
    soaking.rollout.phase = Phase::Soaking {
        wave: 0,
        until: 2_000,
    };
    store.create(&soaking).await.unwrap();
    assert!(store.due(1_999).await.unwrap().is_empty());
    assert_eq!(store.due(2_000).await.unwrap(), vec![soaking.id.clone()]);
    let listed: Vec<RolloutId> = store.list().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![soaking.id, second.id, first.id]);
    assert!(store.load(&RolloutId::generate()).await.unwrap().is_none());
}
