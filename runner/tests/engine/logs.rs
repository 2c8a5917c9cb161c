//! The log pipeline against moto: a live path that cannot keep up skips lines with a marker while the
//! producer never waits, and the archive still holds every line in order (with secrets redacted).

use crate::support;

use std::time::{Duration, Instant};

use strato_aws::queues::QueueUrls;
use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogLine, LogStream};
use strato_runner::logs::{LogHub, LogSinks, Redactor};
use strato_terraform::artifacts;
use strato_testbed::TestEnv;

/// (first_seq, lines, skipped range)
type Frame = (u64, Vec<LogLine>, Option<(u64, u64)>);

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_live_path_skips_with_a_marker_and_the_archive_keeps_every_line() {
    let env = TestEnv::new().await;
    let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
    let sinks = LogSinks {
        sqs: env.aws.sqs.clone(),
        logs_url: queues.logs.clone(),
        s3: env.aws.s3.clone(),
        artifacts_bucket: env.names.bucket("artifacts"),
        traceparent: None,
    };
    let op = OperationId::generate();
    let redactor = Redactor::default();
    redactor.add("s3cr3t-token");
    // A tiny live buffer: moto's SQS cannot take 20,000 lines as fast as they come.
    let (hub, tasks) = LogHub::start_with_capacity(op.clone(), sinks.clone(), redactor, 8);
    const N: u64 = 20_000;
    let t = Instant::now();
    for i in 1..=N {
        let text = if i == 7 {
            "token=s3cr3t-token".to_owned()
        } else {
            format!("o:line {i} {}", "x".repeat(40))
        };
        hub.emit(LogStream::Stdout, "apply", &text);
    }
    let emitting = t.elapsed();
    assert!(
        emitting < Duration::from_secs(3),
        "emit must never wait: {emitting:?}"
    );
    assert!(hub.live_skipped() > 0, "the live path had to skip");
    drop(hub);
    let last = tasks.finish(&sinks, &op).await.unwrap();
    assert_eq!(last, N);

    // Archive: every line, in order, no gaps, prefix stripped, secret redacted.
    let mut keys = archived_keys(&env.aws.s3, &sinks.artifacts_bucket, &op).await;
    keys.sort();
    let mut seq = 0;
    for k in keys
        .iter()
        .filter(|k| artifacts::parse_log_chunk_key(k).is_some())
    {
        let body = env
            .aws
            .s3
            .get_object()
            .bucket(&sinks.artifacts_bucket)
            .key(k)
            .send()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        for l in String::from_utf8(body.to_vec()).unwrap().lines() {
            let line: LogLine = serde_json::from_str(l).unwrap();
            seq += 1;
            assert_eq!(line.seq, seq);
            if seq == 7 {
                assert_eq!(line.text, "token=(sensitive value)");
            } else {
                assert!(line.text.starts_with(&format!("line {seq} ")), "{}", line.text);
            }
        }
    }
    assert_eq!(seq, N);

    // Live: increasing, contiguous within a frame, and every gap before a frame is announced.
    let frames: Vec<LogFrame> = env
        .drain(&queues.logs)
        .await
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let mut frames: Vec<Frame> = frames
        .into_iter()
        .map(|f| match f {
            LogFrame::Log {
                first_seq,
                lines,
                skipped,
                ..
            } => (first_seq, lines, skipped.map(|s| (s.from_seq, s.to_seq))),
            other => panic!("{other:?}"),
        })
        .collect();
    frames.sort_by_key(|f| f.0);
    let mut next = 1;
    let mut marked = 0;
    for (first, lines, skipped) in &frames {
        if *first > next {
            assert_eq!(*skipped, Some((next, first - 1)), "gap before {first} announced");
            marked += 1;
        } else {
            assert_eq!(*skipped, None);
        }
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l.seq, first + i as u64);
        }
        assert!(lines.iter().map(|l| l.text.len()).sum::<usize>() <= 32 * 1024);
        next = first + lines.len() as u64;
    }
    assert!(marked > 0, "at least one skip marker");
}

/// Issue 15 defect 8: one archive chunk S3 refuses (every retry denied) no longer stops the archive
/// silently: it is retried, later chunks are still written, and the archive's last line names the gap.
/// Before, the first failed chunk ended the archive task and every later line was lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_archive_chunk_is_retried_and_later_chunks_are_still_archived() {
    let env = TestEnv::new().await;
    let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
    let op = OperationId::generate();
    let first_chunk = format!("{}000000000001-", artifacts::log_prefix(&op));
    let proxy = support::proxy::FaultProxy::deny_s3_puts(&env.endpoint, &first_chunk, 1000).await;
    let s3 = strato_aws::aws::AwsClients::for_endpoint(&proxy.endpoint, &env.region)
        .await
        .s3;
    let sinks = LogSinks {
        sqs: env.aws.sqs.clone(),
        logs_url: queues.logs.clone(),
        s3,
        artifacts_bucket: env.names.bucket("artifacts"),
        traceparent: None,
    };
    let (hub, tasks) = LogHub::start(op.clone(), sinks.clone(), Redactor::default());
    for i in 1..=10 {
        hub.emit(LogStream::Stdout, "apply", &format!("first {i}"));
    }
    // The first chunk is cut after 2 s without lines; these go into a later one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for i in 11..=20 {
        hub.emit(LogStream::Stdout, "apply", &format!("second {i}"));
    }
    drop(hub);
    let last = tasks
        .finish(&sinks, &op)
        .await
        .expect("the archive goes on after a failed chunk");
    assert_eq!(last, 21, "20 lines and the gap note");
    assert!(
        proxy.injected.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "the failed chunk was retried"
    );
    let keys = archived_keys(&env.aws.s3, &sinks.artifacts_bucket, &op).await;
    assert!(
        keys.contains(&artifacts::log_chunk_key(&op, 11, 20)),
        "later lines archived: {keys:?}"
    );
    assert!(!keys.iter().any(|k| k.starts_with(&first_chunk)), "{keys:?}");
    let note = env
        .aws
        .s3
        .get_object()
        .bucket(&sinks.artifacts_bucket)
        .key(artifacts::log_chunk_key(&op, 21, 21))
        .send()
        .await
        .expect("the gap note is archived")
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    let note: LogLine = serde_json::from_slice(note.trim_ascii_end()).unwrap();
    assert!(
        note.text.contains("lines 1–10") && note.text.contains("AccessDenied"),
        "{}",
        note.text
    );
    let complete = env
        .aws
        .s3
        .get_object()
        .bucket(&sinks.artifacts_bucket)
        .key(artifacts::log_complete_key(&op))
        .send()
        .await
        .unwrap()
        .body
        .collect()
        .await
        .unwrap()
        .into_bytes();
    assert_eq!(&complete[..], b"21");
}

/// The keys of `op`'s archived log objects.
async fn archived_keys(s3: &aws_sdk_s3::Client, bucket: &str, op: &OperationId) -> Vec<String> {
    let list = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(artifacts::log_prefix(op))
        .send()
        .await
        .unwrap();
    list.contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect()
}
