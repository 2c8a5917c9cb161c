//! The DynamoDB store against moto: atomic create, quotas, optimistic concurrency, cluster locks with
//! fencing tokens, tenant slots, idempotency records.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use strato_aws::Error;
use strato_aws::aws::CallCounter;
use strato_aws::store::{CreateRejected, IdempotentResponse, LockOutcome, Quotas, Store};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Claim, ClaimLost, ClusterStep, Intake};
use strato_domain::template::Template;
use strato_domain::ts;
use strato_testbed::TestEnv;
use time::Duration;

fn cluster(tenant: &TenantId, name: &str) -> (Cluster, Operation) {
    let now = ts::now();
    let spec = strato_testbed::fixture_spec(name);
    let c = Cluster::new(tenant.clone(), ClusterId::generate(), spec.clone(), now);
    let mut op = Operation::new(tenant.clone(), c.cluster_id.clone(), OperationKind::Create, now);
    op.spec = Some(spec);
    (c, op)
}

async fn store() -> (TestEnv, Store) {
    let env = TestEnv::new().await;
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);
    (env, store)
}

#[tokio::test(flavor = "multi_thread")]
async fn create_is_atomic_and_quota_bound() {
    let (_env, store) = store().await;
    let acme: TenantId = "acme".parse().unwrap();
    let quotas = Quotas {
        max_clusters: 2,
        ..Quotas::default()
    };
    let (c1, op1) = cluster(&acme, "one");
    store.create_cluster(&c1, &op1, &quotas).await.unwrap().unwrap();
    assert_eq!(
        store.get_cluster(&acme, &c1.cluster_id).await.unwrap().unwrap(),
        c1
    );
    assert_eq!(
        store.get_operation(&op1.operation_id).await.unwrap().unwrap(),
        op1
    );
    assert_eq!(
        store
            .find_cluster(&c1.cluster_id)
            .await
            .unwrap()
            .unwrap()
            .tenant_id,
        acme
    );
    assert_eq!(
        store.open_operations("queued").await.unwrap().len(),
        1,
        "findable as not dispatched"
    );

    let (dup, dup_op) = cluster(&acme, "one");
    assert_eq!(
        store.create_cluster(&dup, &dup_op, &quotas).await.unwrap(),
        Err(CreateRejected::NameTaken)
    );
    assert!(
        store.get_cluster(&acme, &dup.cluster_id).await.unwrap().is_none(),
        "nothing half-written"
    );
    assert!(store.get_operation(&dup_op.operation_id).await.unwrap().is_none());

    let other: TenantId = "other".parse().unwrap();
    let (o, o_op) = cluster(&other, "one");
    store
        .create_cluster(&o, &o_op, &quotas)
        .await
        .unwrap()
        .expect("names are per tenant");

    let (c2, op2) = cluster(&acme, "two");
    store.create_cluster(&c2, &op2, &quotas).await.unwrap().unwrap();
    let (c3, op3) = cluster(&acme, "three");
    assert_eq!(
        store.create_cluster(&c3, &op3, &quotas).await.unwrap(),
        Err(CreateRejected::ClusterQuota { max: 2 })
    );

    let (page, next) = store.list_clusters(&acme, None, 1, None).await.unwrap();
    assert_eq!(page.len(), 1);
    let (rest, _) = store.list_clusters(&acme, None, 10, next.as_ref()).await.unwrap();
    let mut ids: Vec<_> = page.iter().chain(&rest).map(|c| c.cluster_id.clone()).collect();
    ids.sort();
    let mut want = vec![c1.cluster_id.clone(), c2.cluster_id.clone()];
    want.sort();
    assert_eq!(ids, want);

    // Deleting frees the name and the quota slot.
    store.release_cluster_name(&c1).await.unwrap();
    store.release_cluster_name(&c1).await.unwrap();
    let (again, again_op) = cluster(&acme, "one");
    store
        .create_cluster(&again, &again_op, &quotas)
        .await
        .unwrap()
        .expect("name and slot are free again");
}

