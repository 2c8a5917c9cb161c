//! A fleet rollout through devstack, as a platform team drives it over the public endpoints (the HTTP API
//! with an operator's and tenants' tokens, and the `strato` CLI): two tenants registered with quotas and a
//! budget, a tenant's token refused on every operator route, version 2 of a template published through the
//! operator's API; ten clusters on version 1 across the two tenants; a preview that names each cluster's
//! replacement and the fleet's cost delta and changes nothing; an apply in three waves in which one cluster
//! of the second wave fails at apply, pausing the rollout before the third wave with the reason; a resume
//! that leaves the failed cluster out and finishes; `rollout.paused` and `rollout.completed` webhooks.
//!
//! The template (`tests/fixtures/fleet-v1`, `fleet-v2`) is the cheapest that shows all of it on Terraform
//! 0.15 against moto: version 2 moves a subnet (replaced: a subnet's CIDR cannot change in place) and adds an
//! Elastic IP (the price table's public IPv4 address: +$3.65/month a cluster). The failing cluster is an
//! honest one: its `subnet_cidr` (a tag on version 1) lies outside the VPC, which version 2's plan accepts
//! and EC2 refuses at apply (InvalidSubnet.Range).

use crate::devstack_support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use devstack_support::fixtures;
use devstack_support::receiver::Receiver;
use serde_json::{Value, json};
use strato_devstack::DevstackConfig;
use strato_devstack::client::Client;

const TEMPLATE: &str = "fixture-fleet";
const REPLACED: &str = "module.fleet.aws_subnet.this";
const SECRET: &str = "whsec_ZmxlZXQtcm9sbG91dC13ZWJob29rLXNlY3JldA==";

fn say(what: &str) {
    eprintln!("[devstack_fleet] {what}");
}

