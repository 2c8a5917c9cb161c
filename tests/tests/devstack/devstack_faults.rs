//! Fault injection through devstack (issue 15): three tenants create, update and delete four clusters each
//! (about 36 operations) while every SQS delivery may be delayed or delivered twice, the status function
//! errors on a fraction of its batches (before or after doing its work), and runners are SIGKILLed at a
//! random moment of their run. Afterwards every operation must be finished, every cluster at rest in a state
//! the state machine allows, no cluster lock, tenant slot or Terraform state lock held, and every dead-letter
//! queue empty. Prints the seed (`STRATO_CHAOS_SEED` replays a run) and the figures.
//!
//! Beside them a fourth tenant rolls its fleet out to a new template version in two waves, under the same
//! faults (and errors of the api's `rollouts` consumer): the rollout must end — resumed past what failed,
//! as an operator would — with every cluster it calls upgraded on the new version, and no cluster updated
//! twice by it.

use crate::devstack_support;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use devstack_support::fixtures;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use strato_aws::ports::DynamoStateLocks;
use strato_aws::store::{Quotas, Store};
use strato_devstack::chaos::Chaos;
use strato_devstack::client::Client;
use strato_devstack::{Devstack, DevstackConfig};
use strato_domain::ports::{StateLocks, TenantSlots};

const TENANTS: usize = 3;
const CLUSTERS_PER_TENANT: usize = 4;
const TENANT_LIMIT: u32 = 2;
/// Share of runners killed, each at a random moment within [`KILL_WITHIN`] of its start.
const KILL_SHARE: f64 = 0.2;
const KILL_WITHIN: Duration = Duration::from_secs(8);
const OPERATION_TIMEOUT: Duration = Duration::from_secs(900);
/// The rollout tenant's clusters.
const FLEET: usize = 3;

fn seed() -> u64 {
    match std::env::var("STRATO_CHAOS_SEED") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().expect("STRATO_CHAOS_SEED is a number"),
        _ => rand::random(),
    }
}

