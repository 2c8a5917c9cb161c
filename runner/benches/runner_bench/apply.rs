//! The apply part: runner-driven create against the bare engine, interleaved, with a breakdown of where the
//! runner's extra wall time goes.
//!
//! The bare baseline runs, in a workspace holding the same module, provider settings (the emulator
//! endpoint, in the dialect of the provider version) and S3 backend (state in the platform bucket, locks
//! in its lock table) the runner writes, exactly the engine commands a create needs for the runner's
//! result — resources applied from a reviewed plan, the plan priced, outputs read:
//!
//! 1. `init -input=false -no-color`
//! 2. `plan -input=false -no-color -detailed-exitcode -out=p.tfplan`
//! 3. `show -json -no-color p.tfplan` (the plan as JSON: what the runner prices and summarises)
//! 4. `apply -input=false -no-color -auto-approve p.tfplan` (0.15.0-rc2: without the plan file, as the
//!    runner must, see the runner README's engine notes)
//! 5. `output -json`
//!
//! with the engine's environment (CLI config / mirror, `CHECKPOINT_DISABLE`, `TF_IN_AUTOMATION`) and output
//! captured. Everything else the runner does (reading its operation, credentials, preflight, the engine
//! version probe, events, log shipping and archive, any further engine command such as the post-apply
//! refresh, the final event) counts as its overhead.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;
use strato_aws::queues::QueueUrls;
use strato_aws::store::{LockOutcome, Quotas, Store};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef,
};
use strato_domain::ts;
use strato_runner::{Clients, Config};
use strato_terraform::render::{
    BackendConfig, EngineDialect, ProviderDialect, aws_provider_tf_json, state_key,
};
use strato_testbed::{TestEngine, TestEnv};
use time::OffsetDateTime;

use super::{median, usage};

/// The engine and where both sides run.
pub struct Engines<'e> {
    env: &'e TestEnv,
    engine: TestEngine,
    store: Store,
    queues: QueueUrls,
}

impl<'e> Engines<'e> {
    pub async fn new(env: &'e TestEnv, engine: TestEngine) -> Self {
        Self {
            store: Store::new(env.aws.dynamodb.clone(), &env.names),
            queues: QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap(),
            env,
            engine,
        }
    }

    fn engine_env(&self) -> Vec<(String, String)> {
        let mut v = self.engine.engine_env();
        v.push(("AWS_ACCESS_KEY_ID".into(), "testing".into()));
        v.push(("AWS_SECRET_ACCESS_KEY".into(), "testing".into()));
        v.push(("AWS_REGION".into(), self.env.region.clone()));
        v
    }
}

/// One measured run of either side.
#[derive(Default)]
struct Sample {
    wall: f64,
    /// This process's CPU (the runner; ~0 for the bare side).
    own_cpu: f64,
    /// CPU of waited-for children (the engine and its provider plugins).
    child_cpu: f64,
    /// Named parts of the wall time, in order.
    parts: Vec<(String, f64)>,
}

async fn runner_apply(e: &Engines<'_>, name: &str) -> Sample {
    let env = e.env;
    let tenant: TenantId = "bench".parse().unwrap();
    let spec = ClusterSpec {
        name: name.parse().unwrap(),
        template: TemplateRef {
            name: "runner-net".into(),
            version: "0.1.0".into(),
        },
        provider: CloudProvider::Aws,
        region: env.region.clone(),
        variables: BTreeMap::new(),
        target: None,
    };
    let now = ts::now();
    let mut c = Cluster::new(tenant.clone(), ClusterId::generate(), spec.clone(), now);
    c.transition(ClusterState::Provisioning).unwrap();
    let mut op = Operation::new(tenant, c.cluster_id.clone(), OperationKind::Create, now);
    op.spec = Some(spec);
    e.store
        .create_cluster(&c, &op, &Quotas::default())
        .await
        .unwrap()
        .unwrap();
    let LockOutcome::Acquired { fencing_token } = e
        .store
        .acquire_cluster_lock(&c.cluster_id, &op.operation_id, time::Duration::hours(1), now)
        .await
        .unwrap()
    else {
        panic!("lock")
    };
    let vars: BTreeMap<&str, String> = [
        ("STRATO_OPERATION_ID", op.operation_id.to_string()),
        ("STRATO_FENCING_TOKEN", fencing_token.to_string()),
        // The bench never reaches status, so any proof does.
        ("STRATO_RUN_PROOF", "bench".to_owned()),
        ("STRATO_RESOURCE_PREFIX", env.names.prefix().to_owned()),
        (
            "STRATO_ENGINE_ROLE_ARN",
            "arn:aws:iam::123456789012:role/bench-engine".to_owned(),
        ),
        (
            "STRATO_STATE_ROLE_ARN",
            "arn:aws:iam::123456789012:role/bench-state".to_owned(),
        ),
        ("STRATO_TERRAFORM", e.engine.terraform.display().to_string()),
        ("STRATO_PROVIDER_ENDPOINT", env.endpoint.clone()),
    ]
    .into();
    let mut cfg = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    cfg.extra_engine_env = e.engine_env();
    let clients = Clients::new(env.aws.clone(), &cfg).await.unwrap();
    let (self0, kids0) = (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_CHILDREN));
    let (t, began) = (Instant::now(), OffsetDateTime::now_utc());
    let summary = strato_runner::run_operation(cfg, clients).await.unwrap();
    let wall = t.elapsed();
    let ended = began + wall;
    let (self1, kids1) = (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_CHILDREN));
    assert!(
        matches!(summary.final_event, RunnerEvent::Succeeded { .. }),
        "{:?}",
        summary.final_event
    );
    let events = drain_events(e).await;
    Sample {
        wall: wall.as_secs_f64(),
        own_cpu: (self1.cpu - self0.cpu).as_secs_f64(),
        child_cpu: (kids1.cpu - kids0.cpu).as_secs_f64(),
        parts: step_parts(&events, op.operation_id.as_str(), began, ended),
    }
}

