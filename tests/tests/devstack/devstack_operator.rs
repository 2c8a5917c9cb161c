//! The platform operator through devstack, over the emulated API Gateway (whose JWT check accepts the
//! operator's audience) as a platform team drives it: two tenants registered with quotas and a budget, a
//! tenant's token refused on every operator route (the list from the route table), the quota holding the
//! tenant's own requests, a suspension refusing its changes and not its reads, the operator's changes in the
//! tenant's audit log, and `strato admin` printing tenants and clusters as tables.

use crate::devstack_support;

use std::process::Output;

use serde_json::json;
use strato_devstack::client::Client;

fn say(what: &str) {
    eprintln!("[devstack_operator] {what}");
}

/// `strato ARGS` against the stack with `token`, nothing inherited from the caller's STRATO_*.
async fn strato(config: &std::path::Path, endpoint: &str, token: &str, args: &[&str]) -> Output {
    devstack_support::strato_command(config, endpoint, token)
        .args(args)
        .output()
        .await
        .expect("strato runs")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_manages_tenants_a_tenant_token_passes_no_operator_route() {
    let stack = devstack_support::start(devstack_support::config("op").await).await;
    let http = &stack.endpoints.http_api;
    let ops = Client::new(http).with_token(stack.operator_token());

    say("two tenants registered with quotas and a budget");
    for (id, max) in [("north", 1), ("south", 3)] {
        let r = ops
            .post(
                "/v1/admin/tenants",
                &json!({"id": id, "max_clusters": max, "monthly_budget": 250}),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["max_clusters"], max);
    }

    say("a tenant's token, even an owner's, is refused on every operator route");
    let owner = Client::new(http).with_token(stack.token("north"));
    devstack_support::assert_operator_routes_refuse(&owner, "north").await;
    let r = ops.get("/v1/admin/tenants/north").await.unwrap();
    assert_eq!(r.body["max_clusters"], 1, "nothing changed: {}", r.text);
    // And the operator's token is nobody's tenant.
    assert_eq!(ops.get("/v1/clusters").await.unwrap().status, 401);

    say("the quota the operator set holds the tenant's requests; a suspension refuses its changes only");
    let spec = |name: &str| {
        json!({"name": name, "template": {"name": "no-such-template", "version": "1.0.0"},
               "provider": "aws", "region": "us-east-1", "variables": {}})
    };
    let r = ops
        .patch(
            "/v1/admin/tenants/north",
            &json!({"suspended": true, "reason": "contract ended"}),
        )
        .await
        .unwrap();
    assert_eq!(r.body["suspended"], true, "{}", r.text);
    let refused = owner.post("/v1/clusters", &spec("blocked")).await.unwrap();
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("contract ended"), "{}", refused.text);
    assert_eq!(owner.get("/v1/clusters").await.unwrap().status, 200);
    let south = Client::new(http).with_token(stack.token("south"));
    // Not suspended: its request is read (and refused for the template, 422), not blocked.
    assert_eq!(
        south.post("/v1/clusters", &spec("allowed")).await.unwrap().status,
        422
    );

    say("the operator's changes are in the tenant's audit log, under the operator's subject");
    let admin_audit = owner.get("/v1/audit?actor=dev-operator").await.unwrap();
    let actions: Vec<&str> = admin_audit.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["admin.tenant.update", "admin.tenant.create"],
        "{}",
        admin_audit.text
    );

    say("strato admin: tables of tenants and clusters");
    let cfg = tempfile::tempdir().unwrap();
    let token = stack.operator_token();
    let o = stdout(&strato(cfg.path(), http, &token, &["admin", "tenants", "list"]).await);
    assert!(o.contains("north") && o.contains("south"), "{o}");
    assert!(o.contains("suspended: contract ended"), "{o}");
    let o = stdout(
        &strato(
            cfg.path(),
            http,
            &token,
            &[
                "admin",
                "tenants",
                "set",
                "south",
                "--max-clusters",
                "7",
                "--approval",
                "required",
            ],
        )
        .await,
    );
    assert!(o.contains("0 of 7"), "{o}");
    assert_eq!(
        ops.get("/v1/admin/tenants/south").await.unwrap().body["approval"],
        "required"
    );
    let o = stdout(&strato(cfg.path(), http, &token, &["admin", "tenants", "resume", "north"]).await);
    assert!(o.contains("active"), "{o}");
    let o = stdout(
        &strato(
            cfg.path(),
            http,
            &token,
            &["admin", "clusters", "--tenant", "north"],
        )
        .await,
    );
    assert!(o.contains("TENANT"), "{o}");
    let o = stdout(
        &strato(
            cfg.path(),
            http,
            &token,
            &["admin", "operations", "--tenant", "north", "--kind", "create"],
        )
        .await,
    );
    // North never got a cluster (suspended, then a template refused): the table is empty. Its contents
    // are the api's moto test's; here the CLI's request and its refusal through the gateway.
    assert!(o.contains("STATUS") && o.contains("KIND"), "{o}");
    let o = strato(
        cfg.path(),
        http,
        &token,
        &["admin", "operations", "--kind", "explode"],
    )
    .await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("kind"), "{err}");

    say("strato-devstack publish is a client of the operator's publish route");
    let root = tempfile::tempdir().unwrap();
    let standins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates/standins");
    copy_dir(
        &standins.join("do-doks-standin"),
        &root.path().join("catalog/do-doks-standin"),
    );
    copy_dir(&standins.join("modules"), &root.path().join("modules"));
    let publish = || async {
        tokio::process::Command::new(strato_devstack::stack::sibling_binary("strato-devstack"))
            .args(["publish", "--api", http.as_str(), "--templates"])
            .arg(root.path())
            .env("STRATO_TOKEN", &token)
            .env("RUST_LOG", "warn")
            .output()
            .await
            .expect("strato-devstack runs")
    };
    let o = stdout(&publish().await);
    assert!(o.contains("published do-doks-standin@1.0.0"), "{o}");
    let listed = ops.get("/v1/admin/templates").await.unwrap();
    assert!(listed.text.contains("do-doks-standin"), "{}", listed.text);
    let o = stdout(&publish().await);
    assert!(o.contains("already published do-doks-standin@1.0.0"), "{o}");
    // The operator's publish is in the platform's audit log under the operator's subject.
    let platform = ops
        .get("/v1/admin/tenants/strato-platform/audit?actor=dev-operator")
        .await
        .unwrap();
    assert!(platform.text.contains("do-doks-standin"), "{}", platform.text);
    // A tenant's token publishes nothing.
    let o = tokio::process::Command::new(strato_devstack::stack::sibling_binary("strato-devstack"))
        .args(["publish", "--api", http.as_str(), "--templates"])
        .arg(root.path())
        .env("STRATO_TOKEN", stack.token("north"))
        .output()
        .await
        .unwrap();
    assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));

    // A tenant's token gets the CLI's auth exit code.
    let o = strato(
        cfg.path(),
        http,
        &stack.token("north"),
        &["admin", "tenants", "list"],
    )
    .await;
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    stack.shutdown(std::time::Duration::from_secs(5)).await;
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