/// `strato ARGS` against the stack with `token`, nothing inherited from the caller's STRATO_*.
async fn strato(config: &Path, endpoint: &str, token: &str, args: &[&str]) -> String {
    let o: Output = devstack_support::strato_command(config, endpoint, token)
        .args(args)
        .env("COLUMNS", "400")
        .output()
        .await
        .expect("strato runs");
    assert!(
        o.status.success(),
        "strato {args:?}: exit {:?}: {}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Polls the operator's view of `id` until `done` holds for it (a rollout moves by events: no call waits).
async fn wait_rollout(ops: &Client, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let r = ops
            .get(&format!("/v1/admin/rollouts/{id}?limit=200"))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        if done(&r.body) {
            return r.body;
        }
        assert!(Instant::now() < deadline, "{what}: never happened: {}", r.text);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The members of a rollout answer, by cluster id.
fn member<'a>(r: &'a Value, cluster: &str) -> &'a Value {
    r["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["cluster_id"] == cluster)
        .unwrap_or_else(|| panic!("{cluster} is not a member: {r}"))
}

fn copy_dir(from: &Path, to: &Path) {
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

/// One of the fleet: its tenant, name and id.
struct Member {
    tenant: &'static str,
    name: String,
    id: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fleet_previews_then_rolls_out_in_waves_that_pause_on_a_failure_and_resume() {
    let started = Instant::now();
    let f = fixtures();
    let stack = devstack_support::start(DevstackConfig {
        // Only the rollout's template, version 1: the catalog would add nothing here but publishing time.
        templates_root: None,
        extra_templates: vec![(f.join("fleet-v1/fleet"), f.join("fleet-v1"))],
        ..devstack_support::config("fleet").await
    })
    .await;
    assert_eq!(
        stack.published,
        [(TEMPLATE.to_owned(), "1.0.0".to_owned())],
        "{:?}",
        stack.published
    );
    let http = stack.endpoints.http_api.clone();
    let op_token = stack.operator_token();
    let ops = Client::new(&http).with_token(op_token.clone());
    let tenants = ["alpha", "bravo"];

    say("the operator registers two tenants with quotas and a monthly budget");
    for id in tenants {
        let r = ops
            .post(
                "/v1/admin/tenants",
                &json!({"id": id, "max_clusters": 6, "monthly_budget": 100}),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.body["max_clusters"], 6, "{}", r.text);
    }

    say("a tenant's token is refused on every operator route");
    let alpha = Client::new(&http).with_token(stack.token("alpha"));
    devstack_support::assert_operator_routes_refuse(&alpha, "alpha").await;
    let r = ops.get("/v1/admin/tenants/alpha").await.unwrap();
    assert_eq!(r.body["max_clusters"], 6, "nothing changed: {}", r.text);

    say("version 2 is published through the operator's API (strato-devstack publish --api)");
    let root = tempfile::tempdir().unwrap();
    copy_dir(
        &f.join("fleet-v2/fleet"),
        &root.path().join("catalog").join(TEMPLATE),
    );
    copy_dir(&f.join("fleet-v2/fleet"), &root.path().join("modules/fleet"));
    let o = tokio::process::Command::new(strato_devstack::stack::sibling_binary("strato-devstack"))
        .args(["publish", "--api", http.as_str(), "--templates"])
        .arg(root.path())
        .env("STRATO_TOKEN", &op_token)
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("strato-devstack runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("published fixture-fleet@2.0.0"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = alpha.get(&format!("/v1/templates/{TEMPLATE}")).await.unwrap();
    assert!(r.text.contains("2.0.0") && r.text.contains("1.0.0"), "{}", r.text);

    say("each tenant's webhook takes the rollout's events");
    let receiver = Receiver::start().await;
    for t in tenants {
        let r = Client::new(&http)
            .with_token(stack.token(t))
            .request(
                reqwest::Method::PUT,
                "/v1/webhook",
                Some(&json!({"url": receiver.url, "secret": SECRET,
                             "events": ["rollout.paused", "rollout.completed"]})),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
    }

    say("ten clusters on version 1, five per tenant; alpha's third has a subnet_cidr outside its VPC");
    let mut fleet: Vec<Member> = Vec::new();
    let mut creates = Vec::new();
    for t in tenants {
        let api = Client::new(&http).with_token(stack.token(t));
        for n in 1..=5 {
            let name = format!("{t}-{n}");
            let subnet = if name == "alpha-3" {
                "10.61.2.0/24"
            } else {
                "10.60.2.0/24"
            };
            // One at a time: ids are time-ordered, and a rollout takes a tenant's clusters oldest first.
            let (id, op, _) = api
                .create_cluster(&json!({
                    "name": name, "template": {"name": TEMPLATE, "version": "1.0.0"},
                    "provider": "aws", "region": "us-east-1",
                    "variables": {"subnet_cidr": subnet}
                }))
                .await
                .unwrap();
            creates.push((api.clone(), op));
            fleet.push(Member { tenant: t, name, id });
        }
    }
    for (api, op) in &creates {
        let done = api.wait_operation(op, Duration::from_secs(600)).await.unwrap();
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    let client = |m: &Member| Client::new(&http).with_token(stack.token(m.tenant));
    let failing = fleet.iter().find(|m| m.name == "alpha-3").unwrap().id.clone();
    let cfg = tempfile::tempdir().unwrap();
    let cli = |args: Vec<&str>| {
        let (cfg, http, token) = (cfg.path().to_owned(), http.clone(), op_token.clone());
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            strato(&cfg, &http, &token, &args).await
        }
    };

    say("a preview across both tenants with the apply's stop rules (strato rollouts --admin preview)");
    let started_preview = cli(vec![
        "rollouts",
        "--admin",
        "preview",
        TEMPLATE,
        "2.0.0",
        "--tenant",
        "alpha",
        "--tenant",
        "bravo",
        "--allow-replace",
        REPLACED,
        "-o",
        "json",
    ])
    .await;
    let preview: Value = serde_json::from_str(&started_preview).unwrap();
    let preview_id = preview["id"].as_str().unwrap().to_owned();
    assert_eq!(preview["mode"], "preview", "{preview}");
    let done = wait_rollout(&ops, &preview_id, "the preview ends", |r| r["phase"] != "running").await;
    assert_eq!(done["phase"], "completed", "{done}");
    for m in &fleet {
        let p = member(&done, &m.id);
        assert_eq!(p["status"], "planned", "{p}");
        assert_eq!(p["tenant_id"], m.tenant, "{p}");
        assert_eq!(p["replace"], json!([REPLACED]), "{}: {p}", m.name);
        assert_eq!(p["destroy"], json!([]), "{p}");
        // The Elastic IP's public IPv4 address: $0.005/h x 730 h.
        assert!((p["monthly_delta"].as_f64().unwrap() - 3.65).abs() < 0.001, "{p}");
    }
    assert_eq!(
        done["summary"]["text"],
        // Previewed with the apply's stop rules: the replacement is expected, so no cluster would be held.
        format!("10 clusters: 0 in place, 10 replace {REPLACED}, 0 destroy; +$36.50/month"),
        "{done}"
    );
    assert!((done["summary"]["monthly_delta"].as_f64().unwrap() - 36.5).abs() < 0.001);
    let shown = cli(vec!["rollouts", "--admin", "get", &preview_id]).await;
    assert!(shown.contains("+$36.50/month"), "{shown}");
    for m in &fleet {
        let row = shown
            .lines()
            .find(|l| l.contains(&m.id))
            .unwrap_or_else(|| panic!("{} not in the table: {shown}", m.id));
        assert!(row.contains(REPLACED) && row.contains("+$3.65"), "{row}");
    }
    say("nothing changed: every cluster on 1.0.0, no update among its operations");
    for m in &fleet {
        let api = client(m);
        let c = api.get(&format!("/v1/clusters/{}", m.id)).await.unwrap();
        assert_eq!(c.body["template"]["version"], "1.0.0", "{}", c.text);
        assert_eq!(c.body["state"], "ACTIVE", "{}", c.text);
        let o = api
            .get(&format!("/v1/clusters/{}/operations", m.id))
            .await
            .unwrap();
        let mut kinds: Vec<&str> = o.body["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["kind"].as_str().unwrap())
            .collect();
        kinds.sort();
        assert_eq!(
            kinds,
            ["create", "plan"],
            "its create and the preview's plan only: {}",
            o.text
        );
    }

    say("an apply in three waves (1, 50%, 100%) allowing the subnet's replacement");
    let started_apply = cli(vec![
        "rollouts",
        "--admin",
        "start",
        TEMPLATE,
        "2.0.0",
        "--tenant",
        "alpha",
        "--tenant",
        "bravo",
        "--waves",
        "1,50%,100%",
        "--allow-replace",
        REPLACED,
        "-o",
        "json",
    ])
    .await;
    let apply: Value = serde_json::from_str(&started_apply).unwrap();
    let apply_id = apply["id"].as_str().unwrap().to_owned();
    // Members by tenant, then oldest first: alpha-1 | alpha-2..5 | bravo-1..5.
    for (m, wave) in fleet.iter().zip([0, 1, 1, 1, 1, 2, 2, 2, 2, 2]) {
        assert_eq!(member(&apply, &m.id)["wave"], wave, "{}: {apply}", m.name);
    }
    let paused = wait_rollout(&ops, &apply_id, "the failure pauses the rollout", |r| {
        r["phase"] != "running"
    })
    .await;
    assert_eq!(paused["phase"], "paused", "{paused}");
    assert_eq!(paused["wave"], 1, "paused in the second wave: {paused}");
    let reason = paused["pause_reason"].as_str().unwrap();
    assert!(
        reason.contains(&failing) && reason.contains("failed"),
        "the reason names the cluster and its failure: {reason}"
    );
    // The runs in flight when it paused end and are recorded; nothing new starts.
    let settled = wait_rollout(&ops, &apply_id, "the second wave's runs end", |r| {
        r["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["status"] != "planning" && m["status"] != "upgrading")
    })
    .await;
    assert_eq!(settled["phase"], "paused", "{settled}");
    let failed = member(&settled, &failing);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["reason"].as_str().unwrap().contains("InvalidSubnet.Range"),
        "{failed}"
    );
    for m in fleet.iter().filter(|m| m.tenant == "bravo") {
        assert_eq!(member(&settled, &m.id)["status"], "pending", "{settled}");
        let c = client(m).get(&format!("/v1/clusters/{}", m.id)).await.unwrap();
        assert_eq!(
            c.body["template"]["version"], "1.0.0",
            "the third wave is untouched: {}",
            c.text
        );
    }
    assert_eq!(member(&settled, &fleet[0].id)["status"], "upgraded", "{settled}");
    let shown = cli(vec!["rollouts", "--admin", "get", &apply_id]).await;
    assert!(
        shown.contains("paused (cluster") && shown.contains(&failing),
        "{shown}"
    );
    let alpha3 = fleet.iter().find(|m| m.id == failing).unwrap();
    let c = client(alpha3)
        .get(&format!("/v1/clusters/{failing}"))
        .await
        .unwrap();
    say(&format!(
        "paused: {reason}\n  the failed cluster: {} on {}",
        c.body["state"], c.body["template"]["version"]
    ));
    // A failed update leaves the cluster FAILED on the version it was on (a retry, or a fix, is its owner's).
    assert_eq!(c.body["state"], "FAILED", "{}", c.text);
    assert_eq!(c.body["template"]["version"], "1.0.0", "{}", c.text);

    say("resume, leaving the failed cluster out (strato rollouts --admin resume --skip-failed)");
    cli(vec!["rollouts", "--admin", "resume", &apply_id, "--skip-failed"]).await;
    let done = wait_rollout(&ops, &apply_id, "the rollout completes", |r| {
        r["phase"] != "running"
    })
    .await;
    assert_eq!(done["phase"], "completed", "{done}");
    assert_eq!(member(&done, &failing)["status"], "skipped", "{done}");
    for m in fleet.iter().filter(|m| m.id != failing) {
        assert_eq!(member(&done, &m.id)["status"], "upgraded", "{}: {done}", m.name);
        let c = client(m)
            .wait_cluster_state(&m.id, &["ACTIVE"], Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(c["template"]["version"], "2.0.0", "{c}");
    }
    let c = client(alpha3)
        .get(&format!("/v1/clusters/{failing}"))
        .await
        .unwrap();
    assert_eq!(
        (&c.body["state"], &c.body["template"]["version"]),
        (&json!("FAILED"), &json!("1.0.0")),
        "the skipped cluster is left as it was: {}",
        c.text
    );
    assert_eq!(done["summary"]["upgraded"], 9, "{done}");
    assert_eq!(done["summary"]["skipped"], 1, "{done}");
    let shown = cli(vec!["rollouts", "--admin", "get", &apply_id]).await;
    assert!(
        shown.contains("completed") && shown.contains("skipped"),
        "{shown}"
    );

    say("each tenant heard rollout.paused (with the reason) and rollout.completed");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got: Vec<(String, String)> = receiver
            .deliveries(SECRET)
            .into_iter()
            .filter(|d| d.envelope.data["rollout_id"] == apply_id.as_str())
            .map(|d| (d.envelope.kind, d.envelope.data["reason"].to_string()))
            .collect();
        let paused = got
            .iter()
            .filter(|(k, r)| k == "rollout.paused" && r.contains(&failing));
        let completed = got.iter().filter(|(k, _)| k == "rollout.completed");
        if paused.count() >= 2 && completed.count() >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "webhooks: {got:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    say(&format!("done in {:.0?}", started.elapsed()));
    stack.shutdown(Duration::from_secs(10)).await;
}