#[tokio::test(flavor = "multi_thread")]
async fn optimistic_concurrency_on_clusters_and_operations() {
    let (_env, store) = store().await;
    let acme: TenantId = "acme".parse().unwrap();
    let (c, op) = cluster(&acme, "occ");
    store
        .create_cluster(&c, &op, &Quotas::default())
        .await
        .unwrap()
        .unwrap();
    let mut a = store.get_cluster(&acme, &c.cluster_id).await.unwrap().unwrap();
    let mut b = a.clone();
    a = a.in_state(ClusterState::Provisioning);
    store.save_cluster(&mut a).await.unwrap();
    assert_eq!(a.version, 1);
    b = b.in_state(ClusterState::Failed);
    assert!(matches!(
        store.save_cluster(&mut b).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(b.version, 0, "a lost write leaves the caller's copy as it was");
    let stored = store.get_cluster(&acme, &c.cluster_id).await.unwrap().unwrap();
    assert_eq!(stored.state(), ClusterState::Provisioning);
    assert!(stored.next_drift_check_at.is_none());

    let mut o1 = store.get_operation(&op.operation_id).await.unwrap().unwrap();
    let mut o2 = o1.clone();
    o1.status = OperationStatus::Dispatched;
    store.save_operation(&mut o1, false).await.unwrap();
    o2.status = OperationStatus::Cancelled;
    assert!(matches!(
        store.save_operation(&mut o2, false).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        o2.ended_at, None,
        "a lost write leaves the caller's copy as it was"
    );
    assert_eq!(store.open_operations("dispatched").await.unwrap().len(), 1);
    o1.status = OperationStatus::Succeeded;
    store.save_operation(&mut o1, false).await.unwrap();
    assert!(
        store.open_operations("dispatched").await.unwrap().is_empty(),
        "terminal leaves the open index"
    );
    // The write that ends it records when (the timeline's end); later writes move `updated_at` only.
    let ended = store.get_operation(&op.operation_id).await.unwrap().unwrap();
    assert_eq!(ended.ended_at, Some(ended.updated_at));
    o1.notes.push("later".into());
    store.save_operation(&mut o1, true).await.unwrap();
    let later = store.get_operation(&op.operation_id).await.unwrap().unwrap();
    assert_eq!(later.ended_at, ended.ended_at);
    assert!(later.updated_at > ended.updated_at);
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_lock_fencing_and_leases() {
    let (_env, store) = store().await;
    let c = ClusterId::generate();
    let (a, b) = (OperationId::generate(), OperationId::generate());
    let now = ts::now();
    let LockOutcome::Acquired { fencing_token: t1 } = store
        .acquire_cluster_lock(&c, &a, Duration::hours(1), now)
        .await
        .unwrap()
    else {
        panic!("free lock must be acquired")
    };
    assert_eq!(
        store
            .acquire_cluster_lock(&c, &a, Duration::hours(1), now)
            .await
            .unwrap(),
        LockOutcome::Acquired { fencing_token: t1 },
        "re-acquiring as owner (redelivery) keeps the token"
    );
    assert_eq!(
        store
            .acquire_cluster_lock(&c, &b, Duration::hours(1), now)
            .await
            .unwrap(),
        LockOutcome::Held { owner: a.clone() }
    );
    assert!(
        !store.release_cluster_lock(&c, &b, t1).await.unwrap(),
        "only the owner releases"
    );
    assert!(
        !store.release_cluster_lock(&c, &a, t1 + 1).await.unwrap(),
        "only with its token"
    );
    assert!(store.release_cluster_lock(&c, &a, t1).await.unwrap());
    assert!(
        !store.release_cluster_lock(&c, &a, t1).await.unwrap(),
        "releasing twice is a no-op"
    );
    let LockOutcome::Acquired { fencing_token: t2 } = store
        .acquire_cluster_lock(&c, &b, Duration::seconds(1), now)
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(t2 > t1, "tokens grow");
    // An expired lease can be taken over, with a newer token; the old owner can no longer release it.
    let later = now + Duration::seconds(5);
    let LockOutcome::Acquired { fencing_token: t3 } = store
        .acquire_cluster_lock(&c, &a, Duration::hours(1), later)
        .await
        .unwrap()
    else {
        panic!("expired lease must be taken over")
    };
    assert!(t3 > t2);
    assert!(!store.release_cluster_lock(&c, &b, t2).await.unwrap());
    assert_eq!(store.cluster_lock(&c).await.unwrap(), Some((a, t3)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_synthetic_lock_is_forgotten_only_when_nobody_else_holds_it() {
    let (env, store) = store().await;
    let c = ClusterId::generate();
    let (a, b) = (OperationId::generate(), OperationId::generate());
    let now = ts::now();
    let lock_item = || async {
        env.aws
            .dynamodb
            .get_item()
            .table_name(env.names.table("locks"))
            .key(
                "lock_id",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("cluster#{c}")),
            )
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    };
    let LockOutcome::Acquired { fencing_token } = store
        .acquire_cluster_lock(&c, &a, Duration::hours(1), now)
        .await
        .unwrap()
    else {
        panic!("free lock must be acquired")
    };
    assert!(
        !store.forget_cluster_lock(&c, &b).await.unwrap(),
        "another operation's lock is not deleted"
    );
    assert!(lock_item().await.is_some());
    assert!(store.release_cluster_lock(&c, &a, fencing_token).await.unwrap());
    assert!(
        lock_item().await.is_some(),
        "a release keeps the item (its token)"
    );
    assert!(store.forget_cluster_lock(&c, &a).await.unwrap());
    assert!(lock_item().await.is_none(), "forgotten: nothing is left");
    assert!(
        store.forget_cluster_lock(&c, &a).await.unwrap(),
        "forgetting twice is a no-op"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tenant_slots_are_bounded_and_idempotent() {
    let (_env, store) = store().await;
    let t: TenantId = "acme".parse().unwrap();
    let (a, b) = (OperationId::generate(), OperationId::generate());
    assert!(store.acquire_tenant_slot(&t, &a, 1).await.unwrap());
    assert!(
        store.acquire_tenant_slot(&t, &a, 1).await.unwrap(),
        "same op again is fine"
    );
    assert!(!store.acquire_tenant_slot(&t, &b, 1).await.unwrap());
    store.release_tenant_slot(&t, &a).await.unwrap();
    store.release_tenant_slot(&t, &a).await.unwrap();
    assert!(store.acquire_tenant_slot(&t, &b, 1).await.unwrap());
    assert_eq!(store.tenant_slots(&t).await.unwrap(), vec![b.to_string()]);

    // The sweeper's view: every tenant's holders, and nothing else of the locks table (cluster locks).
    let other: TenantId = "globex".parse().unwrap();
    assert!(store.acquire_tenant_slot(&other, &a, 2).await.unwrap());
    let cluster = ClusterId::generate();
    store
        .acquire_cluster_lock(&cluster, &a, Duration::minutes(5), ts::now())
        .await
        .unwrap();
    let mut all = store.all_tenant_slots().await.unwrap();
    all.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    assert_eq!(all, vec![(t, vec![b]), (other, vec![a])]);
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_records_keep_the_first_answer_for_24h() {
    let (_env, store) = store().await;
    let t: TenantId = "acme".parse().unwrap();
    let now = ts::now();
    let first = IdempotentResponse {
        request_hash: "h1".into(),
        status: 202,
        body: "{\"a\":1}".into(),
    };
    assert_eq!(store.idempotent_put(&t, "k", &first, now).await.unwrap(), None);
    let second = IdempotentResponse {
        request_hash: "h1".into(),
        status: 202,
        body: "{\"a\":2}".into(),
    };
    assert_eq!(
        store.idempotent_put(&t, "k", &second, now).await.unwrap(),
        Some(first.clone()),
        "first answer wins"
    );
    assert_eq!(
        store
            .idempotent_get(&t, "k", now + Duration::hours(23))
            .await
            .unwrap(),
        Some(first)
    );
    assert_eq!(
        store
            .idempotent_get(&t, "k", now + Duration::hours(25))
            .await
            .unwrap(),
        None,
        "expired even if TTL has not run"
    );
    assert_eq!(
        store
            .idempotent_get(&"other".parse().unwrap(), "k", now)
            .await
            .unwrap(),
        None,
        "keys are per tenant"
    );
}

/// The dispatcher's one-write claim on DynamoDB: each failed condition writes nothing and says which it
/// was; when all hold, lock (with the caller's token), slot, operation and cluster are written together.
#[tokio::test(flavor = "multi_thread")]
async fn the_one_write_claim_takes_lock_slot_claim_and_cluster_or_nothing() {
    let (env, store) = store().await;
    let t: TenantId = "acme".parse().unwrap();
    let one = Quotas {
        max_concurrent_operations: 1,
        ..Quotas::default()
    };
    store.set_quotas(&t, &one).await.unwrap();
    let (c, op) = cluster(&t, "prod");
    store.create_cluster(&c, &op, &one).await.unwrap().unwrap();
    let op = store.get_operation(&op.operation_id).await.unwrap().unwrap();
    let step = ClusterStep::Move {
        to: ClusterState::Provisioning,
        clear_error: true,
    };
    let claim = |token, cluster| Claim {
        token,
        lease: Duration::hours(1),
        now: ts::now(),
        cluster,
    };
    let claimed = |token| {
        let mut o = op.clone();
        o.fencing_token = Some(token);
        o.status = OperationStatus::Dispatched;
        o
    };
    let untouched = || async {
        assert_eq!(store.get_operation(&op.operation_id).await.unwrap().unwrap(), op);
        let stored = store.get_cluster(&t, &c.cluster_id).await.unwrap().unwrap();
        assert_eq!((stored.state(), stored.version), (ClusterState::Pending, 0));
        assert!(
            !store
                .tenant_slots(&t)
                .await
                .unwrap()
                .contains(&op.operation_id.to_string())
        );
    };

    // Lock held by another operation.
    let other = OperationId::generate();
    let LockOutcome::Acquired { fencing_token: held } = store
        .acquire_cluster_lock(&c.cluster_id, &other, Duration::hours(1), ts::now())
        .await
        .unwrap()
    else {
        panic!("free lock")
    };
    let mut o = claimed(5_000);
    let lost = store.claim_operation(&mut o, &claim(5_000, step)).await.unwrap();
    assert_eq!(lost, Err(ClaimLost::Lock));
    assert_eq!(o, claimed(5_000), "the caller's copy is left as given");
    untouched().await;

    // Free, but the token is not above the stored one.
    assert!(
        store
            .release_cluster_lock(&c.cluster_id, &other, held)
            .await
            .unwrap()
    );
    let lost = store
        .claim_operation(&mut claimed(held), &claim(held, step))
        .await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Lock));
    untouched().await;

    // The tenant's only slot is taken (the limit set_quotas copied onto the slot item).
    assert!(store.acquire_tenant_slot(&t, &other, 1).await.unwrap());
    let lost = store
        .claim_operation(&mut claimed(5_000), &claim(5_000, step))
        .await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Slot));
    untouched().await;
    store.release_tenant_slot(&t, &other).await.unwrap();

    // The operation changed since it was read.
    let mut stale = claimed(5_000);
    stale.updated_at -= Duration::seconds(1);
    let lost = store.claim_operation(&mut stale, &claim(5_000, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Operation));
    untouched().await;

    // The cluster is not in a state the step starts from.
    let wrong = ClusterStep::Move {
        to: ClusterState::Updating,
        clear_error: false,
    };
    let lost = store
        .claim_operation(&mut claimed(5_000), &claim(5_000, wrong))
        .await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Cluster));
    untouched().await;

    // Everything holds.
    let mut o = claimed(5_000);
    assert_eq!(
        store.claim_operation(&mut o, &claim(5_000, step)).await.unwrap(),
        Ok(())
    );
    assert_eq!(store.get_operation(&op.operation_id).await.unwrap().unwrap(), o);
    assert_eq!(
        store.cluster_lock(&c.cluster_id).await.unwrap(),
        Some((op.operation_id.clone(), 5_000))
    );
    assert_eq!(
        store.tenant_slots(&t).await.unwrap(),
        vec![op.operation_id.to_string()]
    );
    let moved = store.get_cluster(&t, &c.cluster_id).await.unwrap().unwrap();
    assert_eq!((moved.state(), moved.version), (ClusterState::Provisioning, 1));

    // A tenant whose concurrency quota was written without its copy on the slot item (before the copy
    // existed): the claim cannot tell its limit, so it is refused and the dispatcher claims step by step.
    let legacy: TenantId = "globex".parse().unwrap();
    env.aws
        .dynamodb
        .update_item()
        .table_name(env.names.table("tenants"))
        .key("tenant_id", AttributeValue::S(legacy.to_string()))
        .update_expression("SET max_concurrent_operations = :c")
        .expression_attribute_values(":c", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    let (lc, lop) = cluster(&legacy, "prod");
    store.create_cluster(&lc, &lop, &one).await.unwrap().unwrap();
    let mut lop = store.get_operation(&lop.operation_id).await.unwrap().unwrap();
    lop.status = OperationStatus::Dispatched;
    let lost = store.claim_operation(&mut lop, &claim(5_000, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Slot));

    // The same for a quota set through `set_quotas` and then edited on the tenant item by hand: the copy
    // no longer matches, so it is not trusted.
    let edited: TenantId = "initech".parse().unwrap();
    store.set_quotas(&edited, &Quotas::default()).await.unwrap();
    let (ec, eop) = cluster(&edited, "prod");
    store.create_cluster(&ec, &eop, &one).await.unwrap().unwrap();
    let mut eop = store.get_operation(&eop.operation_id).await.unwrap().unwrap();
    eop.status = OperationStatus::Dispatched;
    env.aws
        .dynamodb
        .update_item()
        .table_name(env.names.table("tenants"))
        .key("tenant_id", AttributeValue::S(edited.to_string()))
        .update_expression("SET max_concurrent_operations = :c")
        .expression_attribute_values(":c", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    let lost = store.claim_operation(&mut eop, &claim(5_000, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Slot));
    store.set_quotas(&edited, &one).await.unwrap();
    let took = store.claim_operation(&mut eop, &claim(5_000, step)).await;
    assert_eq!(took.unwrap(), Ok(()), "set_quotas copied the quota again");
}

/// Template versions are immutable: a process reads each published one once (the api's create path then
/// makes no GetItem for it); a version not published yet is read again each time.
#[tokio::test(flavor = "multi_thread")]
async fn a_published_template_version_is_read_once_per_process() {
    let env = TestEnv::new().await;
    let counter = CallCounter::default();
    let store = Store::new(env.aws.counted(&counter).dynamodb.clone(), &env.names);
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/tests/fixtures/api-test/template-1.0.0.toml"
    );
    let t = Template::from_toml(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let (name, version) = (t.name().to_owned(), t.version().to_owned());
    assert!(store.get_template(&name, &version).await.unwrap().is_none());
    store
        .put_template(&t.manifest, &"0".repeat(64), "templates/t.tar.gz")
        .await
        .unwrap();
    counter.reset();
    for _ in 0..3 {
        let got = store
            .get_template(&name, &version)
            .await
            .unwrap()
            .expect("published");
        assert_eq!(got.template.version(), version);
    }
    assert_eq!(counter.snapshot().get("DynamoDB.GetItem"), Some(&1));
    assert!(store.get_template(&name, "9.9.9").await.unwrap().is_none());
    assert!(store.get_template(&name, "9.9.9").await.unwrap().is_none());
    assert_eq!(
        counter.snapshot().get("DynamoDB.GetItem"),
        Some(&3),
        "absent versions are not cached"
    );
}

/// Through the port (as the api records a create), the tenant's quotas are the transaction's own
/// conditions against the tenant item: one call, no read of the tenant first, and still refused at the
/// quota (read only then, to name it).
#[tokio::test(flavor = "multi_thread")]
async fn the_create_transaction_checks_the_stored_quotas_itself() {
    let env = TestEnv::new().await;
    let counter = CallCounter::default();
    let store = Store::new(env.aws.counted(&counter).dynamodb.clone(), &env.names);
    let t: TenantId = "acme".parse().unwrap();
    let (c, op) = cluster(&t, "first");
    counter.reset();
    assert_eq!(
        Intake::create_cluster(&store, &c, &op, None).await.unwrap(),
        Ok(())
    );
    assert_eq!(
        counter.snapshot(),
        BTreeMap::from([("DynamoDB.TransactWriteItems".to_owned(), 1)]),
        "the platform defaults apply without a read"
    );
    let q = Quotas {
        max_clusters: 1,
        ..Quotas::default()
    };
    store.set_quotas(&t, &q).await.unwrap();
    let (c2, op2) = cluster(&t, "second");
    counter.reset();
    let refused = Intake::create_cluster(&store, &c2, &op2, None).await.unwrap();
    assert_eq!(refused, Err(CreateRejected::ClusterQuota { max: 1 }));
    assert!(store.get_cluster(&t, &c2.cluster_id).await.unwrap().is_none());

    let q = Quotas {
        max_clusters: 5,
        max_open_operations: 1,
        ..Quotas::default()
    };
    store.set_quotas(&t, &q).await.unwrap();
    let refused = Intake::create_cluster(&store, &c2, &op2, None).await.unwrap();
    assert_eq!(refused, Err(CreateRejected::OperationQuota { max: 1 }));
    let mut more = Operation::new(t.clone(), c.cluster_id.clone(), OperationKind::Plan, ts::now());
    more.spec = op.spec.clone();
    let refused = Intake::add_operation(&store, &more).await.unwrap();
    assert_eq!(refused, Err(CreateRejected::OperationQuota { max: 1 }));
}
