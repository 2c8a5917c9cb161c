//! Live-logs benchmark: a synthetic runner publishes log lines at a fixed rate (batched every
//! `--flush-ms`, as the runner does) to the `logs` queue on moto; pollers feed the batches to the
//! log-fanout function, which posts to subscribers connected through the devstack API Gateway WebSocket
//! emulation. Prints line-to-subscriber latency, the share of it spent in the emulator (moto SQS
//! send + queue dwell + DynamoDB calls), and PostToConnection calls per line.
//!
//! `cargo run -p strato-tests --example bench_logs [--release] -- [--seconds 5] [--flush-ms 100]`

#[path = "../tests/live_logs_support/mod.rs"]
mod live_logs_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use futures_util::StreamExt;
use live_logs_support::{Bed, sqs_event};
use strato_aws::log_io::publish_frame;
use strato_domain::messages::{LogFrame, LogLine, LogStream};
use time::OffsetDateTime;
use tokio_tungstenite::tungstenite::Message;

/// Sums the time an SDK client spends in transmit (request out → response in).
#[derive(Debug, Clone, Default)]
struct CallTimer(Arc<AtomicU64>);

#[derive(Debug)]
struct Started(Instant);
impl Storable for Started {
    type Storer = StoreReplace<Self>;
}

impl Intercept for CallTimer {
    fn name(&self) -> &'static str {
        "bench-call-timer"
    }
    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(Started(Instant::now()));
        Ok(())
    }
    fn read_after_transmit(
        &self,
        _: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(s) = cfg.load::<Started>() {
            self.0
                .fetch_add(s.0.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Per published batch: when the runner started/finished SendMessage (µs since the run's epoch).
#[derive(Debug, Clone, Copy, Default)]
struct BatchTiming {
    send_start: i64,
    send_end: i64,
    received: i64,
    /// When the poller's ReceiveMessage call that got the batch started.
    receive_start: i64,
    ddb_us: i64,
    handler_us: i64,
}

#[derive(serde::Deserialize)]
struct SeqsOnly {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    lines: Vec<SeqOnly>,
}

#[derive(serde::Deserialize)]
struct SeqOnly {
    seq: u64,
}

/// (seq, receipt time in µs) of one subscriber's first arrivals.
type Arrivals = Vec<(u64, i64)>;

struct Scenario {
    rate: u64,
    subscribers: usize,
}

fn micros(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1000) as i64
}

fn pct(v: &mut [i64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i] as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seconds = arg("--seconds", 5);
    let flush_ms = arg("--flush-ms", 100);
    let pollers = arg("--pollers", 2) as usize;
    let only_rate = arg("--rate", 0);
    let only_subs = arg("--subscribers", 0) as usize;
    let mut scenarios = Vec::new();
    for rate in [1_000, 10_000] {
        for subscribers in [1, 10, 100] {
            if (only_rate == 0 || only_rate == rate) && (only_subs == 0 || only_subs == subscribers) {
                scenarios.push(Scenario { rate, subscribers });
            }
        }
    }
    println!(
        "live logs benchmark: {seconds} s per scenario, runner flush every {flush_ms} ms, {pollers} SQS pollers, build {}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!(
        "{:>6} {:>5} {:>7} {:>9} | {:>8} {:>8} | {:>9} {:>9} | {:>8} {:>8} {:>8} | {:>10} {:>9}",
        "lines/s",
        "subs",
        "lines",
        "delivered",
        "p50 ms",
        "p99 ms",
        "emu p50",
        "emu p99",
        "excl p50",
        "excl p99",
        "batch p50",
        "posts/line",
        "fn ms/bat"
    );
    for s in scenarios {
        run(s, seconds, flush_ms, pollers).await;
    }
}

async fn run(s: Scenario, seconds: u64, flush_ms: u64, pollers: usize) {
    let bed = Bed::with_pump(false).await;
    let op = bed.operation("acme", None).await;
    let total = s.rate * seconds;

    // Subscribers: each records (seq, receipt time) of first arrivals.
    let received: Arc<Mutex<Vec<Arrivals>>> = Arc::new(Mutex::new(vec![Vec::new(); s.subscribers]));
    let delivered = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for i in 0..s.subscribers {
        let mut c = bed.client("acme").await;
        c.subscribe(&op, 1).await;
        c.until(Duration::from_secs(60), |f| {
            matches!(
                f,
                strato_domain::logs::ServerFrame::Control(
                    strato_domain::logs::ControlFrame::Subscribed { .. }
                )
            )
        })
        .await;
        let (received, delivered) = (received.clone(), delivered.clone());
        readers.push(tokio::spawn(async move {
            let mut seen = vec![false; total as usize + 1];
            let mut got = Vec::with_capacity(total as usize);
            let mut count = 0;
            while count < total {
                let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_secs(60), c.ws.next()).await
                else {
                    break;
                };
                let now = micros(OffsetDateTime::now_utc());
                let Message::Text(t) = msg else { continue };
                // Only what the measurement needs: the client's own parsing cost stays small.
                if let Ok(SeqsOnly { kind, lines }) = serde_json::from_str::<SeqsOnly>(&t)
                    && kind == "log"
                {
                    for l in lines {
                        let seq = l.seq as usize;
                        if seq < seen.len() && !seen[seq] {
                            seen[seq] = true;
                            count += 1;
                            got.push((l.seq, now));
                        }
                    }
                }
            }
            delivered.fetch_add(count, Ordering::Relaxed);
            received.lock().unwrap()[i] = got;
        }));
    }

    let timings: Arc<Mutex<HashMap<u64, BatchTiming>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let handler_calls = Arc::new(AtomicU64::new(0));
    let handler_us_total = Arc::new(AtomicU64::new(0));
    // Pollers (the SQS event source): receive, invoke log-fanout, delete in the background.
    let mut pumps = Vec::new();
    for _ in 0..pollers {
        let timer = CallTimer::default();
        let mut ctx = (*bed.fanout).clone();
        let conf = bed.env.aws.config.clone();
        ctx.connections.ddb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&conf)
                .interceptor(timer.clone())
                .build(),
        );
        let (sqs, url, stop, timings) = (
            bed.env.aws.sqs.clone(),
            bed.queues.logs.clone(),
            stop.clone(),
            timings.clone(),
        );
        let (calls, handler_total) = (handler_calls.clone(), handler_us_total.clone());
        pumps.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let receive_start = micros(OffsetDateTime::now_utc());
                let Ok(out) = sqs
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .wait_time_seconds(1)
                    .send()
                    .await
                else {
                    continue;
                };
                let msgs = out.messages.unwrap_or_default();
                if msgs.is_empty() {
                    continue;
                }
                let received = micros(OffsetDateTime::now_utc());
                let ddb_before = timer.0.load(Ordering::Relaxed);
                let t0 = Instant::now();
                let _ = strato_log_fanout::handle(&ctx, sqs_event(&msgs)).await;
                let handler_us = t0.elapsed().as_micros() as i64;
                let ddb_us = (timer.0.load(Ordering::Relaxed) - ddb_before) as i64;
                calls.fetch_add(1, Ordering::Relaxed);
                handler_total.fetch_add((handler_us - ddb_us).max(0) as u64, Ordering::Relaxed);
                {
                    let mut t = timings.lock().unwrap();
                    for m in &msgs {
                        if let Ok(LogFrame::Log { first_seq, .. }) =
                            serde_json::from_str::<LogFrame>(m.body().unwrap_or_default())
                        {
                            let e = t.entry(first_seq).or_default();
                            e.received = received;
                            e.receive_start = receive_start;
                            e.ddb_us = ddb_us;
                            e.handler_us = handler_us;
                        }
                    }
                }
                let (sqs, url) = (sqs.clone(), url.clone());
                tokio::spawn(async move {
                    for m in msgs {
                        let _ = sqs
                            .delete_message()
                            .queue_url(&url)
                            .receipt_handle(m.receipt_handle().unwrap_or_default())
                            .send()
                            .await;
                    }
                });
            }
        }));
    }

    // The synthetic runner: line i is produced at start + i/rate; every flush, what was produced goes out.
    let posts_before = bed.api.stats().posts.load(Ordering::Relaxed);
    let start = OffsetDateTime::now_utc();
    let start_i = Instant::now();
    let mut seq = 0u64;
    let line_ts: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(vec![0; total as usize + 1]));
    let mut tick = tokio::time::interval(Duration::from_millis(flush_ms));
    while seq < total {
        tick.tick().await;
        let due = ((start_i.elapsed().as_secs_f64() * s.rate as f64) as u64).min(total);
        if due <= seq {
            continue;
        }
        let mut lines = Vec::with_capacity((due - seq) as usize);
        {
            let mut lt = line_ts.lock().unwrap();
            while seq < due {
                seq += 1;
                let produced = start + Duration::from_secs_f64((seq - 1) as f64 / s.rate as f64);
                lt[seq as usize] = micros(produced);
                lines.push(LogLine {
                    seq,
                    ts: produced,
                    stream: LogStream::Stdout,
                    step: "apply".into(),
                    text: format!(
                        "module.eks.aws_eks_node_group.this[\"default\"]: Still creating... [{seq}0s elapsed]"
                    ),
                });
            }
        }
        // At most 1,000 lines (~130 KB) per message: SQS takes 256 KB.
        for chunk in lines.chunks(1000) {
            let first_seq = chunk[0].seq;
            let frame = LogFrame::Log {
                operation_id: op.clone(),
                first_seq,
                lines: chunk.to_vec(),
                skipped: None,
            };
            let send_start = micros(OffsetDateTime::now_utc());
            publish_frame(&bed.env.aws.sqs, &bed.queues.logs, &frame)
                .await
                .expect("publishing");
            let send_end = micros(OffsetDateTime::now_utc());
            let mut t = timings.lock().unwrap();
            let e = t.entry(first_seq).or_default();
            e.send_start = send_start;
            e.send_end = send_end;
        }
    }
    for r in readers {
        let _ = r.await;
    }
    stop.store(true, Ordering::Relaxed);
    for p in pumps {
        let _ = p.await;
    }
    let posts = bed.api.stats().posts.load(Ordering::Relaxed) - posts_before;

    // Per line per subscriber: total latency, the emulator's share, the runner's batching wait.
    let timings = timings.lock().unwrap().clone();
    let mut firsts: Vec<u64> = timings.keys().copied().collect();
    firsts.sort_unstable();
    let batch_of = |seq: u64| -> Option<&BatchTiming> {
        let i = firsts.partition_point(|f| *f <= seq);
        firsts.get(i.checked_sub(1)?).and_then(|f| timings.get(f))
    };
    let lt = line_ts.lock().unwrap().clone();
    let (mut total_lat, mut emu, mut excl, mut batching) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for per_sub in received.lock().unwrap().iter() {
        for (seq, at) in per_sub {
            let produced = lt[*seq as usize];
            let Some(b) = batch_of(*seq) else { continue };
            let lat = at - produced;
            // Moto's SendMessage, its ReceiveMessage from the moment the message existed and a poller was
            // asking (waiting for a busy poller is backlog, the function's share), moto's DynamoDB calls.
            let dwell = (b.received - b.send_end.max(b.receive_start)).max(0);
            let emulator = (b.send_end - b.send_start) + dwell + b.ddb_us;
            total_lat.push(lat);
            emu.push(emulator);
            excl.push(lat - emulator);
            batching.push(b.send_start - produced);
        }
    }
    let delivered = delivered.load(Ordering::Relaxed);
    let calls = handler_calls.load(Ordering::Relaxed).max(1);
    println!(
        "{:>7} {:>5} {:>7} {:>9} | {:>8.1} {:>8.1} | {:>9.1} {:>9.1} | {:>8.1} {:>8.1} {:>8.1} | {:>10.3} {:>9.1}",
        s.rate,
        s.subscribers,
        total,
        format!(
            "{:.1}%",
            100.0 * delivered as f64 / (total as f64 * s.subscribers as f64)
        ),
        pct(&mut total_lat, 0.50),
        pct(&mut total_lat, 0.99),
        pct(&mut emu, 0.50),
        pct(&mut emu, 0.99),
        pct(&mut excl, 0.50),
        pct(&mut excl, 0.99),
        pct(&mut batching, 0.50),
        posts as f64 / total as f64,
        handler_us_total.load(Ordering::Relaxed) as f64 / calls as f64 / 1000.0,
    );
    bed.shutdown().await;
}
