//! Live-logs benchmark: a synthetic runner publishes log lines at a fixed rate (batched every
//! `--flush-ms`, as the runner does) to the `logs` queue on moto; pollers feed the batches to the
//! log-fanout function, which posts to subscribers connected through the devstack API Gateway WebSocket
//! emulation. Prints line-to-subscriber latency, the share of it spent in the emulator (moto SQS
//! send + queue dwell + DynamoDB calls), and PostToConnection calls per line.
//!
//! `cargo run -p strato-tests --example bench_logs [--release] -- [--seconds 5] [--pace fixed --flush-ms 100]`
//!
//! `--scenario platform` (or `STRATO_BENCH_LOGS_SCENARIO=platform`): issue 19's platform scale, 10
//! operations at 1,000 lines/s each, 100 subscribers each (`--ops N` for fewer). Every scenario prints
//! lines lost, order violations (per subscriber), PostToConnection/s and the fan-out's CPU per 1,000 lines
//! (its pollers run on their own threads, so the thread CPU during `handle` is the function's).
//! `--pace fixed` ships every `--flush-ms` as the runner did before adaptive batching; the default is the
//! runner's policy (`strato_stream::live_batch::frame_due`).

#[path = "../../tests/moto/live_logs_support/mod.rs"]
mod live_logs_support;
mod report;

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
use aws_smithy_types::config_bag::ConfigBag;
use futures_util::StreamExt;
use live_logs_support::{Bed, sqs_event};
use report::{Seqs, report};
use strato_aws::log_io::publish_frame;
use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogLine, LogStream};
use strato_stream::live_batch;
use strato_stream::logs::{ControlFrame, ServerFrame};
use time::OffsetDateTime;
use tokio_tungstenite::tungstenite::Message;

/// Wall time during which at least one of an SDK client's calls was in transmit (request out → response
/// in): concurrent calls (one subscriber Query per operation) count once, so the figure can be subtracted
/// from the handler's wall time.
#[derive(Debug, Clone, Default)]
struct CallTimer(Arc<Mutex<Busy>>);

#[derive(Debug, Default)]
struct Busy {
    inflight: u32,
    since: Option<Instant>,
    total_us: u64,
}

impl CallTimer {
    fn busy_us(&self) -> u64 {
        let b = self.0.lock().unwrap();
        b.total_us
            + b.since
                .filter(|_| b.inflight > 0)
                .map_or(0, |s| s.elapsed().as_micros() as u64)
    }
}

