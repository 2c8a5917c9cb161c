//! The audit log through the API (issue 22), on moto: every mutating call is recorded with its caller and
//! outcome — refused ones too — and `GET /v1/audit` shows an admin their own tenant's entries only,
//! filtered and paginated.

use crate::common;

use common::{Api, Req};
use serde_json::Value;

const ADMIN: Option<&str> = Some("admin");

async fn audit(api: &Api, tenant: &str, query: &str) -> common::Resp {
    api.call(Req::load("list-audit").query(query).tenant(tenant).scope(ADMIN))
        .await
}

fn entries(r: &common::Resp) -> &Vec<Value> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["entries"].as_array().unwrap()
}

#[tokio::test]
async fn creates_and_refused_deletes_are_recorded_for_their_tenant_only() {
    let api = Api::new().await;
    let r = api
        .call(Api::create_req("acme-audited").tenant("acme").sub("alice"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let oid = r.body["operation"]["id"].as_str().unwrap().to_owned();
    // A viewer's delete: refused (403), recorded as such, with the cluster it aimed at.
    let r = api
        .call(
            Req::load("delete-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .tenant("acme")
                .sub("victor")
                .scope(Some("clusters:read")),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    // Another tenant's own change, and a read (not recorded).
    api.create("globex", "globex-one").await;
    api.call(Req::load("list-clusters").query("").tenant("acme"))
        .await;

    let r = audit(&api, "acme", "").await;
    let got = entries(&r);
    assert_eq!(got.len(), 2, "{}", r.text);
    // Newest first: the refused delete, then the create.
    let (delete, create) = (&got[0], &got[1]);
    assert_eq!(delete["action"], "cluster.delete");
    assert_eq!(delete["actor"], "victor");
    assert_eq!(delete["outcome"], "refused");
    assert_eq!(delete["status"], 403);
    assert_eq!(delete["cluster_id"], cid.as_str());
    assert!(delete["detail"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(create["action"], "cluster.create");
    assert_eq!(create["actor"], "alice");
    // Accepted, not succeeded: the operation it queued may still fail (its end is its own entry).
    assert_eq!(create["outcome"], "accepted");
    assert_eq!(create["status"], 202);
    assert_eq!(
        create["cluster_id"],
        cid.as_str(),
        "the new cluster's id, from the answer"
    );
    assert_eq!(create["operation_id"], oid.as_str());
    assert_eq!(
        create["request_id"], "cM1a8gzHIAMEbKw=",
        "the sample's API Gateway request id"
    );
    assert!(r.body["next"].is_null());

    // globex sees its own entry only.
    let r = audit(&api, "globex", "").await;
    let got = entries(&r);
    assert_eq!(got.len(), 1, "{}", r.text);
    assert!(!r.text.contains(&cid) && !r.text.contains("alice"));

    // Filters: by actor, by cluster, by time.
    let r = audit(&api, "acme", "actor=alice").await;
    assert_eq!(entries(&r).len(), 1);
    assert_eq!(entries(&r)[0]["action"], "cluster.create");
    let r = audit(&api, "acme", &format!("cluster={cid}")).await;
    assert_eq!(entries(&r).len(), 2, "{}", r.text);
    let r = audit(&api, "acme", &format!("cluster={cid}&actor=victor")).await;
    assert_eq!(entries(&r).len(), 1, "{}", r.text);
    let r = audit(&api, "acme", "since=2099-01-01T00:00:00Z").await;
    assert!(entries(&r).is_empty());
    let r = audit(&api, "acme", "since=1h").await;
    assert_eq!(entries(&r).len(), 2);
}

#[tokio::test]
async fn pages_continue_with_the_opaque_token_and_bad_parameters_are_named() {
    let api = Api::new().await;
    for i in 0..5 {
        let r = api
            .call(Api::create_req(&format!("acme-page-{i}")).tenant("acme"))
            .await;
        assert_eq!(r.status, 202, "{}", r.text);
    }
    let mut seen = Vec::new();
    let mut query = "limit=2".to_owned();
    for _ in 0..10 {
        let r = audit(&api, "acme", &query).await;
        let got = entries(&r);
        assert!(got.len() <= 2);
        seen.extend(got.iter().map(|e| e["cluster_id"].as_str().unwrap().to_owned()));
        match r.body["next"].as_str() {
            Some(next) => query = format!("limit=2&next={next}"),
            None => break,
        }
    }
    seen.dedup();
    assert_eq!(seen.len(), 5, "each create once: {seen:?}");

    let r = audit(&api, "acme", "since=yesterday&limit=0").await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.fields(), ["since", "limit"]);
    let r = audit(&api, "acme", "next=not-a-token").await;
    assert_eq!(r.fields(), ["next"]);
    // The audit log is an admin's: a writer is refused.
    let r = api
        .call(
            Req::load("list-audit")
                .query("")
                .scope(Some("clusters:write clusters:read")),
        )
        .await;
    assert!(r.problem(403)["detail"].as_str().unwrap().contains("admin"));
}
