//! What one create request costs the control plane before its runner starts: AWS API calls (by operation)
//! and handler CPU time, for the api function (POST /v1/clusters) and the dispatcher (job → lock → RunTask).
//!
//! Runs against the offline test bed (moto). Calls are counted by an SDK interceptor on the handlers' own
//! clients; CPU is this process's user+system time around each handler call on a current-thread runtime
//! (moto runs in its own process, so its time is not included). Run with
//! `cargo bench -p strato-tests --bench create_path` (release) — `-- N` sets the number of creates.

#[path = "../tests/moto/flow_support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use lambda_http::request::LambdaRequest;
use strato_aws::aws::CallCounter;
use strato_domain::template::Template;
use support::World;

fn cpu_time() -> Duration {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

struct Figures {
    calls: BTreeMap<String, u64>,
    cpu: Vec<Duration>,
}

impl Figures {
    fn new() -> Self {
        Self {
            calls: BTreeMap::new(),
            cpu: Vec::new(),
        }
    }

    fn print(&self, name: &str, n: usize) {
        let total: u64 = self.calls.values().sum();
        let mut cpu = self.cpu.clone();
        cpu.sort();
        let pct = |p: f64| cpu[((cpu.len() - 1) as f64 * p).round() as usize];
        println!(
            "{name}: {:.1} AWS calls per create; handler CPU p50 {:.2} ms, p95 {:.2} ms, mean {:.2} ms",
            total as f64 / n as f64,
            pct(0.5).as_secs_f64() * 1e3,
            pct(0.95).as_secs_f64() * 1e3,
            cpu.iter().sum::<Duration>().as_secs_f64() * 1e3 / n as f64,
        );
        for (op, c) in &self.calls {
            println!("    {op:<40} {:.2}", *c as f64 / n as f64);
        }
    }
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(n));
}

async fn run(n: usize) {
    let w = World::new().await;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/tests/fixtures/api-test/template-1.0.0.toml"
    );
    let t = Template::from_toml(&std::fs::read_to_string(fixture).expect("fixture")).expect("template");
    w.store
        .put_template(&t.manifest, &"0".repeat(64), "templates/api-test/1.0.0.tar.gz")
        .await
        .expect("template published");

    let counter = CallCounter::default();
    let counted = w.env.aws.counted(&counter);
    let ecs = aws_sdk_ecs::Client::from_conf(
        aws_sdk_ecs::config::Builder::from(&w.env.aws.config)
            .interceptor(counter.clone())
            .build(),
    );
    let prefix = w.env.names.prefix().to_owned();
    let api_config =
        strato_api::Config::from_lookup(|k| (k == "STRATO_RESOURCE_PREFIX").then(|| prefix.clone()))
            .expect("api config");
    // Built once per process, as in Lambda: their setup calls are not per-request costs.
    let api = strato_api::service(strato_api::Ctx::new(&counted, api_config).await.expect("api ctx"));
    let dispatcher = strato_dispatcher::Ctx::new(w.config.clone(), &counted, ecs)
        .await
        .expect("dispatcher ctx");

    let sample = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/tests/fixtures/events/create-cluster.json"
    ))
    .expect("sample event");
    let (mut api_fig, mut disp_fig) = (Figures::new(), Figures::new());
    for i in 0..n {
        let mut event: ApiGatewayV2httpRequest = serde_json::from_str(&sample).expect("event");
        let mut body: serde_json::Value = serde_json::from_str(event.body.as_deref().unwrap()).unwrap();
        body["name"] = format!("bench-{i}").into();
        // Spread over tenants so the per-tenant cluster quota never refuses a create.
        let tenant = format!("bench-{}", i % 10);
        event.body = Some(body.to_string());
        if let Some(jwt) = event
            .request_context
            .authorizer
            .as_mut()
            .and_then(|a| a.jwt.as_mut())
        {
            jwt.claims.insert("tenant_id".into(), tenant);
        }
        let req = lambda_http::Request::from(LambdaRequest::ApiGatewayV2(event));

        counter.reset();
        let t0 = cpu_time();
        let resp = api.handle(req).await;
        api_fig.cpu.push(cpu_time() - t0);
        assert_eq!(resp.status().as_u16(), 202, "create refused: {:?}", resp.body());
        merge(&mut api_fig.calls, counter.snapshot());

        // The job as Lambda would deliver it (received with uncounted clients: that is the event source
        // mapping's work, not the function's).
        let jobs = w.take_jobs().await;
        assert_eq!(jobs.records.len(), 1, "one job per create");
        counter.reset();
        let t0 = cpu_time();
        let out = strato_dispatcher::handle(&dispatcher, jobs)
            .await
            .expect("dispatcher");
        disp_fig.cpu.push(cpu_time() - t0);
        assert!(out.batch_item_failures.is_empty());
        merge(&mut disp_fig.calls, counter.snapshot());
    }
    println!("create path, {n} creates against moto (calls per create by Service.Operation):");
    api_fig.print("api POST /v1/clusters", n);
    disp_fig.print("dispatcher job → RunTask", n);
    let total: u64 = api_fig.calls.values().chain(disp_fig.calls.values()).sum();
    println!(
        "total before the task starts: {:.1} AWS calls per create",
        total as f64 / n as f64
    );
}

fn merge(into: &mut BTreeMap<String, u64>, from: BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k).or_default() += v;
    }
}