impl Intercept for CallTimer {
    fn name(&self) -> &'static str {
        "bench-call-timer"
    }
    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut b = self.0.lock().unwrap();
        if b.inflight == 0 {
            b.since = Some(Instant::now());
        }
        b.inflight += 1;
        Ok(())
    }
    fn read_after_transmit(
        &self,
        _: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut b = self.0.lock().unwrap();
        b.inflight = b.inflight.saturating_sub(1);
        if b.inflight == 0
            && let Some(s) = b.since.take()
        {
            b.total_us += s.elapsed().as_micros() as u64;
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

/// (seq, receipt time in µs) of one subscriber's first arrivals.
type Arrivals = Vec<(u64, i64)>;
/// Batch timings by (operation index, first seq).
type Timings = Arc<Mutex<HashMap<(usize, u64), BatchTiming>>>;

#[derive(Debug, Clone, Copy)]
struct Scenario {
    /// Lines per second per operation.
    rate: u64,
    /// Subscribers per operation.
    subscribers: usize,
    ops: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Pace {
    /// Every `--flush-ms`, what was produced goes out (the runner before adaptive batching).
    Fixed(u64),
    /// The runner's policy: `strato_stream::live_batch::frame_due` and `FRAME_BUDGET`.
    Adaptive,
}

fn micros(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1000) as i64
}

/// CPU time (user + system) of the calling thread, in µs.
fn thread_cpu_us() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
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
    let word = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let seconds = arg("--seconds", 5);
    let flush_ms = arg("--flush-ms", 100);
    let pollers = arg("--pollers", 2) as usize;
    let only_rate = arg("--rate", 0);
    let only_subs = arg("--subscribers", 0) as usize;
    let pace = match word("--pace").as_deref() {
        Some("fixed") => Pace::Fixed(flush_ms),
        _ => Pace::Adaptive,
    };
    let platform = word("--scenario").or_else(|| std::env::var("STRATO_BENCH_LOGS_SCENARIO").ok());
    let mut scenarios = Vec::new();
    if platform.as_deref() == Some("platform") {
        // Issue 19: 10 operations × 1,000 lines/s, 100 subscribers each.
        scenarios.push(Scenario {
            rate: 1_000,
            subscribers: 100,
            ops: arg("--ops", 10) as usize,
        });
    } else {
        for rate in [1_000, 10_000] {
            for subscribers in [1, 10, 100] {
                if (only_rate == 0 || only_rate == rate) && (only_subs == 0 || only_subs == subscribers) {
                    scenarios.push(Scenario {
                        rate,
                        subscribers,
                        ops: 1,
                    });
                }
            }
        }
    }
    println!(
        "live logs benchmark: {seconds} s per scenario, runner pace {pace:?}, {pollers} SQS pollers, build {}",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!(
        "{:>7} {:>3} {:>5} {:>7} {:>7} {:>6} {:>5} | {:>7} {:>7} | {:>7} {:>7} | {:>8} {:>8} {:>8} | {:>6} {:>7} | {:>8} {:>8}",
        "lines/s",
        "ops",
        "subs",
        "lines",
        "deliv",
        "lost",
        "order",
        "p50 ms",
        "p99 ms",
        "emu p50",
        "emu p99",
        "excl p50",
        "excl p99",
        "batch 50",
        "post/l",
        "posts/s",
        "cpu/1kl",
        "cpu/1kd"
    );
    for s in scenarios {
        run(s, seconds, pace, pollers).await;
    }
    println!(
        "(lines/s per operation; subs in all; latency from the line's production to a subscriber's receipt; emu = moto's share \
         (SendMessage, queue dwell, DynamoDB); batch = wait in the runner's batching; post/l = PostToConnection per line \
         published; cpu/1kl = the fan-out's CPU ms per 1,000 lines published, cpu/1kd per 1,000 line deliveries)"
    );
}

/// Connects and subscribes `n` clients to `op` (16 at a time); each reader task records first arrivals of
/// lines `1..=total` and counts order violations (a new line older than one already seen).
async fn readers(
    bed: &Bed,
    op: &OperationId,
    n: usize,
    total: u64,
    order: Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<Arrivals>> {
    let clients: Vec<_> = futures_util::stream::iter(0..n)
        .map(|_| async {
            let mut c = bed.client("acme").await;
            c.subscribe(op, 1).await;
            c.until(Duration::from_secs(120), |f| {
                matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
            })
            .await;
            c
        })
        .buffer_unordered(16)
        .collect()
        .await;
    clients
        .into_iter()
        .map(|mut c| {
            let order = order.clone();
            tokio::spawn(async move {
                let mut seen = vec![false; total as usize + 1];
                let mut got = Vec::with_capacity(total as usize);
                let mut newest = 0;
                while (got.len() as u64) < total {
                    let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_secs(30), c.ws.next()).await
                    else {
                        break;
                    };
                    let now = micros(OffsetDateTime::now_utc());
                    let Message::Text(t) = msg else { continue };
                    let Ok(frame) = serde_json::from_str::<Seqs>(&t) else {
                        continue;
                    };
                    for seq in frame.seqs() {
                        let i = seq as usize;
                        if i < seen.len() && !seen[i] {
                            seen[i] = true;
                            if seq < newest {
                                order.fetch_add(1, Ordering::Relaxed);
                            }
                            newest = newest.max(seq);
                            got.push((seq, now));
                        }
                    }
                }
                got
            })
        })
        .collect()
}

/// What the pollers measured: handler invocations, the fan-out's thread CPU, time in moto's DynamoDB.
#[derive(Default)]
struct PollStats {
    cpu_us: AtomicU64,
}

/// Lambda's SQS event source: each poller on its own thread and single-threaded runtime, with the fan-out's
/// own HTTP connection pool, so the thread's CPU during `handle` is the function's CPU. Deletes run on the
/// main runtime (the event source's work, not the function's).
fn pollers(
    bed: &Bed,
    n: usize,
    ops: Arc<HashMap<String, usize>>,
    timings: Timings,
    stop: Arc<AtomicBool>,
    stats: Arc<PollStats>,
) -> Vec<std::thread::JoinHandle<()>> {
    let main = tokio::runtime::Handle::current();
    (0..n)
        .map(|_| {
            let timer = CallTimer::default();
            let conf = bed
                .env
                .aws
                .config
                .to_builder()
                .http_client(aws_smithy_http_client::Builder::new().build_http())
                .build();
            let mut ctx = (*bed.fanout).clone();
            ctx.mgmt = strato_connections::management_client(&conf, &ctx.config.management_endpoint);
            ctx.connections.ddb = aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&conf)
                    .interceptor(timer.clone())
                    .build(),
            );
            let (sqs, url) = (bed.env.aws.sqs.clone(), bed.queues.logs.clone());
            let (stop, timings, stats, ops, main) = (
                stop.clone(),
                timings.clone(),
                stats.clone(),
                ops.clone(),
                main.clone(),
            );
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("poller runtime");
                rt.block_on(async move {
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
                        let ddb_before = timer.busy_us();
                        let (t0, cpu0) = (Instant::now(), thread_cpu_us());
                        let _ = strato_log_fanout::handle(&ctx, sqs_event(&msgs)).await;
                        stats.cpu_us.fetch_add(thread_cpu_us() - cpu0, Ordering::Relaxed);
                        let handler_us = t0.elapsed().as_micros() as i64;
                        let ddb_us = (timer.busy_us() - ddb_before) as i64;
                        {
                            let mut t = timings.lock().unwrap();
                            for m in &msgs {
                                if let Ok(LogFrame::Log {
                                    first_seq,
                                    operation_id,
                                    ..
                                }) = serde_json::from_str::<LogFrame>(m.body().unwrap_or_default())
                                    && let Some(i) = ops.get(operation_id.as_str())
                                {
                                    let e = t.entry((*i, first_seq)).or_default();
                                    e.received = received;
                                    e.receive_start = receive_start;
                                    e.ddb_us = ddb_us;
                                    e.handler_us = handler_us;
                                }
                            }
                        }
                        let (sqs, url) = (sqs.clone(), url.clone());
                        main.spawn(async move {
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
                })
            })
        })
        .collect()
}

