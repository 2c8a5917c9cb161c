//! Drift and recovery end to end through devstack (one stack for the whole file; the real runner and the
//! offline engine against moto; the drift-check and sweeper schedules fire every 2 s):
//!
//! - drift made out of band (a VPC tag changed with the EC2 API) is found by the next scheduled check,
//!   reported over WebSocket (status frame) and to the tenant's webhook (HMAC-signed, verified here);
//! - a clean cluster checked on the same run reports no drift and calls no webhook (that a clean
//!   `aws-eks-basic` cluster shows no drift, the node-group quirk included, is devstack_lifecycle's);
//! - under `reconcile`, drift (a security-group rule added out of band) is repaired by an update and the next
//!   check is clean;
//! - an operation written but never enqueued (the create/enqueue gap) is dispatched by the sweeper;
//! - a state object overwritten with garbage makes the next operation fail with "state unreadable" (what,
//!   step, fix), and restoring the previous version through the API makes the retry succeed;
//! - a runner killed mid-apply leaves a Terraform state lock that the sweeper releases (noted on the
//!   operation) before any retry; the retry then succeeds.
//!
//! Each step's cluster is prepared through the store where the API has no knob (drift policy, next check
//! time); everything observed is observed through the public endpoints.

use crate::devstack_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use devstack_support::fixtures;
use devstack_support::receiver::Receiver;
use serde_json::{Value, json};
use strato_aws::coordination::update_cluster;
use strato_aws::state_lock;
use strato_aws::store::Store;
use strato_devstack::client::{Client, watch_operation};
use strato_devstack::moto_ctl::{ec2_call, xml_values};
use strato_devstack::{Devstack, DevstackConfig};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{DriftPolicy, Operation, OperationKind};
use strato_domain::ts;
use strato_domain::webhook::{self, DriftEvent, Webhook};

const TENANT: &str = "acme";
const SECRET: &str = "whsec-e2e-0f343b0931126a20";
const OP_TIMEOUT: Duration = Duration::from_secs(300);

async fn start() -> Devstack {
    let fixtures = fixtures();
    devstack_support::start(DevstackConfig {
        extra_templates: vec![
            (fixtures.join("vpc-sg"), fixtures.clone()),
            (fixtures.join("hold-apply"), fixtures),
        ],
        drift_rate: Duration::from_secs(2),
        sweep_rate: Duration::from_secs(2),
        sweep_grace: Duration::from_secs(3),
        record_aws_calls: true,
        ..devstack_support::config("dr").await
    })
    .await
}

/// The verified drift events `receiver` got so far (a bad signature on any call fails the test; the
/// lifecycle events beside them are left out).
fn drift_events(receiver: &Receiver) -> Vec<DriftEvent> {
    receiver
        .deliveries(SECRET)
        .into_iter()
        .filter(|d| d.envelope.kind == webhook::DRIFT_DETECTED)
        .map(|d| serde_json::from_value(d.envelope.data).unwrap())
        .collect()
}

struct T {
    stack: Devstack,
    api: Client,
    store: Store,
    tenant: TenantId,
}

impl T {
    fn say(&self, what: &str) {
        eprintln!("[devstack_drift] {what}");
    }

    async fn create(&self, body: Value) -> (String, String) {
        let (cluster, op, _) = self.api.create_cluster(&body).await.unwrap();
        (cluster, op)
    }

    async fn wait_ok(&self, op: &str) -> Value {
        let done = self.api.wait_operation(op, OP_TIMEOUT).await.unwrap();
        assert_eq!(done["status"], "succeeded", "{done}");
        done
    }

