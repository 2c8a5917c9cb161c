//! The figures: busy-slot curve and fraction from the task records, hand-off latency and its breakdown from
//! the queues' records and the operations.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use strato_devstack::fargate::TaskRecord;
use strato_domain::model::Operation;
use time::OffsetDateTime;

use crate::load_support::{Created, Load, TENANT_LIMIT, TENANTS, busy_steps, curve, mean_busy, percentile};
use crate::probe::Hop;

/// One instant taken on both clocks, to put task records (`Instant`) and wall times on one axis.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub t0: Instant,
    pub wall0: OffsetDateTime,
}

impl Clock {
    fn wall(&self, at: OffsetDateTime) -> f64 {
        (at - self.wall0).as_seconds_f64()
    }
    fn mono(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
            - self.t0.saturating_duration_since(at).as_secs_f64()
    }
}

pub struct Inputs<'a> {
    pub created: &'a [Created],
    pub tasks: &'a [TaskRecord],
    pub ops: &'a [Operation],
    pub hops: &'a [Hop],
    pub clock: Clock,
    pub bucket: Duration,
    pub accepted: Duration,
    pub all_active: Duration,
}

/// One slot hand-off's moments, in seconds since the first create.
#[derive(Debug, Clone, Copy)]
struct Handoff {
    /// The releasing runner's final report sent.
    report_sent: f64,
    /// The status invocation holding it started, and returned.
    status_invoked: f64,
    status_returned: f64,
    /// Records in that invocation.
    status_batch: usize,
    /// The successor's wake-up job sent, picked up by the dispatcher.
    wake_sent: f64,
    dispatcher_invoked: f64,
    /// The successor's RunTask (the dispatcher records it as `dispatched_at`).
    run_task: f64,
    /// The successor's runner process started.
    task_start: f64,
    /// The releasing runner's process exited.
    runner_exit: f64,
}

fn is_final(kind: &str) -> bool {
    matches!(kind, "succeeded" | "failed" | "cancelled")
}

fn handoffs(i: &Inputs<'_>) -> (Vec<Handoff>, usize) {
    let c = i.clock;
    let task_of: HashMap<&str, &TaskRecord> = i
        .tasks
        .iter()
        .filter_map(|t| Some((t.operation_id.as_deref()?, t)))
        .collect();
    let op_of: HashMap<String, &Operation> = i.ops.iter().map(|o| (o.operation_id.to_string(), o)).collect();
    let mut finals: HashMap<&str, &Hop> = HashMap::new();
    for h in i.hops.iter().filter(|h| h.queue == "events" && is_final(&h.kind)) {
        let Some(op) = h.op.as_deref() else { continue };
        let e = finals.entry(op).or_insert(h);
        if h.invoked < e.invoked {
            *e = h;
        }
    }
    let mut out = Vec::new();
    let mut unpaired = 0;
    for t in i.tasks {
        let Some(op) = t.operation_id.as_deref() else {
            continue;
        };
        let start = c.mono(t.started_at);
        // The delivery that started it: its last job picked up before the runner started.
        let Some(job) = i
            .hops
            .iter()
            .filter(|h| h.queue == "jobs" && h.op.as_deref() == Some(op) && c.wall(h.invoked) <= start)
            .max_by_key(|h| h.invoked)
        else {
            continue;
        };
        let Some(releaser) = job
            .dedup
            .as_deref()
            .and_then(|d| d.split_once("-after-"))
            .map(|(_, r)| r)
        else {
            continue; // the create's own job: a slot free from the start
        };
        let (Some(fin), Some(prev), Some(me)) = (finals.get(releaser), task_of.get(releaser), op_of.get(op))
        else {
            unpaired += 1;
            continue;
        };
        out.push(Handoff {
            report_sent: fin.sent.map_or(f64::NAN, |s| c.wall(s)),
            status_invoked: c.wall(fin.invoked),
            status_returned: c.wall(fin.returned),
            status_batch: fin.batch,
            wake_sent: job.sent.map_or(f64::NAN, |s| c.wall(s)),
            dispatcher_invoked: c.wall(job.invoked),
            run_task: me.dispatched_at.map_or(f64::NAN, |d| c.wall(d)),
            task_start: start,
            runner_exit: prev.ended_at.map_or(f64::NAN, |e| c.mono(e)),
        });
    }
    (out, unpaired)
}

fn stats(label: &str, mut v: Vec<f64>) {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        println!("  {label:<44} (no samples)");
        return;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "  {label:<44} p50 {:>6.2}  p95 {:>6.2}  max {:>6.2}  mean {:>6.2} s",
        percentile(&v, 50.0),
        percentile(&v, 95.0),
        v[v.len() - 1],
        mean
    );
}