/// The synthetic runner of operation `i`: line `seq` is produced at `start + (seq-1)/rate`; frames leave
/// as `pace` says. Returns each line's production time (µs).
#[allow(clippy::too_many_arguments)]
async fn synthetic_runner(
    i: usize,
    op: OperationId,
    rate: u64,
    total: u64,
    pace: Pace,
    (start, start_i): (OffsetDateTime, Instant),
    (sqs, url): (aws_sdk_sqs::Client, String),
    timings: Timings,
) -> Vec<i64> {
    let mut produced_at = vec![0; total as usize + 1];
    let mut seq = 0u64;
    let mut pending: Vec<LogLine> = Vec::new();
    let mut last_sent: Option<Instant> = None;
    let tick_ms = match pace {
        Pace::Fixed(ms) => ms,
        Pace::Adaptive => 10,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(tick_ms));
    while seq < total || !pending.is_empty() {
        tick.tick().await;
        let due = ((start_i.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        while seq < due {
            seq += 1;
            let produced = start + Duration::from_secs_f64((seq - 1) as f64 / rate as f64);
            produced_at[seq as usize] = micros(produced);
            pending.push(LogLine {
                seq,
                ts: produced,
                stream: LogStream::Stdout,
                step: "apply".into(),
                text: format!(
                    "module.eks.aws_eks_node_group.this[\"default\"]: Still creating... [{seq}0s elapsed]"
                ),
            });
        }
        loop {
            let (mut take, mut bytes) = (0, 0);
            for l in &pending {
                let len = live_batch::packed_len(l);
                if pace == Pace::Adaptive && take > 0 && bytes + len > live_batch::FRAME_BUDGET {
                    break;
                }
                bytes += len;
                take += 1;
            }
            let full = take < pending.len();
            let first_at = pending.first().map(|l| {
                start_i + Duration::from_micros((produced_at[l.seq as usize] - micros(start)) as u64)
            });
            let go = match (pace, first_at) {
                (_, None) => false,
                (Pace::Fixed(_), _) => true,
                (Pace::Adaptive, Some(at)) => full || Instant::now() >= live_batch::frame_due(at, last_sent),
            };
            if !go {
                break;
            }
            let lines: Vec<LogLine> = pending.drain(..take).collect();
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
                publish_frame(&sqs, &url, &frame).await.expect("publishing");
                let send_end = micros(OffsetDateTime::now_utc());
                let mut t = timings.lock().unwrap();
                let e = t.entry((i, first_seq)).or_default();
                e.send_start = send_start;
                e.send_end = send_end;
            }
            last_sent = Some(Instant::now());
        }
    }
    produced_at
}

async fn run(s: Scenario, seconds: u64, pace: Pace, n_pollers: usize) {
    let bed = Bed::with_pump(false).await;
    let total = s.rate * seconds;
    let mut ops = Vec::new();
    for _ in 0..s.ops {
        ops.push(bed.operation("acme", None).await);
    }
    let index: Arc<HashMap<String, usize>> = Arc::new(
        ops.iter()
            .enumerate()
            .map(|(i, o)| (o.as_str().to_owned(), i))
            .collect(),
    );
    let order = Arc::new(AtomicU64::new(0));
    let mut subs: Vec<(usize, tokio::task::JoinHandle<Arrivals>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        for r in readers(&bed, op, s.subscribers, total, order.clone()).await {
            subs.push((i, r));
        }
    }
    let timings: Timings = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(PollStats::default());
    let threads = pollers(
        &bed,
        n_pollers,
        index,
        timings.clone(),
        stop.clone(),
        stats.clone(),
    );

    let posts_before = bed.api.stats().posts.load(Ordering::Relaxed);
    let start = OffsetDateTime::now_utc();
    let start_i = Instant::now();
    let runners: Vec<_> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            tokio::spawn(synthetic_runner(
                i,
                op.clone(),
                s.rate,
                total,
                pace,
                (start, start_i),
                (bed.env.aws.sqs.clone(), bed.queues.logs.clone()),
                timings.clone(),
            ))
        })
        .collect();
    let mut produced = Vec::new();
    for r in runners {
        produced.push(r.await.expect("runner"));
    }
    let mut received = Vec::new();
    for (i, r) in subs {
        received.push((i, r.await.unwrap_or_default()));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = tokio::task::spawn_blocking(move || t.join()).await;
    }
    let posts = bed.api.stats().posts.load(Ordering::Relaxed) - posts_before;
    let timings = timings.lock().unwrap().clone();
    report(
        s,
        &produced,
        &received,
        &timings,
        micros(start),
        posts,
        &stats,
        order.load(Ordering::Relaxed),
    );
    bed.shutdown().await;
}