/// The run's progress events, in the order sent (the bench's events queue holds only this run's).
async fn drain_events(e: &Engines<'_>) -> Vec<RunnerEvent> {
    let mut out = Vec::new();
    loop {
        let r = e
            .env
            .aws
            .sqs
            .receive_message()
            .queue_url(&e.queues.events)
            .max_number_of_messages(10)
            .wait_time_seconds(0)
            .send()
            .await
            .unwrap();
        if r.messages().is_empty() {
            return out;
        }
        for m in r.messages() {
            if let Ok(ev) = serde_json::from_str::<RunnerEvent>(m.body().unwrap_or_default()) {
                out.push(ev);
            }
            e.env
                .aws
                .sqs
                .delete_message()
                .queue_url(&e.queues.events)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
}

/// Splits the run's wall time by its step events: each step (StepStarted → StepFinished), the gaps
/// between steps (`+gap`: events, uploads, parsing between engine commands), the time before the first
/// step and after the last one.
fn step_parts(
    events: &[RunnerEvent],
    op: &str,
    began: OffsetDateTime,
    ended: OffsetDateTime,
) -> Vec<(String, f64)> {
    let secs = |a: OffsetDateTime, b: OffsetDateTime| (b - a).as_seconds_f64();
    let mut marks: Vec<(String, bool, OffsetDateTime)> = events
        .iter()
        .filter(|ev| ev.operation_id().to_string() == op)
        .filter_map(|ev| match ev {
            RunnerEvent::StepStarted { step, at, .. } => Some((step.clone(), true, *at)),
            RunnerEvent::StepFinished { step, at, .. } => Some((step.clone(), false, *at)),
            _ => None,
        })
        .collect();
    marks.sort_by_key(|m| m.2);
    let mut parts = Vec::new();
    let mut last = began;
    let mut first = true;
    for (step, start, at) in marks {
        if start {
            parts.push((
                if first {
                    "(before prepare)".into()
                } else {
                    "+gap".into()
                },
                secs(last, at),
            ));
            first = false;
        } else {
            parts.push((step, secs(last, at)));
        }
        last = at;
    }
    parts.push(("(after last step)".into(), secs(last, ended)));
    parts
}

/// The bare baseline (see the module doc): the same module, provider settings and backend, the engine
/// commands only.
fn bare_apply(e: &Engines<'_>, name: &str, fixtures: &Path) -> Sample {
    let env = e.env;
    let modern = e.engine.is_modern();
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixtures.join("modules/net")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    let provider = ProviderDialect::for_version(&e.engine.provider_version).unwrap();
    std::fs::write(
        dir.path().join("strato_provider_override.tf.json"),
        aws_provider_tf_json(&env.endpoint, provider).unwrap(),
    )
    .unwrap();
    let backend = BackendConfig {
        bucket: env.names.bucket("state"),
        key: state_key(&"bench".parse().unwrap(), &ClusterId::generate(), "main"),
        region: env.region.clone(),
        lock_table: env.names.table("tf-locks"),
        endpoint: Some(env.endpoint.clone()),
        profile: None,
        kms_key_id: None,
    };
    let dialect = if modern {
        EngineDialect::Modern
    } else {
        EngineDialect::Legacy
    };
    std::fs::write(
        dir.path().join("strato_backend.tf.json"),
        backend.tf_json(dialect).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("terraform.tfvars.json"),
        json!({"cluster_name": name}).to_string(),
    )
    .unwrap();
    let apply: &[&str] = if modern {
        &["apply", "-input=false", "-no-color", "-auto-approve", "p.tfplan"]
    } else {
        &["apply", "-input=false", "-no-color", "-auto-approve"]
    };
    let kids0 = usage(libc::RUSAGE_CHILDREN);
    let t = Instant::now();
    let mut parts = Vec::new();
    for (step, args) in [
        ("init", &["init", "-input=false", "-no-color"][..]),
        (
            "plan",
            &[
                "plan",
                "-input=false",
                "-no-color",
                "-detailed-exitcode",
                "-out=p.tfplan",
            ],
        ),
        ("show", &["show", "-json", "-no-color", "p.tfplan"]),
        ("apply", apply),
        ("output", &["output", "-json"]),
    ] {
        let s = Instant::now();
        let out = Command::new(&e.engine.terraform)
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .envs(e.engine_env())
            .env("TF_INPUT", "0")
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(2)),
            "bare {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        parts.push((step.to_owned(), s.elapsed().as_secs_f64()));
    }
    Sample {
        wall: t.elapsed().as_secs_f64(),
        own_cpu: 0.0,
        child_cpu: (usage(libc::RUSAGE_CHILDREN).cpu - kids0.cpu).as_secs_f64(),
        parts,
    }
}

fn fmt_parts(parts: &[(String, f64)]) -> String {
    parts
        .iter()
        .map(|(n, s)| format!("{n} {s:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Median of each named part over the runs (parts keep the first run's order; repeated names such as
/// `+gap` are numbered by position).
fn median_parts(samples: &[Sample]) -> Vec<(String, f64)> {
    let mut by: Vec<(String, Vec<f64>)> = Vec::new();
    for s in samples {
        for (i, (n, v)) in s.parts.iter().enumerate() {
            let key = format!("{i:02} {n}");
            match by.iter_mut().find(|(k, _)| *k == key) {
                Some((_, vs)) => vs.push(*v),
                None => by.push((key, vec![*v])),
            }
        }
    }
    by.into_iter()
        .map(|(k, vs)| (k[3..].to_owned(), median(vs)))
        .collect()
}

/// Warm-up, then `runs` pairs in ABBA order; prints each run, the medians, the ratio, CPU and breakdown.
pub async fn bench(e: &Engines<'_>, runs: usize, fixtures: &Path) {
    // Warm-up (page cache, moto's first-call costs), not counted.
    runner_apply(e, "warm-r").await;
    bare_apply(e, "warm-b", fixtures);
    let (mut rs, mut bs) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let (r, b) = if i % 2 == 0 {
            let r = runner_apply(e, &format!("bench-r{i}")).await;
            (r, bare_apply(e, &format!("bench-b{i}"), fixtures))
        } else {
            let b = bare_apply(e, &format!("bench-b{i}"), fixtures);
            (runner_apply(e, &format!("bench-r{i}")).await, b)
        };
        println!(
            "run {}: runner {:.3} s, bare {:.3} s, ratio {:.3} ({} first)",
            i + 1,
            r.wall,
            b.wall,
            r.wall / b.wall,
            if i % 2 == 0 { "runner" } else { "bare" }
        );
        println!("  runner parts: {}", fmt_parts(&r.parts));
        println!("  bare parts:   {}", fmt_parts(&b.parts));
        rs.push(r);
        bs.push(b);
    }
    let rw = median(rs.iter().map(|s| s.wall).collect());
    let bw = median(bs.iter().map(|s| s.wall).collect());
    let ratios: Vec<f64> = rs.iter().zip(&bs).map(|(r, b)| r.wall / b.wall).collect();
    println!("apply of runner-net (VPC + 2 subnets + SG + tag) against moto, {runs} interleaved runs each:");
    println!(
        "  runner-driven  median {rw:.3} s  runs {:?}",
        rs.iter().map(|s| format!("{:.3}", s.wall)).collect::<Vec<_>>()
    );
    println!(
        "  bare engine    median {bw:.3} s  runs {:?}  (init, plan -out, show -json, apply plan, output -json)",
        bs.iter().map(|s| format!("{:.3}", s.wall)).collect::<Vec<_>>()
    );
    println!(
        "  wall ratio     {:.3} (median runner / median bare); per pair {:?}, median of pairs {:.3}",
        rw / bw,
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>(),
        median(ratios.clone())
    );
    let own = median(rs.iter().map(|s| s.own_cpu).collect());
    let with = median(rs.iter().map(|s| s.own_cpu + s.child_cpu).collect());
    let bare_cpu = median(bs.iter().map(|s| s.child_cpu).collect());
    println!("  runner CPU     {own:.3} s per operation, runner process only (engine children excluded)");
    println!("  runner CPU     {with:.3} s per operation, runner + engine children");
    println!("  bare engine CPU {bare_cpu:.3} s per operation (engine children)");
    println!(
        "  peak RSS of the bench process (runner + SDK clients): {} MiB",
        usage(libc::RUSAGE_SELF).maxrss_kb / 1024
    );
    println!(
        "  breakdown, medians (s): runner: {}",
        fmt_parts(&median_parts(&rs))
    );
    println!(
        "                          bare:   {}",
        fmt_parts(&median_parts(&bs))
    );
}
