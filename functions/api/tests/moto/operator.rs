//! The platform operator's routes against moto: a tenant's token refused on every one of them (the list
//! from the route table), tenants registered and changed (the settings the tenant's own requests are held
//! to), a suspended tenant's changes refused while its reads work, every operator change in the tenant's
//! audit log under the operator's `sub`, and clusters listed across tenants.

use crate::common;

use common::{Api, Req, call_with};
use lambda_http::http::{Method, StatusCode};
use serde_json::json;
use strato_api::route::Access;
use strato_api::routes::ROUTES;
use strato_domain::ids::TenantId;

fn method(m: &str) -> Method {
    m.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_token_is_refused_on_every_operator_route_and_the_operator_token_on_tenant_routes() {
    let api = Api::new().await;
    let ops = api.with_operator().await;
    let admin_routes: Vec<_> = ROUTES.iter().filter(|r| r.access == Access::Platform).collect();
    assert!(admin_routes.len() >= 10);
    for r in admin_routes {
        let path = r
            .path
            .replace("{tenant}", "acme")
            .replace("{name}", "api-test")
            .replace("{version}", "1.0.0");
        // A tenant's token, even one carrying `platform:admin` and the operator's audience.
        let mut req = Req::load("list-clusters")
            .query("")
            .method(method(r.method))
            .path(&path)
            .scope(Some("platform:admin admin"));
        if r.method != "GET" {
            req = req.body(&json!({"id": "acme"}));
        }
        let resp = call_with(&ops, req).await;
        assert_eq!(resp.status, StatusCode::FORBIDDEN, "{r:?}: {}", resp.text);
        assert!(resp.text.contains("platform operator"), "{r:?}: {}", resp.text);
    }
    // Nothing was registered by those attempts.
    assert!(
        api.ctx
            .store
            .tenant_record(&"acme".parse().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    // The operator's token names no tenant: a tenant route refuses it.
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/clusters")).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
    // Without an operator identity configured, even the operator's token is refused.
    let r = api.call(Req::operator(Method::GET, "/v1/admin/tenants")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn tenants_are_registered_changed_suspended_and_audited() {
    let api = Api::new().await;
    let ops = api.with_operator().await;
    let globex: TenantId = "globex".parse().unwrap();

    // Bad input is named field by field; nothing is registered.
    let r = call_with(
        &ops,
        Req::operator(Method::POST, "/v1/admin/tenants")
            .body(&json!({"id": "globex", "max_clusters": -1, "approval": "maybe"})),
    )
    .await;
    r.problem(422);
    assert_eq!(r.fields(), ["approval", "max_clusters"], "{}", r.text);
    assert!(api.ctx.store.tenant_record(&globex).await.unwrap().is_none());

    // Registered with a quota and a budget: the very settings the tenant's requests are held to.
    let body = json!({"id": "globex", "max_clusters": 1, "monthly_budget": 100});
    let r = call_with(&ops, Req::operator(Method::POST, "/v1/admin/tenants").body(&body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["max_clusters"], 1);
    assert_eq!(r.body["monthly_budget"], 100.0);
    let again = call_with(&ops, Req::operator(Method::POST, "/v1/admin/tenants").body(&body)).await;
    assert_eq!(again.status, StatusCode::OK, "idempotent by id: {}", again.text);
    assert_eq!(api.ctx.store.quotas(&globex).await.unwrap().max_clusters, 1);
    assert_eq!(api.ctx.store.monthly_budget(&globex).await.unwrap(), Some(100.0));
    api.create("globex", "first").await;
    let r = call_with(&ops, Api::create_req("second").tenant("globex")).await;
    assert_eq!(
        r.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the quota holds: {}",
        r.text
    );

    // Defaults changed by PATCH, read by the tenant's requests.
    let one = "/v1/admin/tenants/globex";
    let r = call_with(
        &ops,
        Req::operator(Method::PATCH, one)
            .body(&json!({"approval": "required", "max_ttl_hours": 48, "monthly_budget": null})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let rules = api.ctx.store.tenant_rules(&globex).await.unwrap();
    assert_eq!(rules.max_ttl_hours, Some(48));
    assert_eq!(
        rules.approval,
        Some(strato_domain::approval::ApprovalMode::Required)
    );
    assert_eq!(api.ctx.store.monthly_budget(&globex).await.unwrap(), None);
    let r = call_with(
        &ops,
        Req::operator(Method::PATCH, "/v1/admin/tenants/nobody").body(&json!({"max_clusters": 2})),
    )
    .await;
    r.problem(404);

    // Suspended: changes refused with the reason, reads still work; resumed: changes work again.
    let r = call_with(
        &ops,
        Req::operator(Method::PATCH, one)
            .body(&json!({"suspended": true, "reason": "invoice overdue", "max_clusters": 5})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["suspended"], true);
    let refused = call_with(&ops, Api::create_req("third").tenant("globex")).await;
    let p = refused.problem(403);
    assert!(
        p["detail"].as_str().unwrap().contains("invoice overdue"),
        "{}",
        refused.text
    );
    let list = call_with(&ops, Req::load("list-clusters").query("").tenant("globex")).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text);
    // Another tenant is not affected.
    api.create("acme", "unaffected").await;
    let r = call_with(
        &ops,
        Req::operator(Method::PATCH, one).body(&json!({"suspended": false})),
    )
    .await;
    assert_eq!(r.body["suspended"], false, "{}", r.text);
    let r = call_with(&ops, Api::create_req("third").tenant("globex")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);

    // Listed, and its clusters across tenants.
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/tenants").query("limit=100"),
    )
    .await;
    let ids = r.each("tenants", "id");
    assert!(ids.contains(&"globex") && ids.contains(&"acme"), "{}", r.text);
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/clusters").query("tenant=globex"),
    )
    .await;
    let names = r.each("clusters", "name");
    assert_eq!(names.len(), 2, "{}", r.text);
    assert!(names.contains(&"first") && names.contains(&"third"), "{}", r.text);
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/clusters").query("limit=100"),
    )
    .await;
    let tenants = r.each("clusters", "tenant");
    assert!(
        tenants.contains(&"globex") && tenants.contains(&"acme"),
        "{}",
        r.text
    );
    assert!(
        r.body["clusters"][0].get("variables").is_none(),
        "the tenant's variables are not listed"
    );
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/clusters").query("template=nope&limit=100"),
    )
    .await;
    assert_eq!(r.body["clusters"].as_array().unwrap().len(), 0, "{}", r.text);

    // Operations across tenants: globex's creates, filtered by tenant and kind, none of their specs.
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/operations").query("tenant=globex&kind=create&limit=100"),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let listed = r.body["operations"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{}", r.text);
    assert!(
        listed
            .iter()
            .all(|o| o["tenant"] == "globex" && o["kind"] == "create" && o["status"] == "queued"),
        "{}",
        r.text
    );
    assert!(listed[0].get("spec").is_none(), "the tenant's spec is not listed");
    let r = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/operations").query("status=failed&tenant=globex&limit=100"),
    )
    .await;
    assert_eq!(r.body["operations"].as_array().unwrap().len(), 0, "{}", r.text);
    let bad = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/operations").query("status=sleeping"),
    )
    .await;
    let p = bad.problem(422);
    assert_eq!(p["errors"][0]["field"], "status", "{}", bad.text);

    // Every operator change that named the tenant (both creates, the three PATCHes; not the refused create,
    // which answered no tenant) is in its audit log under the operator's sub: the operator reads it, and so
    // do the tenant's administrators.
    let r = call_with(
        &ops,
        Req::operator(Method::GET, &format!("{one}/audit")).query("actor=ops-1"),
    )
    .await;
    let actions = r.each("entries", "action");
    assert_eq!(
        actions,
        [
            "admin.tenant.update",
            "admin.tenant.update",
            "admin.tenant.update",
            "admin.tenant.create",
            "admin.tenant.create"
        ],
        "{}",
        r.text
    );
    let own = call_with(
        &ops,
        Req::load("list-audit").tenant("globex").query("actor=ops-1"),
    )
    .await;
    assert_eq!(own.body["entries"].as_array().unwrap().len(), 5, "{}", own.text);
}

/// A tenant's change reads the tenant item once: the suspension check (when this process has no recent
/// answer) reads it whole, and the change's policy check uses that read rather than a second one.
#[tokio::test(flavor = "multi_thread")]
async fn a_change_reads_the_tenant_item_once_for_its_suspension_and_its_policies() {
    let api = Api::new().await;
    let counter = strato_aws::aws::CallCounter::default();
    let svc = api.counted(&counter).await;
    let reads = || counter.snapshot().get("DynamoDB.GetItem").copied().unwrap_or(0);
    let create = |tenant: &str, name: &str| {
        let mut body = Req::load("create-cluster").body_value();
        body["name"] = json!(name);
        Req::load("create-cluster").tenant(tenant).body(&body)
    };

    // The process's first create also reads the template and its standing, once each (then remembered).
    let r = call_with(&svc, create("acme", "reads-1")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(
        reads(),
        3,
        "the tenant item, the template, its standing: {:?}",
        counter.snapshot()
    );

    // Another tenant: its item once.
    let r = call_with(&svc, create("globex", "reads-2")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(reads(), 4, "{:?}", counter.snapshot());

    // Its second change within the suspension's memory: the policy check's own (consistent) read, once.
    let r = call_with(&svc, create("globex", "reads-3")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(reads(), 5, "{:?}", counter.snapshot());
}
