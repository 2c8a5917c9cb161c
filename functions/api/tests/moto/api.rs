//! The api Lambda against moto: every route, validation, tenant isolation, idempotency and quotas.

use crate::common;

use common::{Api, Req, SUBJECT, TENANT, call_with};
use lambda_http::http::{Method, StatusCode};
use serde_json::{Value, json};
use strato_api::service;
use strato_aws::store::{LockOutcome, Quotas};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{ClusterState, OperationKind, OperationStatus, Step};
use strato_domain::{ErrorCategory, UserError, ts};

fn tenant(t: &str) -> TenantId {
    t.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn create_records_cluster_and_operation_then_queues_the_job() {
    let api = Api::new().await;
    let r = api.call(Req::load("create-cluster")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/json");
    let cluster = &r.body["cluster"];
    let op = &r.body["operation"];
    let (cid, oid) = (cluster["id"].as_str().unwrap(), op["id"].as_str().unwrap());
    assert_eq!(r.headers["location"], format!("/v1/operations/{oid}"));
    assert_eq!(cluster["state"], "PENDING");
    assert_eq!(cluster["name"], "prod-eu");
    assert_eq!(
        cluster["template"],
        json!({"name": "api-test", "version": "1.0.0"})
    );
    assert_eq!(op["kind"], "create");
    assert_eq!(op["status"], "queued");
    assert_eq!(op["requested_by"], SUBJECT);
    // The sensitive value is stored (the runner needs it) but never shown.
    assert_eq!(cluster["variables"]["db_password"], "(sensitive)");
    assert_eq!(op["spec"]["variables"]["db_password"], "(sensitive)");
    assert_eq!(cluster["variables"]["node_count"], 3);
    assert!(!r.text.contains("hunter2"));

    let stored = api
        .ctx
        .store
        .get_cluster(&tenant(TENANT), &cid.parse().unwrap())
        .await
        .unwrap()
        .expect("cluster stored");
    assert_eq!(stored.state(), ClusterState::Pending);
    assert_eq!(stored.version, 0);
    // Sealed at rest, opening to the value sent.
    assert!(strato_domain::sealed::as_sealed(&stored.spec.variables["db_password"]).is_some());
    assert_eq!(
        common::opened(&api, &stored.spec, TENANT, cid, "db_password").await,
        "hunter2-but-longer"
    );
    let stored_op = api.stored_operation(oid).await;
    assert_eq!(stored_op.kind, OperationKind::Create);
    assert_eq!(stored_op.status, OperationStatus::Queued);
    assert_eq!(stored_op.requested_by.as_deref(), Some(SUBJECT));
    assert_eq!(stored_op.spec.as_ref(), Some(&stored.spec));
    assert_eq!(
        api.ctx.store.open_operations("queued").await.unwrap().len(),
        1,
        "indexed as queued for the sweeper"
    );

    let jobs = api.jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].operation_id.as_str(), oid);
    assert_eq!(jobs[0].cluster_id.as_str(), cid);
    assert_eq!(jobs[0].tenant_id.as_str(), TENANT);
    assert_eq!(jobs[0].kind, OperationKind::Create);

    // The read routes see what was written.
    let got = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{cid}")))
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text);
    assert_eq!(got.body["id"], cid);
    assert_eq!(got.body["variables"]["db_password"], "(sensitive)");
    let ops = api
        .call(Req::load("list-cluster-operations").path(&format!("/v1/clusters/{cid}/operations")))
        .await;
    assert_eq!(ops.status, StatusCode::OK, "{}", ops.text);
    assert_eq!(ops.body["operations"].as_array().unwrap().len(), 1);
    assert_eq!(ops.body["operations"][0]["id"], oid);
    let one = api
        .call(Req::load("get-operation").path(&format!("/v1/operations/{oid}")))
        .await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.text);
    assert_eq!(one.body["status"], "queued");
    assert_eq!(one.body["current_step"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_send_still_answers_202_and_leaves_the_operation_queued() {
    let api = Api::new().await;
    let mut ctx = api.ctx.clone();
    ctx.queues.jobs = format!("{}/123456789012/no-such-queue.fifo", api.env.endpoint);
    let r = call_with(&service(ctx), Api::create_req("send-fails")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let queued = api.ctx.store.open_operations("queued").await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(
        queued[0].operation_id.as_str(),
        r.body["operation"]["id"].as_str().unwrap()
    );
    assert!(api.jobs().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_validation_failure_is_a_problem_naming_the_field() {
    let api = Api::new().await;
    let base = Req::load("create-cluster").body_value();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut b = base.clone();
        f(&mut b);
        b
    };
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "unknown variable",
            with(&|b| b["variables"]["ghost"] = json!(1)),
            "variables.ghost",
            "not a variable",
        ),
        (
            "wrong type",
            with(&|b| b["variables"]["node_count"] = json!("three")),
            "variables.node_count",
            "a string",
        ),
        (
            "out of range",
            with(&|b| b["variables"]["node_count"] = json!(99)),
            "variables.node_count",
            "out of range",
        ),
        (
            "rule violation",
            with(&|b| {
                b["variables"]["min_nodes"] = json!(6);
                b["variables"]["max_nodes"] = json!(4);
                b["variables"]["node_count"] = json!(4);
            }),
            "variables.max_nodes",
            "must be >=",
        ),
        (
            "bad region",
            with(&|b| b["region"] = json!("mars-1")),
            "region",
            "not a aws region",
        ),
        (
            "bad name",
            with(&|b| b["name"] = json!("Prod_EU")),
            "name",
            "invalid cluster name",
        ),
        (
            "missing required",
            with(&|b| {
                b["variables"].as_object_mut().unwrap().remove("owner_email");
            }),
            "variables.owner_email",
            "required",
        ),
        (
            "pattern",
            with(&|b| b["variables"]["owner_email"] = json!("nobody")),
            "variables.owner_email",
            "pattern",
        ),
        (
            "enum",
            with(&|b| b["variables"]["kubernetes_version"] = json!("1.20")),
            "variables.kubernetes_version",
            "allowed values",
        ),
        (
            "catalog",
            with(&|b| b["variables"]["node_instance_type"] = json!("t9.mega")),
            "variables.node_instance_type",
            "instance type",
        ),
        (
            "unknown template",
            with(&|b| b["template"]["name"] = json!("nope")),
            "template",
            "no template named 'nope'",
        ),
        (
            "unknown template version",
            with(&|b| b["template"]["version"] = json!("9.9.9")),
            "template",
            "no published version '9.9.9'",
        ),
        (
            "unknown provider",
            with(&|b| b["provider"] = json!("ibm")),
            "provider",
            "not a provider",
        ),
        (
            "unknown field",
            with(&|b| b["size"] = json!("xl")),
            "size",
            "not a field",
        ),
        (
            "missing name",
            with(&|b| {
                b.as_object_mut().unwrap().remove("name");
            }),
            "name",
            "required",
        ),
    ];
    for (what, body, field, needle) in cases {
        let r = api.call(Req::load("create-cluster").body(&body)).await;
        r.problem(422);
        let e = r.error_for(field);
        assert!(
            e["problem"].as_str().unwrap().contains(needle),
            "{what}: {}",
            r.text
        );
        assert!(e["allowed"].as_str().is_some(), "{what}: {}", r.text);
    }

    // Several problems come back together.
    let r = api
        .call(Req::load("create-cluster").body(&with(&|b| {
            b["name"] = json!("X");
            b["variables"]["node_count"] = json!(0);
            b["variables"]["ghost"] = json!(true);
        })))
        .await;
    r.problem(422);
    assert_eq!(r.fields(), ["name", "variables.ghost", "variables.node_count"]);
    // Unknown template versions list what is published.
    let r = api
        .call(Req::load("create-cluster").body(&with(&|b| b["template"]["version"] = json!("2.0.0"))))
        .await;
    r.assert_says("template", "allowed", "1.1.0");

    let r = api
        .call(Req::load("create-cluster").raw_body("{\"name\": \"prod\","))
        .await;
    let p = r.problem(400);
    assert!(
        p["detail"].as_str().unwrap().contains("not valid JSON"),
        "{}",
        r.text
    );
    assert!(p["detail"].as_str().unwrap().contains("line 1"), "{}", r.text);
    let r = api.call(Req::load("create-cluster").raw_body("[]")).await;
    r.problem(400);

    let huge = with(&|b| b["variables"]["tags"] = json!({"blob": "x".repeat(70 * 1024)}));
    let r = api.call(Req::load("create-cluster").body(&huge)).await;
    let p = r.problem(413);
    assert!(p["detail"].as_str().unwrap().contains("65536"), "{}", r.text);

    // A sensitive value is never echoed, even when it is what is wrong.
    let r = api
        .call(Req::load("create-cluster").body(&with(&|b| {
            b["variables"]["db_password"] = json!(format!("hunter2{}", "p".repeat(100)))
        })))
        .await;
    r.problem(422);
    assert!(!r.text.contains("hunter2"), "{}", r.text);

    // Nothing was written by any refused request.
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(list.body["clusters"], json!([]), "{}", list.text);
    assert!(api.jobs().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn tenants_never_see_each_other() {
    let api = Api::new().await;
    let (cid, oid) = api.create(TENANT, "acme-prod").await;
    let other = "globex";
    let routes: Vec<(Req, &str)> = vec![
        (
            Req::load("get-cluster").path(&format!("/v1/clusters/{cid}")),
            "cluster",
        ),
        (
            Req::load("update-cluster").path(&format!("/v1/clusters/{cid}")),
            "cluster",
        ),
        (
            Req::load("delete-cluster").path(&format!("/v1/clusters/{cid}")),
            "cluster",
        ),
        (
            Req::load("retry-cluster").path(&format!("/v1/clusters/{cid}/retry")),
            "cluster",
        ),
        (
            Req::load("list-cluster-operations").path(&format!("/v1/clusters/{cid}/operations")),
            "cluster",
        ),
        (
            Req::load("get-operation").path(&format!("/v1/operations/{oid}")),
            "operation",
        ),
        (
            Req::load("cancel-operation").path(&format!("/v1/operations/{oid}/cancel")),
            "operation",
        ),
    ];
    for (req, what) in routes {
        let r = api.call(req.tenant(other)).await;
        let p = r.problem(404);
        assert!(p["detail"].as_str().unwrap().contains(what), "{}", r.text);
    }
    let list = api.call(Req::load("list-clusters").query("").tenant(other)).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.body["clusters"], json!([]));
    // The owner still sees it, untouched by the other tenant's attempts.
    let mine = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(mine.body["clusters"].as_array().unwrap().len(), 1);
    let ops = api.stored_operations(&cid).await;
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].status, OperationStatus::Queued);
    assert!(!ops[0].cancel_requested);

    // No claims, or an unusable tenant claim: 401, on every authenticated route.
    let r = api.call(Req::load("list-clusters").without_claims()).await;
    r.problem(401);
    let r = api.call(Req::load("create-cluster").tenant("Not A Tenant")).await;
    r.problem(401);
    // The claim name is configuration.
    let mut ctx = api.ctx.clone();
    ctx.config.tenant_claim = "custom:org".into();
    let r = call_with(&service(ctx), Req::load("list-clusters")).await;
    assert!(r.problem(401)["detail"].as_str().unwrap().contains("custom:org"));
    // Health needs no token.
    let r = api.call(Req::load("healthz")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_key_replays_the_first_answer() {
    let api = Api::new().await;
    let key = "5d0c6c8e-8a8e-4f0b-9f5e-2b7c1f3a9d10";
    let (first, again) = api.twice_with_key(|| Api::create_req("idem-one"), key).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.text);
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_eq!(again.text, first.text, "same body");
    assert_eq!(again.headers["location"], first.headers["location"]);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(
        list.body["clusters"].as_array().unwrap().len(),
        1,
        "nothing new created"
    );
    assert_eq!(api.jobs().await.len(), 1, "no second job");

    let r = api
        .call(Api::create_req("idem-two").header("idempotency-key", key))
        .await;
    r.assert_problem(422, "idempotency-key-reused");

    // Keys are per tenant: another tenant's same key is a different request.
    let r = api
        .call(
            Api::create_req("idem-one")
                .header("idempotency-key", key)
                .tenant("globex"),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_ne!(r.body["cluster"]["id"], first.body["cluster"]["id"]);

    // Refusals are replayed too: the same DELETE twice gives the same answer, one operation.
    let cid = first.body["cluster"]["id"].as_str().unwrap();
    api.set_state(cid, ClusterState::Active).await;
    let del = || {
        Req::load("delete-cluster")
            .path(&format!("/v1/clusters/{cid}"))
            .header("idempotency-key", "del-1")
    };
    let d1 = api.call(del()).await;
    assert_eq!(d1.status, StatusCode::ACCEPTED, "{}", d1.text);
    let d2 = api.call(del()).await;
    assert_eq!((d2.status, &d2.text), (d1.status, &d1.text));
    let ops = api.stored_operations(cid).await;
    assert_eq!(ops.iter().filter(|o| o.kind == OperationKind::Delete).count(), 1);

    let r = api
        .call(Api::create_req("idem-three").header("idempotency-key", ""))
        .await;
    assert_eq!(r.problem(400)["errors"][0]["field"], "Idempotency-Key");
}

#[tokio::test(flavor = "multi_thread")]
async fn quotas_and_taken_names() {
    let api = Api::new().await;
    api.create(TENANT, "first").await;
    let r = api.call(Api::create_req("first")).await;
    let p = r.problem(409);
    assert!(p["detail"].as_str().unwrap().contains("'first'"), "{}", r.text);

    api.ctx
        .store
        .set_quotas(
            &tenant(TENANT),
            &Quotas {
                max_clusters: 1,
                ..Quotas::default()
            },
        )
        .await
        .unwrap();
    let second = || Api::create_req("second").header("idempotency-key", "second-try");
    let r = api.call(second()).await;
    let p = r.problem(429);
    assert!(
        p["detail"].as_str().unwrap().contains("at most 1 clusters"),
        "{}",
        r.text
    );
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(list.body["clusters"].as_array().unwrap().len(), 1);
    // A quota refusal is not stored for replay: once there is room, the same key goes through.
    api.ctx
        .store
        .set_quotas(
            &tenant(TENANT),
            &Quotas {
                max_clusters: 2,
                ..Quotas::default()
            },
        )
        .await
        .unwrap();
    let r = api.call(second()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);

    // Another tenant has its own quota.
    let r = api.call(Api::create_req("second").tenant("globex")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_and_filters_by_state_and_name_without_deleted_clusters() {
    let api = Api::new().await;
    let mut ids = Vec::new();
    for name in ["alpha", "bravo", "charlie"] {
        ids.push(api.create(TENANT, name).await.0);
    }
    api.set_state(&ids[1], ClusterState::Active).await;

    let page1 = api.call(Req::load("list-clusters").query("limit=2")).await;
    assert_eq!(page1.status, StatusCode::OK, "{}", page1.text);
    let names = |r: &common::Resp| -> Vec<String> {
        r.body["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&page1), ["charlie", "bravo"], "newest first");
    let next = page1.body["next"].as_str().expect("a next token").to_owned();
    let page2 = api
        .call(Req::load("list-clusters").query(&format!("limit=2&next={next}")))
        .await;
    assert_eq!(names(&page2), ["alpha"]);
    assert_eq!(page2.body["next"], Value::Null);

    let active = api.call(Req::load("list-clusters")).await; // the sample asks for state=ACTIVE
    assert_eq!(names(&active), ["bravo"]);
    assert_eq!(active.body["clusters"][0]["state"], "ACTIVE");

    // States in any case; a DELETED cluster is left out unless asked for; a name finds its cluster.
    api.set_state(&ids[0], ClusterState::Deleted).await;
    for (q, want) in [
        ("state=active", vec!["bravo"]),
        ("", vec!["charlie", "bravo"]),
        ("include_deleted=true", vec!["charlie", "bravo", "alpha"]),
        ("state=deleted", vec!["alpha"]),
        ("name=bravo", vec!["bravo"]),
        ("name=alpha", vec![]),
        ("name=alpha&include_deleted=true", vec!["alpha"]),
    ] {
        let r = api.call(Req::load("list-clusters").query(q)).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.text);
        assert_eq!(names(&r), want, "{q}");
    }

    for (q, field) in [
        ("state=RUNNING", "state"),
        ("name=Not%20A%20Name", "name"),
        ("include_deleted=yes", "include_deleted"),
        ("limit=0", "limit"),
        ("limit=1000", "limit"),
        ("next=nope", "next"),
    ] {
        let r = api.call(Req::load("list-clusters").query(q)).await;
        r.problem(400);
        assert_eq!(r.fields(), [field], "{q}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_validates_the_merged_spec_and_queues_an_update() {
    let api = Api::new().await;
    let (cid, _) = api.create(TENANT, "patchy").await;
    let path = format!("/v1/clusters/{cid}");
    let patch = |body: Value| Req::load("update-cluster").path(&path).body(&body);

    api.set_state(&cid, ClusterState::Active).await;
    let r = api
        .call(patch(json!({"variables": {"node_count": 5, "kubernetes_version": "1.32"}, "template_version": "1.1.0"})))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let op = &r.body["operation"];
    assert_eq!(op["kind"], "update");
    assert_eq!(op["status"], "queued");
    assert_eq!(op["spec"]["template"]["version"], "1.1.0");
    let stored = api
        .ctx
        .store
        .get_operation(&op["id"].as_str().unwrap().parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let vars = &stored.spec.as_ref().unwrap().variables;
    assert_eq!(vars["node_count"], 5);
    assert_eq!(
        vars["owner_email"], "ops@acme.example",
        "merged over the current variables"
    );
    assert!(strato_domain::sealed::as_sealed(&vars["db_password"]).is_some());
    let spec = stored.spec.as_ref().unwrap();
    let cid = stored.cluster_id.to_string();
    assert_eq!(
        common::opened(&api, spec, TENANT, &cid, "db_password").await,
        "hunter2-but-longer"
    );
    let jobs = api.jobs().await;
    assert!(
        jobs.iter()
            .any(|j| j.kind == OperationKind::Update && j.operation_id == stored.operation_id)
    );
    // That update ends without applying: later PATCHes build on the cluster's spec again (while it is
    // open they build on its spec, see `concurrent_patches_keep_both_changes_and_if_match_guards_the_version`).
    api.set_op_status(stored.operation_id.as_str(), OperationStatus::Failed)
        .await;

    // Validation of the merged spec: the rule holds against the stored max_nodes default (5).
    let r = api.call(patch(json!({"variables": {"node_count": 6}}))).await;
    r.problem(422);
    assert_eq!(r.fields(), ["variables.node_count"]);
    assert!(r.text.contains("node_count cannot exceed max_nodes"));
    // 1.32 exists only in 1.1.0.
    let r = api
        .call(patch(json!({"variables": {"kubernetes_version": "1.32"}})))
        .await;
    assert_eq!(
        r.problem(422)["errors"][0]["field"],
        "variables.kubernetes_version"
    );
    let r = api.call(patch(json!({"template_version": "7.0.0"}))).await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "template_version");
    let r = api.call(patch(json!({"variables": {"owner_email": null}}))).await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "variables.owner_email");
    let r = api.call(patch(json!({"name": "rename"}))).await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "name");
    let r = api.call(patch(json!({}))).await;
    r.problem(422);

    api.set_state(&cid, ClusterState::Failed).await;
    let r = api.call(patch(json!({"variables": {"node_count": 3}}))).await;
    let p = r.problem(409);
    assert!(p["detail"].as_str().unwrap().contains("FAILED"), "{}", r.text);
    assert!(p["detail"].as_str().unwrap().contains("retry"), "{}", r.text);
    api.set_state(&cid, ClusterState::Deleted).await;
    let r = api.call(patch(json!({"variables": {"node_count": 3}}))).await;
    assert!(r.problem(409)["detail"].as_str().unwrap().contains("DELETED"));
    let ops = api.stored_operations(&cid).await;
    assert_eq!(ops.iter().filter(|o| o.kind == OperationKind::Update).count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_queues_a_delete_once() {
    let api = Api::new().await;
    let (cid, create_op) = api.create(TENANT, "doomed").await;
    let del = || Req::load("delete-cluster").path(&format!("/v1/clusters/{cid}"));
    api.set_op_status(&create_op, OperationStatus::Succeeded).await;
    api.set_state(&cid, ClusterState::Active).await;
    let r = api.call(del()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["operation"]["kind"], "delete");
    let oid = r.body["operation"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r.headers["location"], format!("/v1/operations/{oid}"));
    assert!(
        api.jobs()
            .await
            .iter()
            .any(|j| j.operation_id.as_str() == oid && j.kind == OperationKind::Delete)
    );

    let r = api.call(del()).await;
    assert!(
        r.problem(409)["detail"].as_str().unwrap().contains("delete"),
        "{}",
        r.text
    );
    // And an update behind a queued delete makes no sense either.
    let r = api
        .call(
            Req::load("update-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .body(&json!({"variables": {"node_count": 3}})),
        )
        .await;
    r.problem(409);

    api.set_state(&cid, ClusterState::Deleting).await;
    let r = api.call(del()).await;
    assert!(r.problem(409)["detail"].as_str().unwrap().contains("DELETING"));
    api.set_state(&cid, ClusterState::Deleted).await;
    let r = api.call(del()).await;
    assert!(r.problem(409)["detail"].as_str().unwrap().contains("DELETED"));
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_only_from_failed_and_failures_show_what_step_fix() {
    let api = Api::new().await;
    let (cid, oid) = api.create(TENANT, "flaky").await;
    let retry = || Req::load("retry-cluster").path(&format!("/v1/clusters/{cid}/retry"));
    let r = api.call(retry()).await;
    assert!(r.problem(409)["detail"].as_str().unwrap().contains("PENDING"));

    // The runner failed the create at apply.
    let mut op = api.stored_operation(&oid).await;
    let now = ts::now();
    op.status = OperationStatus::Failed;
    op.attempt = 1;
    op.steps = vec![
        Step {
            name: "plan".into(),
            started_at: now,
            finished_at: Some(now),
            ok: Some(true),
        },
        Step {
            name: "apply".into(),
            started_at: now,
            finished_at: Some(now),
            ok: Some(false),
        },
    ];
    op.error = Some(UserError::new(
        ErrorCategory::Quota,
        "apply",
        "VpcLimitExceeded: the maximum number of VPCs has been reached",
    ));
    api.ctx.store.save_operation(&mut op, false).await.unwrap();
    api.set_state(&cid, ClusterState::Failed).await;

    let r = api
        .call(Req::load("get-operation").path(&format!("/v1/operations/{oid}")))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["current_step"], "apply");
    let e = &r.body["error"];
    assert!(e["what"].as_str().unwrap().contains("VpcLimitExceeded"));
    assert_eq!(e["step"], "apply");
    assert!(e["fix"].as_str().unwrap().contains("quota"), "{}", r.text);
    assert_eq!(r.body["steps"].as_array().unwrap().len(), 2);

    let r = api.call(retry()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let new_op = &r.body["operation"];
    assert_eq!(new_op["kind"], "create");
    assert_eq!(new_op["attempt"], 2);
    assert_ne!(new_op["id"], oid);
    assert!(
        api.jobs()
            .await
            .iter()
            .any(|j| j.operation_id.as_str() == new_op["id"].as_str().unwrap())
    );
    // A second retry while the first is queued is refused.
    let r = api.call(retry()).await;
    assert!(
        r.problem(409)["detail"]
            .as_str()
            .unwrap()
            .contains("already open")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_queued_now_running_by_request_terminal_never() {
    let api = Api::new().await;
    let (cid, oid) = api.create(TENANT, "cancel-me").await;
    let cancel = |id: &str| Req::load("cancel-operation").path(&format!("/v1/operations/{id}/cancel"));
    let r = api.call(cancel(&oid)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "cancelled");
    assert_eq!(r.body["error"]["step"], "queued");
    let stored = api.stored_operation(&oid).await;
    assert_eq!(stored.status, OperationStatus::Cancelled);
    assert!(api.ctx.store.open_operations("queued").await.unwrap().is_empty());
    // Its cluster will never be provisioned: it is FAILED, so it can be retried or deleted.
    let c = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{cid}")))
        .await;
    assert_eq!(c.body["state"], "FAILED");
    assert_eq!(c.body["last_error"]["category"], "cancelled");
    // The audit log has who asked (the call) and the operation's end, as for an end a function makes.
    let log = api
        .call(Req::load("list-audit").query("").scope(Some("admin")))
        .await;
    let entries = log.body["entries"].as_array().unwrap();
    let end = entries
        .iter()
        .find(|e| e["action"] == "operation.end" && e["operation_id"] == oid.as_str())
        .unwrap_or_else(|| panic!("no operation.end entry: {}", log.text));
    assert_eq!(end["outcome"], "cancelled", "{end}");
    assert_eq!(end["actor"], "strato:api", "{end}");
    assert!(
        entries
            .iter()
            .any(|e| e["action"] == "operation.cancel" && e["outcome"] == "succeeded"),
        "{}",
        log.text
    );

    let r = api.call(cancel(&oid)).await;
    assert!(r.problem(409)["detail"].as_str().unwrap().contains("cancelled"));

    // A running operation is asked to stop.
    let r = api
        .call(Req::load("retry-cluster").path(&format!("/v1/clusters/{cid}/retry")))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let running = r.body["operation"]["id"].as_str().unwrap().to_owned();
    api.set_op_status(&running, OperationStatus::Running).await;
    let r = api.call(cancel(&running)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["status"], "running");
    assert_eq!(r.body["cancel_requested"], true);
    let stored = api.stored_operation(&running).await;
    assert!(stored.cancel_requested);
    assert_eq!(stored.status, OperationStatus::Running);
}

#[tokio::test(flavor = "multi_thread")]
async fn templates_are_listed_with_their_schema() {
    let api = Api::new().await;
    let r = api.call(Req::load("list-templates")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let t = &r.body["templates"][0];
    assert_eq!(t["name"], "api-test");
    assert_eq!(t["version"], "1.1.0");
    assert_eq!(t["versions"], json!(["1.0.0", "1.1.0"]));

    let r = api.call(Req::load("get-template")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["version"], "1.1.0", "latest by default");
    let vars = &r.body["variables"];
    assert_eq!(vars["node_count"]["type"], "integer");
    assert_eq!(vars["node_count"]["max"], 20.0);
    assert_eq!(vars["owner_email"]["required"], true);
    assert_eq!(vars["db_password"]["sensitive"], true);
    assert!(
        vars.get("cluster_name").is_none(),
        "managed variables are not offered"
    );
    assert_eq!(r.body["rules"].as_array().unwrap().len(), 2);

    let r = api.call(Req::load("get-template").query("version=1.0.0")).await;
    assert_eq!(r.body["version"], "1.0.0");
    let r = api.call(Req::load("get-template").query("version=3.0.0")).await;
    r.problem(404);
    let r = api
        .call(Req::load("get-template").path("/v1/templates/nope"))
        .await;
    r.problem(404);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_routes_and_methods() {
    let api = Api::new().await;
    let r = api.call(Req::load("list-clusters").path("/v2/clusters")).await;
    r.problem(404);
    let r = api.call(Req::load("list-clusters").method(Method::PUT)).await;
    r.problem(405);
    assert_eq!(r.headers["allow"], "POST, GET");
    let r = api
        .call(Req::load("get-cluster").path("/v1/clusters/not-an-id"))
        .await;
    r.problem(404);
}

/// Concurrent repeats of one request with one key: the key is reserved before any work, so exactly one
/// update is queued; the others are told to come back (409) or get the first answer, never a second operation.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_repeats_with_one_key_act_once() {
    let api = Api::new().await;
    let (cid, _) = api.create(TENANT, "idem-race").await;
    api.set_state(&cid, ClusterState::Active).await;
    let patch = || {
        let r = Req::load("update-cluster")
            .path(&format!("/v1/clusters/{cid}"))
            .header("idempotency-key", "patch-race-1");
        api.call(r)
    };
    let (a, b, c, d) = tokio::join!(patch(), patch(), patch(), patch());
    let answers = [a, b, c, d];
    for r in &answers {
        assert!(
            r.status == StatusCode::ACCEPTED || r.status == StatusCode::CONFLICT,
            "{} {}",
            r.status,
            r.text
        );
    }
    let accepted: Vec<_> = answers
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .collect();
    assert!(!accepted.is_empty());
    let op_ids: std::collections::BTreeSet<_> = accepted
        .iter()
        .map(|r| r.body["operation"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(op_ids.len(), 1, "every 202 names the same operation");
    let ops = api.stored_operations(&cid).await;
    assert_eq!(ops.iter().filter(|o| o.kind == OperationKind::Update).count(), 1);
    // Once answered, a repeat replays it.
    let again = patch().await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.text);
    assert_eq!(
        again.body["operation"]["id"].as_str(),
        op_ids.iter().next().map(String::as_str)
    );
}

/// `POST /v1/clusters/{id}/drift-check`: ACTIVE clusters only, one pending check at most, tenant-scoped.
#[tokio::test(flavor = "multi_thread")]
async fn drift_check_on_demand() {
    let api = Api::new().await;
    let (cid, _) = api.create(TENANT, "drifty").await;
    let req = || Req::load("drift-check").path(&format!("/v1/clusters/{cid}/drift-check"));
    let r = api.call(req()).await;
    r.problem(409);
    assert!(
        r.body["detail"].as_str().unwrap().contains("PENDING"),
        "{}",
        r.text
    );

    api.set_state(&cid, ClusterState::Active).await;
    let first = api.call(req()).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.text);
    assert_eq!(first.body["operation"]["kind"], "drift-check");
    let again = api.call(req()).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.text);
    assert_eq!(
        again.body["operation"]["id"], first.body["operation"]["id"],
        "one pending check"
    );
    let ops = api.stored_operations(&cid).await;
    assert_eq!(
        ops.iter().filter(|o| o.kind == OperationKind::DriftCheck).count(),
        1
    );
    let jobs = api.jobs().await;
    assert!(jobs.iter().any(|j| j.kind == OperationKind::DriftCheck));

    api.call(req().tenant("globex")).await.problem(404);
}

/// State versions: list the S3 versions of a cluster's state, restore an earlier one under the cluster lock
/// (the replaced version is kept) and record who did it; refused while an operation holds the cluster.
#[tokio::test(flavor = "multi_thread")]
async fn state_versions_list_and_restore() {
    let api = Api::new().await;
    let (cid, create) = api.create(TENANT, "stateful").await;
    let cluster_id: ClusterId = cid.parse().unwrap();
    let bucket = api.env.names.bucket("state");
    let key = format!("tenants/{TENANT}/clusters/{cid}/cluster.tfstate");
    let s3 = &api.env.aws.s3;
    let put = |body: &'static str| {
        s3.put_object()
            .bucket(&bucket)
            .key(&key)
            .body(body.as_bytes().to_vec().into())
            .send()
    };
    let good = put(r#"{"version":4,"serial":7}"#)
        .await
        .unwrap()
        .version_id
        .unwrap();
    put("garbage \u{0}\u{1}").await.unwrap();

    let path = format!("/v1/clusters/{cid}/state-versions");
    let list = api.call(Req::load("get-cluster").path(&path)).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    let items = list.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|i| i["stage"] == "cluster"));
    assert_eq!(items.iter().filter(|i| i["is_latest"] == true).count(), 1);

    let restore = |v: &str| {
        // Restoring state is the tenant admin's (roles, issue 22).
        Req::load("retry-cluster")
            .path(&format!("/v1/clusters/{cid}/state-versions/{v}/restore"))
            .scope(Some("admin"))
    };
    // The create's dispatch would hold the lock: simulate an operation running on the cluster.
    let op: OperationId = create.parse().unwrap();
    let LockOutcome::Acquired { fencing_token } = api
        .ctx
        .store
        .acquire_cluster_lock(
            &cluster_id,
            &op,
            time::Duration::minutes(5),
            strato_domain::ts::now(),
        )
        .await
        .unwrap()
    else {
        panic!("lock")
    };
    api.call(restore(&good)).await.problem(409);
    api.ctx
        .store
        .release_cluster_lock(&cluster_id, &op, fencing_token)
        .await
        .unwrap();

    api.call(restore("no-such-version")).await.problem(404);
    api.call(restore(&good).tenant("globex")).await.problem(404);
    let r = api.call(restore(&good)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["from_version"], good.as_str());
    assert_eq!(r.body["restored_by"], SUBJECT);
    let now = s3.get_object().bucket(&bucket).key(&key).send().await.unwrap();
    let text = now.body.collect().await.unwrap().into_bytes();
    assert_eq!(&text[..], br#"{"version":4,"serial":7}"#);
    // Terraform's digest record now matches the restored bytes (md5), so the engine accepts the state.
    let digest = api
        .env
        .aws
        .dynamodb
        .get_item()
        .table_name(api.env.names.table("tf-locks"))
        .key(
            "LockID",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("{bucket}/{key}-md5")),
        )
        .send()
        .await
        .unwrap()
        .item
        .expect("digest recorded");
    assert_eq!(
        digest["Digest"].as_s().unwrap(),
        "739defdd1abbd547755aada0c08a4fb8"
    );
    let list = api.call(Req::load("get-cluster").path(&path)).await;
    assert_eq!(
        list.body["items"].as_array().unwrap().len(),
        3,
        "the garbage version is kept"
    );
    assert_eq!(list.body["restores"][0]["from_version"], good.as_str());
    assert_eq!(
        api.ctx.store.cluster_lock(&cluster_id).await.unwrap(),
        None,
        "lock released"
    );
}

/// Issue 15 defect 8: a 409 (the cluster's state, or a lost race with another writer) was stored under its
/// Idempotency-Key and replayed for 24 hours, so the same request could never succeed once the cluster
/// allowed it. Transient answers are not kept: the repeat is decided afresh.
#[tokio::test(flavor = "multi_thread")]
async fn a_conflict_is_not_replayed_under_its_idempotency_key() {
    let api = Api::new().await;
    let (cid, create_op) = api.create(TENANT, "idem-conflict").await;
    api.set_state(&cid, ClusterState::Active).await;
    let retry = || {
        Req::load("retry-cluster")
            .path(&format!("/v1/clusters/{cid}/retry"))
            .header("idempotency-key", "retry-1")
    };
    let first = api.call(retry()).await;
    first.problem(409);
    api.set_state(&cid, ClusterState::Failed).await;
    api.set_op_status(&create_op, OperationStatus::Failed).await;
    let again = api.call(retry()).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{}", again.text);
    assert!(!again.headers.contains_key("idempotent-replayed"));
    // A lasting answer is kept as before.
    let third = api.call(retry()).await;
    assert_eq!((third.status, &third.text), (again.status, &again.text));
    assert_eq!(third.headers["idempotent-replayed"], "true");
}

/// Issue 15 defect 2 through the HTTP API and DynamoDB: the second PATCH keeps the first's variables, and
/// `If-Match` with the cluster's `ETag` makes a PATCH conditional (412 problem+json on another version).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_patches_keep_both_changes_and_if_match_guards_the_version() {
    let api = Api::new().await;
    let (cid, _) = api.create(TENANT, "two-patches").await;
    api.set_state(&cid, ClusterState::Active).await;
    let patch = |vars: Value| {
        Req::load("update-cluster")
            .path(&format!("/v1/clusters/{cid}"))
            .body(&json!({ "variables": vars }))
    };
    let get = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{cid}")))
        .await;
    let version = get.body["version"].as_u64().unwrap();
    assert_eq!(get.headers["etag"], format!("\"{version}\""));

    let stale = api
        .call(patch(json!({"node_count": 5})).header("if-match", &format!("\"{}\"", version + 7)))
        .await;
    assert_eq!(stale.headers["content-type"], "application/problem+json");
    let p = stale.problem(412);
    assert!(
        p["detail"].as_str().unwrap().contains("If-Match"),
        "{}",
        stale.text
    );

    let a = api
        .call(patch(json!({"node_count": 5})).header("if-match", &format!("\"{version}\"")))
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.text);
    let newer = a.body["cluster"]["version"].as_u64().unwrap();
    assert!(newer > version);
    assert_eq!(a.headers["etag"], format!("\"{newer}\""));
    let b = api.call(patch(json!({"owner_email": "sre@example.com"}))).await;
    assert_eq!(b.status, StatusCode::ACCEPTED, "{}", b.text);
    let op_id: OperationId = b.body["operation"]["id"].as_str().unwrap().parse().unwrap();
    let spec = api
        .ctx
        .store
        .get_operation(&op_id)
        .await
        .unwrap()
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(
        spec.variables["node_count"],
        json!(5),
        "the first PATCH's change is kept"
    );
    assert_eq!(spec.variables["owner_email"], json!("sre@example.com"));
    // The first version is stale now.
    let late = api
        .call(patch(json!({"node_count": 6})).header("if-match", &format!("\"{version}\"")))
        .await;
    late.problem(412);
}
