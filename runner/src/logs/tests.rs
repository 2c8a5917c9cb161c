//! The log pipeline on the fakes: debug lines kept out of the user stream, redaction, an archive chunk that
//! cannot be stored named in the archive's last line, and the live path skipping (with a marker) when it
//! falls behind while the archive keeps every line.

use std::time::Duration;

use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogStream};

use super::*;
use crate::fakes::FakeSinks;

#[test]
fn debug_lines_and_their_continuations_stay_out_of_the_user_stream() {
    assert!(is_debug_line("[INFO] Terraform version: 0.15.0 rc2"));
    assert!(is_debug_line(
        "2026-11-22T04:55:01.123Z [DEBUG] provider.terraform-provider-aws_v3.39.0_x5: x"
    ));
    assert!(is_debug_line("2021-05-01T10:00:00.000+0200 [TRACE] x"));
    assert!(!is_debug_line("aws_vpc.this: Creating..."));
    let mut s = StderrSplitter::default();
    assert!(!s.is_debug("Some early message"));
    assert!(s.is_debug("[TRACE] graph:"));
    assert!(s.is_debug("  var.region - *terraform.NodeRootVariable"));
    assert!(s.is_debug(""));
    assert!(!s.is_debug("Error: Error creating VPC: InvalidParameterValue"));
    assert!(!s.is_debug("\tstatus code: 400"));
    assert!(s.is_debug("[DEBUG] more"));
}

#[test]
fn redaction_replaces_secrets_longest_first() {
    let r = Redactor::default();
    r.add("hunter2-secret");
    r.add("hunter2");
    r.add("ab");
    let out = r.redact("pw=hunter2-secret and hunter2, ab");
    assert_eq!(out, "pw=(sensitive value) and (sensitive value), ab");
}

#[tokio::test]
async fn a_chunk_that_cannot_be_archived_is_named_and_later_chunks_are_still_written() {
    let op = OperationId::generate();
    let sinks = FakeSinks::default();
    // The first chunk (a full one) is refused, every retry of it too.
    sinks.fail_puts_under(&artifacts::log_chunk_key(&op, 1, CHUNK_LINES as u64));
    let (hub, tasks) = LogHub::start(op.clone(), sinks.clone(), Redactor::default());
    for i in 1..=CHUNK_LINES + 5 {
        hub.emit(LogStream::Stdout, "apply", &format!("line {i}"));
    }
    drop(hub);
    let last = tasks.finish(&sinks, &op).await.unwrap();
    let n = CHUNK_LINES as u64;
    assert_eq!(last, n + 6, "the note is the archive's last line");
    let lines = sinks.archived_lines();
    let seqs: Vec<u64> = lines.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, (n + 1..=n + 6).collect::<Vec<_>>(), "later lines archived");
    let note = &lines.last().unwrap().text;
    assert!(
        note.starts_with("log archive incomplete") && note.contains(&format!("lines 1–{n}")),
        "{note}"
    );
    assert!(note.contains("access denied"), "the error is named: {note}");
    let marker = sinks.object(&artifacts::log_complete_key(&op)).unwrap();
    assert_eq!(String::from_utf8(marker).unwrap(), (n + 6).to_string());
}

#[tokio::test]
async fn a_live_path_that_falls_behind_skips_with_a_marker_and_the_archive_keeps_every_line() {
    let op = OperationId::generate();
    let sinks = FakeSinks::default();
    let r = Redactor::default();
    r.add("hunter2-secret");
    let (hub, tasks) = LogHub::start_with_capacity(op.clone(), sinks.clone(), r, 8);
    // Emitted without yielding: the shipper cannot take any of them yet, so the channel fills at 8.
    for i in 1..=100 {
        hub.emit(LogStream::Stdout, "apply", &format!("line {i} pw=hunter2-secret"));
    }
    assert_eq!(hub.live_skipped(), 92);
    // Once the shipper caught up, the next line's frame says what the live path skipped.
    tokio::time::sleep(Duration::from_millis(300)).await;
    hub.emit(LogStream::Stdout, "apply", "line 101");
    drop(hub);
    assert_eq!(tasks.finish(&sinks, &op).await.unwrap(), 101);
    let archived = sinks.archived_lines();
    assert_eq!(archived.len(), 101, "the archive keeps every line");
    assert!(archived.iter().all(|l| !l.text.contains("hunter2-secret")));
    assert!(archived[0].text.ends_with("pw=(sensitive value)"));
    let frames = sinks.frames();
    let shipped: Vec<u64> = frames
        .iter()
        .flat_map(|f| match f {
            LogFrame::Log { lines, .. } => lines.iter().map(|l| l.seq).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(shipped, (1..=8).chain([101]).collect::<Vec<_>>());
    let marker = frames.iter().find_map(|f| match f {
        LogFrame::Log { skipped: Some(s), .. } => Some((s.from_seq, s.to_seq)),
        _ => None,
    });
    assert_eq!(marker, Some((9, 100)));
}

#[tokio::test]
async fn a_later_run_continues_after_the_archived_lines() {
    let op = OperationId::generate();
    let sinks = FakeSinks::default();
    assert_eq!(archived_last_seq(&sinks, &op).await.unwrap(), 0);
    sinks.insert(&artifacts::log_chunk_key(&op, 1, 40), Vec::new());
    sinks.insert(&artifacts::log_chunk_key(&op, 41, 57), Vec::new());
    sinks.insert(&artifacts::log_complete_key(&op), Vec::new());
    assert_eq!(archived_last_seq(&sinks, &op).await.unwrap(), 57);
}