/// SIGKILLs a share of the emulated Fargate's runners (their whole process group, Terraform included) at a
/// random moment after they start, until `stop`. Returns how many it killed.
fn spawn_killer(stack: &Devstack, seed: u64, stop: Arc<AtomicU32>) -> tokio::task::JoinHandle<u32> {
    let stats = stack.fargate_stats.clone();
    tokio::spawn(async move {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6b69_6c6c);
        let mut seen = HashSet::new();
        let killed = Arc::new(AtomicU32::new(0));
        while stop.load(Ordering::Relaxed) == 0 {
            for task in stats.tasks() {
                if !seen.insert(task.task_arn.clone()) || !rng.random_bool(KILL_SHARE) {
                    continue;
                }
                let after = Duration::from_millis(rng.random_range(0..KILL_WITHIN.as_millis() as u64));
                let (stats, killed) = (stats.clone(), killed.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let running = stats
                        .tasks()
                        .into_iter()
                        .find(|t| t.task_arn == task.task_arn && t.ended_at.is_none());
                    if let Some(pid) = running.and_then(|t| t.pid) {
                        // SAFETY: kill(2) with a negative pid signals the runner's process group only.
                        if unsafe { libc::kill(-(pid as i32), libc::SIGKILL) } == 0 {
                            killed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        killed.load(Ordering::Relaxed)
    })
}

/// A cluster's life: create, update, delete, each waited for; returns the operations the API accepted.
async fn life(api: Client, name: String) -> Vec<String> {
    let spec = json!({
        "name": name,
        "template": {"name": "fixture-chaos", "version": "0.1.0"},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {}
    });
    let (cluster, create, _) = api.create_cluster(&spec).await.expect("create accepted");
    let mut ops = vec![create.clone()];
    api.wait_operation(&create, OPERATION_TIMEOUT)
        .await
        .expect("create ends");
    let path = format!("/v1/clusters/{cluster}");
    let update = api
        .patch(&path, &json!({"variables": {"label": "v2"}}))
        .await
        .unwrap();
    // A cluster whose create was killed may refuse an update (409 naming the fix): that is an answer too.
    assert!(matches!(update.status, 202 | 409), "{}", update.text);
    if update.status == 202 {
        let op = update.body["operation"]["id"].as_str().unwrap().to_owned();
        api.wait_operation(&op, OPERATION_TIMEOUT)
            .await
            .expect("update ends");
        ops.push(op);
    }
    let delete = api.delete(&path).await.unwrap();
    assert!(matches!(delete.status, 202 | 409), "{}", delete.text);
    if delete.status == 202 {
        let op = delete.body["operation"]["id"].as_str().unwrap().to_owned();
        api.wait_operation(&op, OPERATION_TIMEOUT)
            .await
            .expect("delete ends");
        ops.push(op);
    }
    ops
}

/// The URL of `logical`'s dead-letter queue.
async fn dlq_url(stack: &Devstack, logical: &str) -> Result<String, String> {
    stack
        .env
        .aws
        .sqs
        .get_queue_url()
        .queue_name(stack.env.names.dlq(logical))
        .send()
        .await
        .map_err(|e| format!("{logical}: its dead-letter queue could not be found: {e}"))?
        .queue_url
        .ok_or_else(|| format!("{logical}: its dead-letter queue has no URL"))
}

async fn dlq_depth(stack: &Devstack, logical: &str) -> String {
    let sqs = &stack.env.aws.sqs;
    let url = dlq_url(stack, logical).await.unwrap();
    let attr = aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(attr.clone())
        .send()
        .await
        .unwrap();
    out.attributes()
        .and_then(|a| a.get(&attr))
        .cloned()
        .unwrap_or_default()
}

/// What a non-empty dead-letter queue holds, for the failure message: each message's receive count and body,
/// and the stack's warnings, errors and SQS deliveries naming its operation or message id (its consumer's
/// reasons for handing it back). A flake of this test under load is otherwise left without a cause to look at.
async fn dlq_contents(stack: &Devstack, logical: &str) -> String {
    use aws_sdk_sqs::types::MessageSystemAttributeName;
    let sqs = &stack.env.aws.sqs;
    let url = match dlq_url(stack, logical).await {
        Ok(u) => u,
        Err(why) => return why,
    };
    let out = match sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
    {
        Ok(o) => o,
        Err(e) => return format!("{logical}: receiving its dead letters failed: {e}"),
    };
    let lines = strato_devstack::capture::global()
        .map(|c| c.lines())
        .unwrap_or_default();
    let mut report = String::new();
    for m in out.messages() {
        let body = m.body().unwrap_or_default();
        let count = m
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
            .map_or("?", String::as_str);
        let mut names: Vec<String> = m.message_id().map(str::to_owned).into_iter().collect();
        names.extend(strato_devstack::operation_id_in(body));
        report.push_str(&format!(
            "\n{logical} dead letter (received {count} times): {}",
            body.chars().take(600).collect::<String>()
        ));
        let why: Vec<String> = lines
            .iter()
            .filter(|l| {
                use strato_devstack::capture::str_of;
                matches!(str_of(l, "level"), Some("WARN" | "ERROR"))
                    || str_of(l, "message").is_some_and(|m| m.starts_with("SQS mapping"))
            })
            .map(|l| Value::Object(l.clone()).to_string())
            .filter(|l| names.iter().any(|n| l.contains(n.as_str())))
            .collect();
        for l in why.iter().rev().take(30).rev() {
            report.push_str(&format!("\n    {}", l.chars().take(800).collect::<String>()));
        }
    }
    report
}

/// What is still held: cluster locks (by cluster), tenant slots, Terraform state locks.
async fn held(stack: &Devstack, store: &Store, clusters: &[String]) -> Vec<String> {
    let mut held = Vec::new();
    for c in clusters {
        if let Some((owner, _)) = store.cluster_lock(&c.parse().unwrap()).await.unwrap() {
            held.push(format!("cluster lock of {c} held by {owner}"));
        }
    }
    for (tenant, ops) in store.all_slot_holders().await.unwrap() {
        if !ops.is_empty() {
            held.push(format!("slots of {tenant} held by {ops:?}"));
        }
    }
    let table = stack.env.names.table("tf-locks");
    let state_locks = DynamoStateLocks {
        ddb: &stack.env.aws.dynamodb,
        table: &table,
    };
    for lock in state_locks.held_state_locks().await.unwrap() {
        held.push(format!("state lock {} held by {}", lock.lock_id, lock.holder()));
    }
    held
}

#[tokio::test(flavor = "multi_thread")]
async fn operations_under_injected_faults_all_end_and_leave_nothing_held() {
    let seed = seed();
    println!("faults: seed {seed} (STRATO_CHAOS_SEED={seed} replays the injected faults)");
    let fixtures = fixtures();
    let chaos = Chaos {
        seed,
        duplicate: 0.2,
        max_delay: Duration::from_millis(1500),
        function_errors: BTreeMap::from([("events".to_owned(), 0.15), ("rollouts".to_owned(), 0.15)]),
    };
    let stack = devstack_support::start(DevstackConfig {
        templates_root: None,
        extra_templates: vec![
            (fixtures.join("chaos"), fixtures.clone()),
            (fixtures.join("chaos-v2"), fixtures.clone()),
        ],
        sqs_concurrency: 4,
        sweep_rate: Duration::from_secs(10),
        sweep_grace: Duration::from_secs(30),
        chaos: Some(chaos),
        ..devstack_support::config("flt").await
    })
    .await;
    let store = Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names);
    let tenants: Vec<String> = (0..TENANTS).map(|i| format!("chaos-{i}")).collect();
    for t in tenants.iter().chain([&"chaos-fleet".to_owned()]) {
        let q = Quotas {
            max_clusters: CLUSTERS_PER_TENANT as u32,
            max_open_operations: CLUSTERS_PER_TENANT as u32,
            max_concurrent_operations: TENANT_LIMIT,
        };
        store.set_quotas(&t.parse().unwrap(), &q).await.unwrap();
    }
    let clients: Vec<Client> = tenants
        .iter()
        .map(|t| Client::new(&stack.endpoints.http_api).with_token(stack.token(t)))
        .collect();

    let stop_killer = Arc::new(AtomicU32::new(0));
    let killer = spawn_killer(&stack, seed, stop_killer.clone());
    let t0 = Instant::now();
    let lives =
        (0..TENANTS * CLUSTERS_PER_TENANT).map(|i| life(clients[i % TENANTS].clone(), format!("chaos-{i}")));
    let fleet_api = Client::new(&stack.endpoints.http_api).with_token(stack.token("chaos-fleet"));
    let (ops, fleet) = tokio::join!(
        futures_util::future::join_all(lives),
        fleet_rollout(fleet_api.clone(), seed)
    );
    let ops: Vec<(usize, Vec<String>)> = ops.into_iter().enumerate().collect();
    let all_ended = t0.elapsed();
    stop_killer.store(1, Ordering::Relaxed);
    let killed = killer.await.unwrap();

    // Every operation finished, and a failed one says what, where and how to fix it.
    let mut outcomes: BTreeMap<String, u32> = BTreeMap::new();
    let mut clusters = Vec::new();
    for (i, ops) in &ops {
        let api = &clients[i % TENANTS];
        for op in ops {
            let o = api.get(&format!("/v1/operations/{op}")).await.unwrap().body;
            let status = o["status"].as_str().unwrap_or_default().to_owned();
            assert!(
                matches!(status.as_str(), "succeeded" | "failed" | "cancelled"),
                "{o}"
            );
            if status == "failed" {
                for field in ["what", "step", "fix"] {
                    let text = o["error"][field].as_str().unwrap_or_default();
                    assert!(
                        !text.trim().is_empty(),
                        "a failed operation's {field} is empty: {o}"
                    );
                }
            }
            *outcomes
                .entry(format!("{} {status}", o["kind"].as_str().unwrap_or("?")))
                .or_default() += 1;
            if o["kind"] == "create" {
                clusters.push((api.clone(), o["cluster_id"].as_str().unwrap().to_owned()));
            }
        }
    }
    let total: u32 = outcomes.values().sum();
    assert!(total >= 30, "at least 30 operations ran: {outcomes:?}");

    // Every cluster at rest, in a state the state machine allows at rest.
    let mut states: BTreeMap<String, u32> = BTreeMap::new();
    for (api, id) in &clusters {
        let r = api.get(&format!("/v1/clusters/{id}")).await.unwrap();
        let state = match r.status {
            404 => "DELETED (gone)".to_owned(),
            200 => r.body["state"].as_str().unwrap_or_default().to_owned(),
            s => panic!("GET cluster {id}: {s} {}", r.text),
        };
        assert!(
            matches!(state.as_str(), "ACTIVE" | "FAILED" | "DELETED" | "DELETED (gone)"),
            "cluster {id} is left {state} with no operation open: {}",
            r.text
        );
        *states.entry(state).or_default() += 1;
    }

    // Nothing held once the sweeper has had its turn (a killed runner's Terraform state lock is its job).
    let ids: Vec<String> = clusters
        .iter()
        .map(|(_, id)| id.clone())
        .chain(fleet.clusters.iter().cloned())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut left = held(&stack, &store, &ids).await;
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        left = held(&stack, &store, &ids).await;
    }
    assert!(
        left.is_empty(),
        "still held after every operation ended: {left:#?}"
    );
    let settled = t0.elapsed();
    let mut dlqs = BTreeMap::new();
    for logical in ["jobs", "events", "logs", "webhooks", "rollouts"] {
        dlqs.insert(logical, dlq_depth(&stack, logical).await);
    }
    if dlqs.values().any(|d| d != "0") {
        let mut letters = String::new();
        for (logical, _) in dlqs.iter().filter(|(_, d)| *d != "0") {
            letters.push_str(&dlq_contents(&stack, logical).await);
        }
        panic!("dead-letter queues: {dlqs:?}{letters}");
    }

    let injected: Value = json!(
        stack
            .chaos
            .as_ref()
            .unwrap()
            .injected()
            .iter()
            .map(|(q, c)| (q.clone(), format!("{c:?}")))
            .collect::<BTreeMap<_, _>>()
    );
    println!(
        "faults: {total} operations from {TENANTS} tenants ({outcomes:?}); {} runners started, {killed} killed; \
         clusters at the end {states:?}; the rollout of {} clusters: {} upgraded after {} resumes; injected \
         {injected}; all operations ended in {:.1} s, nothing held after {:.1} s; dead-letter queues {dlqs:?}",
        stack.fargate_stats.started.load(Ordering::Relaxed),
        fleet.clusters.len(),
        fleet.upgraded,
        fleet.resumes,
        all_ended.as_secs_f64(),
        settled.as_secs_f64(),
    );
    stack.shutdown(Duration::from_secs(30)).await;
}

/// What the rollout tenant's part left.
struct Fleet {
    /// Every cluster it created.
    clusters: Vec<String>,
    upgraded: usize,
    resumes: u32,
}

/// The rollout tenant: [`FLEET`] clusters on fixture-chaos 0.1.0, then an apply rollout of the ACTIVE ones
/// to 0.2.0 in two waves (one cluster, then the rest), resumed past failed clusters (`skip_failed`) each
/// time the faults pause it, until it ends. Checks, once it has: it completed; each cluster it calls
/// upgraded is ACTIVE on 0.2.0; no cluster got more than one update (a duplicate delivery or a redone
/// consumer batch starts no second run).
async fn fleet_rollout(api: Client, seed: u64) -> Fleet {
    let creates = (0..FLEET).map(|i| {
        let api = api.clone();
        async move {
            let spec = json!({
                "name": format!("fleet-{i}"),
                "template": {"name": "fixture-chaos", "version": "0.1.0"},
                "provider": "aws", "region": "us-east-1", "variables": {}
            });
            let (cluster, op, _) = api.create_cluster(&spec).await.expect("create accepted");
            api.wait_operation(&op, OPERATION_TIMEOUT)
                .await
                .expect("create ends");
            cluster
        }
    });
    let clusters: Vec<String> = futures_util::future::join_all(creates).await;
    let r = api
        .post(
            "/v1/rollouts",
            &json!({"template": "fixture-chaos", "to_version": "0.2.0", "mode": "apply",
                    "selector": {"states": ["ACTIVE"]},
                    "waves": [{"clusters": 1}, {"percent": 100}], "soak_seconds": 0}),
        )
        .await
        .unwrap();
    // Every create failing under the faults is possible, if unlikely: then there is nothing to roll out.
    assert_eq!(r.status, 202, "seed {seed}: {}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + OPERATION_TIMEOUT;
    let mut resumes = 0;
    let done = loop {
        let r = api.get(&format!("/v1/rollouts/{id}")).await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        match r.body["phase"].as_str() {
            Some("completed" | "aborted") => break r.body,
            Some("paused") => {
                resumes += 1;
                assert!(resumes <= FLEET as u32 + 1, "paused again and again: {}", r.text);
                let resumed = api
                    .post(
                        &format!("/v1/rollouts/{id}/resume"),
                        &json!({"skip_failed": true}),
                    )
                    .await
                    .unwrap();
                // A pause whose runs are still ending may refuse a resume for now (a 409 saying so).
                assert!(matches!(resumed.status, 200 | 202 | 409), "{}", resumed.text);
            }
            _ => {}
        }
        assert!(Instant::now() < deadline, "the rollout never ended: {}", r.text);
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    assert_eq!(done["phase"], "completed", "{done}");
    let mut upgraded = 0;
    for m in done["members"].as_array().unwrap() {
        let cluster = m["cluster_id"].as_str().unwrap();
        let status = m["status"].as_str().unwrap();
        assert!(
            matches!(status, "upgraded" | "skipped"),
            "a member left {status}: {done}"
        );
        let c = api.get(&format!("/v1/clusters/{cluster}")).await.unwrap().body;
        if status == "upgraded" {
            upgraded += 1;
            // Its plan on 0.2.0 found the policy's one in-place change, nothing replaced.
            assert_eq!(m["update"], 1, "{m}");
            assert_eq!(m["replace"], json!([]), "{m}");
            assert_eq!(c["template"]["version"], "0.2.0", "{c}");
            assert_eq!(c["state"], "ACTIVE", "{c}");
        }
        let ops = api
            .get(&format!("/v1/clusters/{cluster}/operations?limit=50"))
            .await
            .unwrap()
            .body;
        let updates = ops["operations"]
            .as_array()
            .unwrap_or_else(|| panic!("{ops}"))
            .iter()
            .filter(|o| o["kind"] == "update")
            .count();
        assert!(updates <= 1, "cluster {cluster} updated {updates} times: {ops}");
    }
    Fleet {
        clusters,
        upgraded,
        resumes,
    }
}
