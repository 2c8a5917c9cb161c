//! `POST /v1/estimates` and a create's `target` account, against moto: validation as a create does it
//! (problem+json naming each field), what is written (an operation, no cluster), idempotency, tenant
//! isolation, and the target's external id issued by Strato (never chosen by the caller).

use crate::common;

use common::{Api, Req, SUBJECT, TENANT};
use lambda_http::http::StatusCode;
use serde_json::{Value, json};
use strato_domain::ids::{OperationId, TenantId};
use strato_domain::model::{OperationKind, OperationStatus};

fn tenant(t: &str) -> TenantId {
    t.parse().unwrap()
}

fn estimate_req(body: &Value) -> Req {
    Req::load("create-estimate").body(body)
}

/// The tenant's open-operation counter, as the quota sees it.
async fn open_operations(api: &Api, t: &str) -> i64 {
    let out = api
        .env
        .aws
        .dynamodb
        .get_item()
        .table_name(api.env.names.table("tenants"))
        .key(
            "tenant_id",
            aws_sdk_dynamodb::types::AttributeValue::S(t.to_owned()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    out.item
        .and_then(|i| i.get("open_operations").and_then(|v| v.as_n().ok()).cloned())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_estimate_is_validated_like_a_create_and_writes_only_its_operation() {
    let api = Api::new().await;
    let base = Req::load("create-estimate").body_value();

    // Every problem at once, each naming its field, as a create reports them; nothing is written.
    let mut bad = base.clone();
    bad["variables"]["node_count"] = json!(99);
    bad["variables"]["ghost"] = json!(1);
    bad["region"] = json!("mars-1");
    bad["name"] = json!("Bad_Name");
    bad["colour"] = json!("blue");
    let r = api.call(estimate_req(&bad)).await;
    let p = r.problem(422);
    assert!(p["type"].as_str().unwrap().ends_with(":validation"), "{}", r.text);
    let mut fields = r.fields();
    fields.sort();
    assert_eq!(
        fields,
        [
            "colour",
            "name",
            "region",
            "variables.ghost",
            "variables.node_count"
        ],
        "{}",
        r.text
    );
    r.assert_says("variables.node_count", "allowed", "20");
    let mut missing = base.clone();
    missing.as_object_mut().unwrap().remove("template");
    missing["variables"]
        .as_object_mut()
        .unwrap()
        .remove("owner_email");
    let r = api.call(estimate_req(&missing)).await;
    r.problem(422);
    assert_eq!(r.fields(), ["template"], "{}", r.text);
    let mut unknown = base.clone();
    unknown["template"]["version"] = json!("9.9.9");
    let r = api.call(estimate_req(&unknown)).await;
    r.problem(422);
    assert_eq!(r.fields(), ["template"], "{}", r.text);
    r.assert_says("template", "allowed", "1.1.0");
    let r = api.call(estimate_req(&json!([1]))).await;
    r.problem(400);
    let mut required = base.clone();
    required["variables"]
        .as_object_mut()
        .unwrap()
        .remove("owner_email");
    let r = api.call(estimate_req(&required)).await;
    r.problem(422);
    assert_eq!(r.fields(), ["variables.owner_email"], "{}", r.text);
    assert!(api.jobs().await.is_empty(), "a refused estimate queues nothing");
    assert!(api.ctx.store.open_operations("queued").await.unwrap().is_empty());
    assert_eq!(open_operations(&api, TENANT).await, 0);

    // A valid spec (no name needed): 202 with the operation, which names no cluster.
    let r = api.call(Req::load("create-estimate")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/json");
    let op = &r.body["operation"];
    let oid = op["id"].as_str().unwrap();
    assert_eq!(r.headers["location"], format!("/v1/operations/{oid}"));
    assert_eq!(op["kind"], "estimate");
    assert_eq!(op["status"], "queued");
    assert_eq!(op["cluster_id"], Value::Null);
    assert_eq!(op["estimate"], Value::Null, "not yet planned");
    assert_eq!(op["requested_by"], SUBJECT);
    assert_eq!(op["spec"]["name"], "estimate");
    assert_eq!(op["spec"]["variables"]["node_count"], 3);
    assert!(r.body.get("cluster").is_none(), "{}", r.text);

    let stored = api
        .ctx
        .store
        .get_operation(&oid.parse::<OperationId>().unwrap())
        .await
        .unwrap()
        .expect("operation stored");
    assert_eq!(stored.kind, OperationKind::Estimate);
    assert_eq!(stored.status, OperationStatus::Queued);
    assert_eq!(stored.tenant_id, tenant(TENANT));
    let spec = stored.spec.as_ref().expect("the spec to plan");
    assert_eq!(spec.variables["owner_email"], "ops@acme.example");
    assert_eq!(spec.template.version, "1.0.0");
    // Its cluster id is synthetic: no cluster is written under it, nor listed, nor is a name reserved.
    assert!(
        api.ctx
            .store
            .get_cluster(&tenant(TENANT), &stored.cluster_id)
            .await
            .unwrap()
            .is_none()
    );
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(list.body["clusters"], json!([]), "{}", list.text);
    assert_eq!(
        open_operations(&api, TENANT).await,
        1,
        "counts as an open operation"
    );

    let jobs = api.jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].operation_id.as_str(), oid);
    assert_eq!(jobs[0].kind, OperationKind::Estimate);
    assert_eq!(jobs[0].cluster_id, stored.cluster_id);

    // Read back by its owner; another tenant gets 404 for it.
    let get = |t: &str| {
        Req::load("get-operation")
            .path(&format!("/v1/operations/{oid}"))
            .tenant(t)
    };
    let mine = api.call(get(TENANT)).await;
    assert_eq!(mine.status, StatusCode::OK, "{}", mine.text);
    assert_eq!(mine.body["kind"], "estimate");
    assert_eq!(mine.body["cluster_id"], Value::Null);
    api.call(get("globex")).await.problem(404);

    // A queued estimate can be cancelled; the operation closes and the open count drops.
    let c = api
        .call(Req::load("cancel-operation").path(&format!("/v1/operations/{oid}/cancel")))
        .await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.text);
    assert_eq!(c.body["status"], "cancelled");
    assert_eq!(open_operations(&api, TENANT).await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_estimate_with_an_idempotency_key_is_queued_once() {
    let api = Api::new().await;
    let key = "est-2a1f";
    let (first, again) = api.twice_with_key(|| Req::load("create-estimate"), key).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.text);
    assert_eq!((again.status, &again.text), (first.status, &first.text));
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(api.jobs().await.len(), 1, "one operation, one job");
    let mut other = Req::load("create-estimate").body_value();
    other["variables"]["node_count"] = json!(4);
    let r = api
        .call(estimate_req(&other).header("idempotency-key", key))
        .await;
    r.assert_problem(422, "idempotency-key-reused");
    // Without a key, the same body is a second estimate.
    let second = api.call(Req::load("create-estimate")).await;
    assert_eq!(second.status, StatusCode::ACCEPTED, "{}", second.text);
    assert_ne!(second.body["operation"]["id"], first.body["operation"]["id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_account_is_validated_stored_and_its_external_id_issued_by_strato() {
    let api = Api::new().await;
    let r = api.call(Req::load("create-cluster-target")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let shown = &r.body["cluster"]["target"];
    assert_eq!(
        *shown,
        json!({"provider": "aws", "role_arn": "arn:aws:iam::210987654321:role/strato-deployer",
            "auth": "assume_role", "state_bucket": "acme-strato-state", "lock_table": null,
            "region": "eu-west-1"})
    );
    assert_eq!(r.body["operation"]["spec"]["target"], *shown);
    let cid = r.body["cluster"]["id"].as_str().unwrap();
    let oid = r.body["operation"]["id"].as_str().unwrap();
    let c = api.stored_cluster(&cid.parse().unwrap()).await;
    let t = c
        .spec
        .target
        .as_ref()
        .and_then(|t| t.aws())
        .expect("target stored on the cluster");
    assert_eq!(t.state_bucket.as_deref(), Some("acme-strato-state"));
    let op = api
        .ctx
        .store
        .get_operation(&oid.parse::<OperationId>().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        op.spec
            .as_ref()
            .and_then(|s| s.target.as_ref())
            .and_then(|t| t.aws()),
        Some(t)
    );

    // The tenant's external id: issued by Strato on first read, the same on every read, at least 32
    // characters, with the trust policy that requires it; stored only sealed.
    let a = api.call(Req::load("get-target-access")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let id = a.body["external_id"].as_str().unwrap().to_owned();
    assert!(id.len() >= 32, "{id}");
    assert_eq!(
        a.body["trust_policy"]["Statement"][0]["Condition"]["StringEquals"]["sts:ExternalId"],
        json!(id)
    );
    let again = api.call(Req::load("get-target-access")).await;
    assert_eq!(again.body["external_id"], json!(id));
    let other = api.call(Req::load("get-target-access").tenant("globex")).await;
    assert_ne!(other.body["external_id"], json!(id), "one id per tenant");
    let tenants = api.raw_items("tenants").await;
    assert!(tenants.contains("external_id_sealed"), "{tenants}");
    assert!(
        !tenants.contains(&id),
        "the issued id is at rest only sealed: {tenants}"
    );

    // A caller-chosen external id is refused, in a create, an estimate and a PATCH, without echoing it.
    let base = Req::load("create-cluster-target").body_value();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut b = base.clone();
        b["name"] = json!("other");
        f(&mut b);
        Req::load("create-cluster-target").body(&b)
    };
    let chosen = |b: &mut Value| b["target"]["external_id"] = json!("acme-7Qx9-external");
    for req in [
        with(&chosen),
        estimate_req(&{
            let mut b = base.clone();
            chosen(&mut b);
            b
        }),
    ] {
        let r = api.call(req).await;
        r.problem(422);
        assert_eq!(r.fields(), ["target.external_id"], "{}", r.text);
        let e = r.error_for("target.external_id");
        assert!(
            e["problem"].as_str().unwrap().contains("issued by Strato"),
            "{}",
            r.text
        );
        assert!(
            e["allowed"]
                .as_str()
                .unwrap()
                .contains("GET /v1/tenant/target-access"),
            "{}",
            r.text
        );
        assert!(!r.text.contains("acme-7Qx9-external"), "{}", r.text);
    }

    // Bad targets: one problem per field.
    let r = api
        .call(with(&|b| {
            b["target"] = json!({"role_arn": "arn:aws:iam::2109876543:role/strato",
                "external_id": "not valid!", "state_bucket": "Bad_Bucket", "lock_table": "x",
                "region": "mars-1", "session": "long"});
        }))
        .await;
    r.problem(422);
    let mut fields = r.fields();
    fields.sort();
    assert_eq!(
        fields,
        [
            "target.external_id",
            "target.lock_table",
            "target.region",
            "target.role_arn",
            "target.session",
            "target.state_bucket"
        ],
        "{}",
        r.text
    );
    assert!(!r.text.contains("not valid!"), "{}", r.text);
    r.assert_says("target.role_arn", "allowed", "12-digit");
    let r = api.call(with(&|b| b["target"] = json!("arn"))).await;
    r.problem(422);
    assert_eq!(r.fields(), ["target"], "{}", r.text);
    // An AWS target on a cluster of another cloud: refused, naming the target's provider.
    let r = api.call(with(&|b| b["provider"] = json!("gcp"))).await;
    r.problem(422);
    assert!(r.fields().contains(&"target.provider".to_owned()), "{}", r.text);
    // Nothing of the refused creates was written.
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(list.body["clusters"].as_array().unwrap().len(), 1);
}
