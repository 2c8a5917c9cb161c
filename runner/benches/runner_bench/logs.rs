//! Log throughput: a chatty child through the runner's line reader + log hub.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strato_aws::queues::QueueUrls;
use strato_domain::ids::OperationId;
use strato_runner::engine::ProcessEngine;
use strato_runner::logs::{LogHub, LogSinks, Redactor};
use strato_testbed::TestEnv;

use super::usage;

pub async fn log_throughput(env: &TestEnv, lines: u64) {
    let script = format!(
        "yes 'aws_vpc.this: Still creating... [10s elapsed] ---------------------' | head -n {lines}"
    );
    // Bare: the producer alone.
    let t = Instant::now();
    let st = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let bare = t.elapsed();

    let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
    let sinks = LogSinks {
        sqs: env.aws.sqs.clone(),
        logs_url: queues.logs.clone(),
        s3: env.aws.s3.clone(),
        artifacts_bucket: env.names.bucket("artifacts"),
        traceparent: None,
    };
    let op = OperationId::generate();
    let (hub, tasks) = LogHub::start(op.clone(), sinks.clone(), Redactor::default());
    let engine = ProcessEngine {
        bin: "sh".into(),
        env: Vec::new(),
        grace: Duration::from_secs(5),
    };
    let (_tx, mut rx) = tokio::sync::watch::channel(None);
    let before = usage(libc::RUSAGE_SELF);
    let t = Instant::now();
    let out = engine
        .run(
            Path::new("/tmp"),
            &["-c".into(), script.clone()],
            "apply",
            false,
            &hub,
            &mut rx,
        )
        .await
        .unwrap();
    let through = t.elapsed();
    assert_eq!(out.code, Some(0));
    let skipped = hub.live_skipped();
    assert_eq!(hub.last_seq(), lines);
    drop(hub);
    let t2 = Instant::now();
    let last = tasks.finish(&sinks, &op).await.unwrap();
    let drain = t2.elapsed();
    let cpu = usage(libc::RUSAGE_SELF).cpu - before.cpu;
    assert_eq!(last, lines, "archive holds every line");
    println!("log throughput ({lines} lines of ~70 bytes from `yes | head`):");
    println!(
        "  producer alone            {:>8.3} s  ({:>10.0} lines/s)",
        bare.as_secs_f64(),
        lines as f64 / bare.as_secs_f64()
    );
    println!(
        "  through the runner reader {:>8.3} s  ({:>10.0} lines/s)  slowdown x{:.2}",
        through.as_secs_f64(),
        lines as f64 / through.as_secs_f64(),
        through.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "  live path skipped {skipped} lines (moto SQS is slow); archive complete ({last} lines) {:.3} s after the producer exited",
        drain.as_secs_f64()
    );
    println!(
        "  runner CPU for reading + shipping + archiving: {:.3} s",
        cpu.as_secs_f64()
    );
}