    async fn cluster(&self, id: &str) -> Value {
        let r = self.api.get(&format!("/v1/clusters/{id}")).await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn operations(&self, cluster: &str) -> Vec<Value> {
        let r = self
            .api
            .get(&format!("/v1/clusters/{cluster}/operations"))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["operations"].as_array().cloned().unwrap_or_default()
    }

    async fn op_ids(&self, cluster: &str) -> BTreeSet<String> {
        self.operations(cluster)
            .await
            .iter()
            .map(|o| o["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Waits for an operation of `kind` on `cluster` that is not in `known`.
    async fn new_op(&self, cluster: &str, kind: &str, known: &BTreeSet<String>, within: Duration) -> Value {
        let start = Instant::now();
        loop {
            if let Some(o) = self
                .operations(cluster)
                .await
                .into_iter()
                .find(|o| o["kind"] == kind && !known.contains(o["id"].as_str().unwrap_or_default()))
            {
                return o;
            }
            assert!(
                start.elapsed() < within,
                "no new {kind} operation on {cluster} within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Edits the cluster record where the API has no knob (drift policy, when the next check is due).
    async fn edit(&self, cluster: &str, f: impl Fn(&mut strato_domain::model::Cluster)) {
        let id: ClusterId = cluster.parse().unwrap();
        update_cluster(&self.store, &self.tenant, &id, |c| {
            f(c);
            Ok(true)
        })
        .await
        .unwrap();
    }

    /// Makes `cluster`'s scheduled check due now: the next drift schedule tick queues it.
    async fn due_now(&self, cluster: &str) {
        self.edit(cluster, |c| {
            c.next_drift_check_at = Some(ts::format(ts::now()));
        })
        .await;
    }

    /// Follows an operation over the WebSocket API to its end; the status frames' messages and the log.
    async fn follow(&self, op: &str) -> (Vec<String>, Vec<String>) {
        let ws = self.stack.endpoints.websocket.clone().unwrap();
        // The WebSocket API takes tickets only (issue 16 finding 6): the follower trades the token for one.
        let w = watch_operation(&self.api, &ws, op, OP_TIMEOUT, |_| {}, |_, _, _| {})
            .await
            .unwrap_or_else(|e| panic!("following {op}: {e}"));
        let lines = w.lines.values().map(|l| l.text.clone()).collect();
        (w.states.into_iter().filter_map(|(_, _, m)| m).collect(), lines)
    }

    async fn ec2(&self, action: &str, params: &[(&str, &str)]) -> String {
        ec2_call(
            &self.stack.env.http,
            &self.stack.endpoints.aws,
            &self.stack.env.region,
            action,
            params,
        )
        .await
        .unwrap()
    }

    async fn drift_check_now(&self, cluster: &str) -> String {
        let r = self
            .api
            .post(&format!("/v1/clusters/{cluster}/drift-check"), &json!({}))
            .await
            .unwrap();
        assert_eq!(r.status, 202, "{}", r.text);
        r.body["operation"]["id"].as_str().unwrap().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_is_found_on_schedule_reported_repaired_and_state_and_dispatch_recover() {
    let t0 = Instant::now();
    let stack = start().await;
    let t = T {
        api: Client::new(&stack.endpoints.http_api).with_token(stack.token(TENANT)),
        store: Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names),
        tenant: TENANT.parse().unwrap(),
        stack,
    };
    let receiver = Receiver::start().await;
    t.store
        .set_tenant_webhook(&t.tenant, Some(&Webhook::new(&receiver.url, SECRET).unwrap()))
        .await
        .unwrap();

    // Two clusters of the small VPC + security group, built concurrently: one will drift, one stays clean.
    t.say("creating two vpc-sg clusters");
    let (x, x_create) = t
        .create(
            json!({"name": "drifty", "template": {"name": "fixture-vpc-sg", "version": "0.1.0"},
            "provider": "aws", "region": "us-east-1", "variables": {"tags": {"team": "platform"}}}),
        )
        .await;
    let (steady, steady_create) = t
        .create(
            json!({"name": "steady", "template": {"name": "fixture-vpc-sg", "version": "0.1.0"},
            "provider": "aws", "region": "us-east-1", "variables": {"tags": {"team": "platform"}}}),
        )
        .await;
    t.wait_ok(&x_create).await;
    t.wait_ok(&steady_create).await;
    let xc = t.cluster(&x).await;
    assert_eq!(xc["state"], "ACTIVE", "{xc}");
    let vpc = xc["outputs"]["vpc_id"].as_str().unwrap().to_owned();
    let sg = xc["outputs"]["security_group_id"].as_str().unwrap().to_owned();
    t.say(&format!("both ACTIVE after {:?}", t0.elapsed()));

    // ---- (a) + (c): out-of-band drift found by the next scheduled run; the clean cluster stays clean ----
    t.ec2(
        "CreateTags",
        &[
            ("ResourceId.1", &vpc),
            ("Tag.1.Key", "team"),
            ("Tag.1.Value", "rogue"),
        ],
    )
    .await;
    let (x_known, steady_known) = (t.op_ids(&x).await, t.op_ids(&steady).await);
    t.due_now(&x).await;
    t.due_now(&steady).await;
    let x_check = t
        .new_op(&x, "drift-check", &x_known, Duration::from_secs(60))
        .await;
    assert_eq!(x_check["requested_by"], "strato:scheduler", "{x_check}");
    let x_check = x_check["id"].as_str().unwrap().to_owned();
    let (messages, log) = t.follow(&x_check).await;
    // fixture-vpc-sg pins its provider: the engine installed it from the template's lock file, read-only.
    assert!(
        log.iter()
            .any(|l| l.contains("Reusing previous version of hashicorp/aws from the dependency lock file")),
        "init kept to the template's lock file: {log:#?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("drift detected in 1 resource(s): module.vpc-sg.aws_vpc.this (update)")),
        "the drift reaches WebSocket subscribers as a status frame: {messages:?}"
    );
    let xc = t.cluster(&x).await;
    assert_eq!(xc["drift"]["drifted"], true, "{xc}");
    assert_eq!(
        xc["drift"]["changed_resources"],
        json!([{"address": "module.vpc-sg.aws_vpc.this", "actions": ["update"]}])
    );
    // The tenant's webhook got it, signed (verified in `events`), once. It is called after the end frame,
    // so it may land a moment after the stream ended.
    let start = Instant::now();
    while drift_events(&receiver).is_empty() && start.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events = drift_events(&receiver);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].cluster_id.as_str(), x);
    assert_eq!(events[0].operation_id.as_str(), x_check);
    assert_eq!(
        events[0].changed_resources[0].address,
        "module.vpc-sg.aws_vpc.this"
    );
    t.wait_ok(&x_check).await;
    let start = Instant::now();
    loop {
        let op = t.api.get(&format!("/v1/operations/{x_check}")).await.unwrap();
        if op.text.contains("webhook drift.detected delivered") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the webhook's outcome is recorded on the check: {}",
            op.text
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let steady_check = t
        .new_op(&steady, "drift-check", &steady_known, Duration::from_secs(60))
        .await;
    let steady_check = steady_check["id"].as_str().unwrap().to_owned();
    t.wait_ok(&steady_check).await;
    let ec = t.cluster(&steady).await;
    assert_eq!(
        ec["drift"]["drifted"], false,
        "a clean cluster shows no drift: {ec}"
    );
    assert!(ec["drift"]["checked_at"].is_string(), "{ec}");
    assert_eq!(drift_events(&receiver).len(), 1, "a clean check calls no webhook");
    t.say(&format!("(a)+(c) done after {:?}", t0.elapsed()));

    // ---- (b) reconcile: a security-group rule added out of band is removed by a reconcile update ----
    t.ec2(
        "AuthorizeSecurityGroupIngress",
        &[
            ("GroupId", &sg),
            ("IpPermissions.1.IpProtocol", "tcp"),
            ("IpPermissions.1.FromPort", "22"),
            ("IpPermissions.1.ToPort", "22"),
            ("IpPermissions.1.IpRanges.1.CidrIp", "0.0.0.0/0"),
        ],
    )
    .await;
    t.edit(&x, |c| c.drift_policy = DriftPolicy::Reconcile).await;
    let known = t.op_ids(&x).await;
    t.due_now(&x).await;
    let check = t.new_op(&x, "drift-check", &known, Duration::from_secs(60)).await;
    let check = check["id"].as_str().unwrap().to_owned();
    t.wait_ok(&check).await;
    let xc = t.cluster(&x).await;
    let changed = xc["drift"]["changed_resources"].to_string();
    assert!(
        changed.contains("module.vpc-sg.aws_security_group.nodes")
            && changed.contains("module.vpc-sg.aws_vpc.this"),
        "{xc}"
    );
    let update = t.new_op(&x, "update", &known, Duration::from_secs(30)).await;
    assert_eq!(update["requested_by"], "strato:drift-reconcile", "{update}");
    t.wait_ok(update["id"].as_str().unwrap()).await;
    let rules = t.ec2("DescribeSecurityGroups", &[("GroupId.1", &sg)]).await;
    assert!(
        !xml_values(&rules, "fromPort").contains(&"22".to_owned()),
        "the rogue rule is gone: {rules}"
    );
    let known = t.op_ids(&x).await;
    t.due_now(&x).await;
    let check = t.new_op(&x, "drift-check", &known, Duration::from_secs(60)).await;
    t.wait_ok(check["id"].as_str().unwrap()).await;
    let xc = t.cluster(&x).await;
    assert_eq!(xc["drift"]["drifted"], false, "repaired: {xc}");
    assert_eq!(
        drift_events(&receiver).len(),
        1,
        "reconcile repairs instead of notifying"
    );
    t.say(&format!("(b) done after {:?}", t0.elapsed()));

    // ---- (d) an operation written but never enqueued is dispatched by the sweeper ----
    let mut lost = Operation::new(
        t.tenant.clone(),
        x.parse().unwrap(),
        OperationKind::DriftCheck,
        ts::now(),
    );
    lost.requested_by = Some("test:create-enqueue-gap".into());
    let quotas = t.store.quotas(&t.tenant).await.unwrap();
    t.store.add_operation(&lost, &quotas).await.unwrap().unwrap();
    // Nothing was sent to jobs.fifo; only the sweeper can start it.
    let done = t.wait_ok(lost.operation_id.as_str()).await;
    assert_eq!(done["requested_by"], "test:create-enqueue-gap");
    t.say(&format!("(d) done after {:?}", t0.elapsed()));

    // ---- (e) corrupted state → "state unreadable"; restoring the previous version makes a retry succeed ----
    let r = t
        .api
        .get(&format!("/v1/clusters/{x}/state-versions"))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let good = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["is_latest"] == true)
        .unwrap_or_else(|| panic!("a current state version: {}", r.text))
        .clone();
    let stage = good["stage"].as_str().unwrap();
    let key = format!("tenants/{TENANT}/clusters/{x}/{stage}.tfstate");
    t.stack
        .env
        .aws
        .s3
        .put_object()
        .bucket(t.stack.env.names.bucket("state"))
        .key(&key)
        .body(aws_sdk_s3::primitives::ByteStream::from_static(
            b"\x00\x01 this is not a terraform state {{{",
        ))
        .send()
        .await
        .unwrap();
    let broken = t.drift_check_now(&x).await;
    let failed = t.api.wait_operation(&broken, OP_TIMEOUT).await.unwrap();
    assert_eq!(failed["status"], "failed", "{failed}");
    let err = &failed["error"];
    assert_eq!(err["category"], "state_unreadable", "{failed}");
    assert!(
        err["what"]
            .as_str()
            .unwrap()
            .contains("Terraform state is unreadable"),
        "{err}"
    );
    assert!(err["step"].as_str().is_some_and(|s| !s.is_empty()), "{err}");
    assert!(err["fix"].as_str().unwrap().contains("state-versions"), "{err}");
    assert_eq!(
        t.cluster(&x).await["state"],
        "ACTIVE",
        "a failed check changes no state"
    );

    let r = t
        .api
        .post(
            &format!(
                "/v1/clusters/{x}/state-versions/{}/restore",
                good["version_id"].as_str().unwrap()
            ),
            &json!({}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["from_version"], good["version_id"]);
    let retry = t.drift_check_now(&x).await;
    t.wait_ok(&retry).await;
    let xc = t.cluster(&x).await;
    assert_eq!(xc["drift"]["drifted"], false, "{xc}");
    let r = t
        .api
        .get(&format!("/v1/clusters/{x}/state-versions"))
        .await
        .unwrap();
    assert_eq!(
        r.body["restores"][0]["from_version"], good["version_id"],
        "{}",
        r.text
    );
    t.say(&format!("(e) done after {:?}", t0.elapsed()));

    // ---- (f) a runner killed mid-apply leaves its state lock; the sweeper clears it; a retry succeeds ----
    let hold = tempfile::tempdir().unwrap();
    let (k, k_create) = t
        .create(
            json!({"name": "killed", "template": {"name": "fixture-hold-apply", "version": "0.1.0"},
            "provider": "aws", "region": "us-east-1",
            "variables": {"hold_dir": hold.path().display().to_string()}}),
        )
        .await;
    // The apply created the VPC and waits in its provisioner, holding the state lock: kill it there.
    let deadline = Instant::now() + OP_TIMEOUT;
    while !hold.path().join("reached").exists() {
        assert!(Instant::now() < deadline, "the apply never got half-way");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    t.stack.kill_runner(&k_create).expect("the runner is running");
    let failed = t.api.wait_operation(&k_create, OP_TIMEOUT).await.unwrap();
    assert_eq!(failed["status"], "failed", "{failed}");
    t.api
        .wait_cluster_state(&k, &["FAILED"], Duration::from_secs(60))
        .await
        .unwrap();
    // With nothing open on the cluster any more, the sweeper releases the dead run's lock and says so on
    // the operation; no retry has run yet.
    let lock_id = state_lock::lock_id(
        &t.stack.env.names.bucket("state"),
        &format!("tenants/{TENANT}/clusters/{k}/main.tfstate"),
    );
    let start = Instant::now();
    let noted = loop {
        let op = t.api.get(&format!("/v1/operations/{k_create}")).await.unwrap();
        let note = op.body["notes"].as_array().and_then(|n| {
            n.iter()
                .filter_map(Value::as_str)
                .find(|n| n.contains("the sweeper released Terraform state lock"))
                .map(str::to_owned)
        });
        if let Some(n) = note {
            break n;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the sweeper did not release the killed run's state lock: {}",
            op.text
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(noted.contains(&lock_id), "{noted}");
    let table = t.stack.env.names.table("tf-locks");
    assert!(
        state_lock::held(&t.stack.env.aws.dynamodb, &table, &lock_id)
            .await
            .unwrap()
            .is_none(),
        "the lock item is gone"
    );
    assert_eq!(t.op_ids(&k).await.len(), 1, "released before any retry");
    std::fs::write(hold.path().join("release"), b"").unwrap();
    let r = t
        .api
        .post(&format!("/v1/clusters/{k}/retry"), &json!({}))
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    t.wait_ok(r.body["operation"]["id"].as_str().unwrap()).await;
    t.api
        .wait_cluster_state(&k, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    t.say(&format!("(f) done after {:?}", t0.elapsed()));

    // Drift notices, webhook deliveries, the sweeper and the state restore: each call is on its function's list.
    devstack_support::assert_aws_calls_listed(
        &t.stack,
        &[
            "api",
            "dispatcher",
            "status",
            "ws",
            "log-fanout",
            "scheduler",
            "webhooks",
            "runner",
        ],
    );
    t.stack.shutdown(Duration::from_secs(10)).await;
}
