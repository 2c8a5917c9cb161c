//! bench_logs' reading side: what a subscriber parses, and the figures printed per scenario.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::{Arrivals, BatchTiming, PollStats, Scenario};

/// Just what a reader needs from a frame: the seqs it carries, without building its lines.
#[derive(serde::Deserialize)]
pub(crate) struct Seqs {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    first_seq: u64,
    #[serde(default)]
    lines: Vec<SeqOnly>,
    #[serde(default)]
    runs: Vec<RunLen>,
}

#[derive(serde::Deserialize)]
struct SeqOnly {
    seq: u64,
}

#[derive(serde::Deserialize)]
struct RunLen {
    text: Vec<serde::de::IgnoredAny>,
}

impl Seqs {
    pub(crate) fn seqs(&self) -> Vec<u64> {
        match self.kind.as_str() {
            "log" => self.lines.iter().map(|l| l.seq).collect(),
            "log_batch" => {
                let n: usize = self.runs.iter().map(|r| r.text.len()).sum();
                (self.first_seq..self.first_seq + n as u64).collect()
            }
            _ => Vec::new(),
        }
    }
}

pub(crate) fn pct(v: &mut [i64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i] as f64 / 1000.0
}

/// Per line per subscriber: total latency, the emulator's share, the runner's batching wait; then the row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    s: Scenario,
    produced: &[Vec<i64>],
    received: &[(usize, Arrivals)],
    timings: &HashMap<(usize, u64), BatchTiming>,
    start: i64,
    posts: u64,
    stats: &PollStats,
    order: u64,
) {
    let mut firsts: Vec<(usize, u64)> = timings.keys().copied().collect();
    firsts.sort_unstable();
    let batch_of = |op: usize, seq: u64| -> Option<&BatchTiming> {
        let i = firsts.partition_point(|f| *f <= (op, seq));
        let f = firsts.get(i.checked_sub(1)?)?;
        (f.0 == op).then(|| timings.get(f)).flatten()
    };
    let (mut total_lat, mut emu, mut excl, mut batching) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut last_arrival = start;
    let mut delivered = 0u64;
    for (op, per_sub) in received {
        delivered += per_sub.len() as u64;
        for (seq, at) in per_sub {
            last_arrival = last_arrival.max(*at);
            let produced = produced[*op][*seq as usize];
            let Some(b) = batch_of(*op, *seq) else { continue };
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
    // Per batch, each stage: moto's SendMessage, queue dwell until a poller got it (moto's share, then
    // backlog), the handler's wall time less moto's DynamoDB time (its own work and the posts), DynamoDB.
    let (mut send, mut dwell, mut backlog, mut handler, mut ddb) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in timings.values().filter(|b| b.received > 0) {
        send.push(b.send_end - b.send_start);
        dwell.push((b.received - b.send_end.max(b.receive_start)).max(0));
        backlog.push((b.receive_start - b.send_end).max(0));
        handler.push(b.handler_us - b.ddb_us);
        ddb.push(b.ddb_us);
    }
    let mut stages = String::new();
    for (name, v) in [
        ("send", &mut send),
        ("dwell", &mut dwell),
        ("backlog", &mut backlog),
        ("handler-ddb", &mut handler),
        ("ddb", &mut ddb),
    ] {
        stages += &format!(" {name} {:.0}/{:.0}", pct(v, 0.5), pct(v, 0.99));
    }
    println!("  stages per batch, p50/p99 ms:{stages}");
    let lines: u64 = produced.iter().map(|p| p.len() as u64 - 1).sum();
    let expected = lines * s.subscribers as u64;
    let secs = ((last_arrival - start) as f64 / 1e6).max(1e-3);
    let cpu_ms = stats.cpu_us.load(Ordering::Relaxed) as f64 / 1000.0;
    println!(
        "{:>7} {:>3} {:>5} {:>7} {:>7} {:>6} {:>5} | {:>7.1} {:>7.1} | {:>7.1} {:>7.1} | {:>8.1} {:>8.1} {:>8.1} | {:>6.3} {:>7.0} | {:>8.2} {:>8.3}",
        s.rate,
        s.ops,
        s.subscribers * s.ops,
        lines,
        format!("{:.1}%", 100.0 * delivered as f64 / expected.max(1) as f64),
        expected - delivered.min(expected),
        order,
        pct(&mut total_lat, 0.50),
        pct(&mut total_lat, 0.99),
        pct(&mut emu, 0.50),
        pct(&mut emu, 0.99),
        pct(&mut excl, 0.50),
        pct(&mut excl, 0.99),
        pct(&mut batching, 0.50),
        posts as f64 / lines.max(1) as f64,
        posts as f64 / secs,
        cpu_ms / (lines.max(1) as f64 / 1000.0),
        cpu_ms / (delivered.max(1) as f64 / 1000.0),
    );
}
