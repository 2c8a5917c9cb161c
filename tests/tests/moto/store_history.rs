//! A cluster's history in the DynamoDB store against moto: the open operations come from a sparse index
//! (what a decision reads costs what is open, not the whole history), the history pages newest first, and
//! a finished operation carries its TTL so the table forgets it after the retention.

use aws_sdk_dynamodb::types::AttributeValue;
use strato_aws::store::{Quotas, Store};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Cluster, ClusterSpec, Operation, OperationKind, OperationStatus};
use strato_domain::ports::Operations;
use strato_testbed::TestEnv;
use time::Duration;

fn spec() -> ClusterSpec {
    strato_testbed::fixture_spec("history")
}

async fn raw(env: &TestEnv, op: &Operation) -> std::collections::HashMap<String, AttributeValue> {
    env.aws
        .dynamodb
        .get_item()
        .table_name(env.names.table("operations"))
        .key("operation_id", AttributeValue::S(op.operation_id.to_string()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn decisions_read_only_what_is_open_and_the_history_pages_and_expires() {
    let env = TestEnv::new().await;
    let store = Store::new(env.aws.dynamodb.clone(), &env.names).with_operation_retention(7);
    let acme: TenantId = "acme".parse().unwrap();
    let t0 = strato_domain::ts::now();
    let c = Cluster::new(acme.clone(), ClusterId::generate(), spec(), t0);
    let mut create = Operation::new(acme.clone(), c.cluster_id.clone(), OperationKind::Create, t0);
    create.spec = Some(spec());
    store
        .create_cluster(&c, &create, &Quotas::default())
        .await
        .unwrap()
        .unwrap();

    // A long-lived cluster: the create and eight drift checks finished, two operations still open.
    let mut ops = vec![create];
    for i in 1..=10 {
        let kind = if i <= 8 {
            OperationKind::DriftCheck
        } else {
            OperationKind::Update
        };
        let op = Operation::new(
            acme.clone(),
            c.cluster_id.clone(),
            kind,
            t0 + Duration::seconds(i),
        );
        store
            .add_operation(&op, &Quotas::default())
            .await
            .unwrap()
            .unwrap();
        ops.push(op);
    }
    for op in ops.iter_mut().take(9) {
        op.status = OperationStatus::Succeeded;
        store.save_operation(op, false).await.unwrap();
    }

    // What a decision reads: the two open ones, oldest first — not the eleven.
    let open = store.open_cluster_operations(&c.cluster_id).await.unwrap();
    let ids: Vec<_> = open.iter().map(|o| o.operation_id.clone()).collect();
    assert_eq!(
        ids,
        vec![ops[9].operation_id.clone(), ops[10].operation_id.clone()]
    );

    // The history, newest first, in pages of four that join up without a gap or a repeat.
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = store
            .operations_page(&c.cluster_id, 4, after.as_ref())
            .await
            .unwrap();
        assert!(page.operations.len() <= 4);
        seen.extend(page.operations.iter().map(|o| o.operation_id.clone()));
        pages += 1;
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
        assert!(pages < 10, "the pages never end");
    }
    let newest_first: Vec<_> = ops.iter().rev().map(|o| o.operation_id.clone()).collect();
    assert_eq!(seen, newest_first);
    let recent = store.recent_cluster_operations(&c.cluster_id, 3).await.unwrap();
    assert_eq!(recent.len(), 3);
    assert_eq!(recent[0].operation_id, ops[10].operation_id);

    // A finished operation carries its TTL (ended + the retention); an open one carries none, and the
    // open index's key instead.
    let done = raw(&env, &ops[1]).await;
    let ended = ops[1].ended_at.expect("ended when it became terminal");
    let until: i64 = done["retain_until"].as_n().unwrap().parse().unwrap();
    assert_eq!(until, (ended + Duration::days(7)).unix_timestamp());
    assert!(!done.contains_key("open_cluster"));
    let running = raw(&env, &ops[10]).await;
    assert!(!running.contains_key("retain_until"));
    assert_eq!(running["open_cluster"].as_s().unwrap(), c.cluster_id.as_str());
}