/// Prints every figure. One function: it is the bench's output, in reading order.
pub fn print(i: &Inputs<'_>, load: &Load) {
    let c = i.clock;
    let slots = TENANTS * TENANT_LIMIT as usize;
    let intervals: Vec<(Instant, Instant)> = i
        .tasks
        .iter()
        .map(|t| (t.started_at, t.ended_at.unwrap_or_else(Instant::now)))
        .collect();
    let steps = busy_steps(&intervals);
    let last_end = intervals.iter().map(|i| i.1).max().unwrap_or(c.t0);
    let last_start = intervals.iter().map(|i| i.0).max().unwrap_or(c.t0);
    let first_start = intervals.iter().map(|i| i.0).min().unwrap_or(c.t0);
    let full_from = steps.iter().find(|s| s.1 >= slots).map(|s| s.0);

    println!(
        "\nbusy slots over time (time-weighted mean per {} s bucket; {slots} slots):",
        i.bucket.as_secs_f64()
    );
    println!("  {:>6}  {:>5}  bar", "t (s)", "busy");
    for (k, b) in curve(&steps, c.t0, last_end, i.bucket).iter().enumerate() {
        let t = k as f64 * i.bucket.as_secs_f64();
        println!("  {t:>6.0}  {b:>5.1}  {}", "#".repeat((b * 2.0).round() as usize));
    }

    let (overall, per) = load.peaks(i.created, i.tasks);
    println!(
        "\nbench_load: {} clusters, wall time {:.1} s (first create → last runner exit); all accepted in {:.1} s, all ACTIVE in {:.1} s",
        i.created.len(),
        c.mono(last_end),
        i.accepted.as_secs_f64(),
        i.all_active.as_secs_f64()
    );
    println!(
        "  peak concurrent runners {overall} overall, per tenant {per:?}; first runner started at {:.1} s, last at {:.1} s",
        c.mono(first_start),
        c.mono(last_start)
    );
    match full_from {
        Some(from) if from < last_start => {
            let busy = mean_busy(&steps, from, last_start);
            println!(
                "  queue full (all {slots} slots first busy at {:.1} s) until the last runner started ({:.1} s): busy {:.2} of {slots} slots = {:.1} % (time-weighted)",
                c.mono(from),
                c.mono(last_start),
                busy,
                100.0 * busy / slots as f64
            );
        }
        _ => println!("  the {slots} slots were never all busy before the last runner started"),
    }
    let busy = mean_busy(&steps, first_start, last_start);
    println!(
        "  first → last runner start ({:.1} → {:.1} s): busy {busy:.2} of {slots} = {:.1} %",
        c.mono(first_start),
        c.mono(last_start),
        100.0 * busy / slots as f64
    );

    let (h, unpaired) = handoffs(i);
    let within = h.iter().filter(|h| h.task_start - h.report_sent <= 2.0).count();
    println!(
        "\nslot hand-offs: {} (by the woken job's deduplication id; {unpaired} unmatched), {within} within 2 s of the final report",
        h.len()
    );
    let col = |f: fn(&Handoff) -> f64| h.iter().map(f).collect::<Vec<_>>();
    stats(
        "final report → successor runner started",
        col(|h| h.task_start - h.report_sent),
    );
    println!(" breakdown:");
    stats(
        "report sent → status invoked with it",
        col(|h| h.status_invoked - h.report_sent),
    );
    stats(
        "status invoked → wake-up job sent",
        col(|h| h.wake_sent - h.status_invoked),
    );
    stats(
        "wake-up sent → dispatcher invoked",
        col(|h| h.dispatcher_invoked - h.wake_sent),
    );
    stats(
        "dispatcher invoked → RunTask",
        col(|h| h.run_task - h.dispatcher_invoked),
    );
    stats(
        "RunTask → runner process started",
        col(|h| h.task_start - h.run_task),
    );
    println!(" context:");
    stats(
        "status invocation (whole batch)",
        col(|h| h.status_returned - h.status_invoked),
    );
    stats("records in that status batch", col(|h| h.status_batch as f64));
    stats(
        "report sent → releasing runner exited",
        col(|h| h.runner_exit - h.report_sent),
    );
    let ev: Vec<&Hop> = i.hops.iter().filter(|h| h.queue == "events").collect();
    let mut kinds: HashMap<&str, usize> = HashMap::new();
    for h in &ev {
        *kinds.entry(h.kind.as_str()).or_default() += 1;
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    println!("  events records handled: {} {kinds:?}", ev.len());
    stats(
        "any events record: sent → status invoked",
        ev.iter()
            .map(|h| h.sent.map_or(f64::NAN, |s| (h.invoked - s).as_seconds_f64()))
            .collect(),
    );
}
