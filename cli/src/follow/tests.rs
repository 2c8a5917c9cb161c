//! The follower against a scripted WebSocket API and a ticket stub, both in-process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogLine, LogStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use super::{Event, Options, follow};
use crate::api::Api;

fn lines(seqs: std::ops::RangeInclusive<u64>) -> Vec<LogLine> {
    seqs.map(|seq| LogLine {
        seq,
        ts: strato_domain::ts::now(),
        stream: LogStream::Stdout,
        step: "apply".into(),
        text: format!("line {seq}"),
    })
    .collect()
}

/// The archive replay of `seqs` (a `log` frame, as the ws function posts it).
fn replayed(op: &OperationId, seqs: std::ops::RangeInclusive<u64>) -> String {
    let frame = LogFrame::Log {
        operation_id: op.clone(),
        first_seq: *seqs.start(),
        lines: lines(seqs),
        skipped: None,
    };
    serde_json::to_string(&frame).unwrap()
}

/// Live lines `seqs` (a `log_batch` frame, as log-fanout posts it).
fn live(op: &OperationId, seqs: std::ops::RangeInclusive<u64>) -> String {
    let frame = LogFrame::Log {
        operation_id: op.clone(),
        first_seq: *seqs.start(),
        lines: lines(seqs),
        skipped: None,
    };
    let mut f =
        strato_stream::live_batch::encode_live(op, &[frame], strato_stream::logs::MAX_FRAME_BYTES).unwrap();
    assert_eq!(f.len(), 1);
    assert!(f[0].contains("log_batch"));
    f.remove(0)
}

fn subscribed(op: &OperationId, from: u64, to: u64) -> String {
    json!({"type": "subscribed", "operation_id": op, "from_seq": from, "replayed_to": to}).to_string()
}

fn end(op: &OperationId, last: u64) -> String {
    json!({"type": "end", "operation_id": op, "final_status": "succeeded", "last_seq": last}).to_string()
}

/// `POST /v1/ws-tickets` answered with a ticket, one request per connection.
async fn ticket_api() -> Api {
    // As main does: the build has two TLS providers, reqwest needs the one chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then the body its Content-Length announces.
            while let Ok(n @ 1..) = s.read(&mut buf).await {
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req).to_lowercase();
                if let Some(h) = text.find("\r\n\r\n") {
                    let len = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if req.len() >= h + 4 + len {
                        break;
                    }
                }
            }
            let body = r#"{"token":"ticket"}"#;
            let answer = format!(
                "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    Api::new(&url, Some("t".into())).unwrap()
}

/// A WebSocket API answering each `subscribe` with `script(connection number, from_seq)`; the number of
/// connections it accepted comes back in the counter.
async fn ws_api(script: fn(usize, u64) -> Vec<String>) -> (String, Arc<Mutex<usize>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", l.local_addr().unwrap());
    let conns = Arc::new(Mutex::new(0));
    let counter = conns.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let n = {
                let mut c = counter.lock().unwrap();
                *c += 1;
                *c - 1
            };
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(s).await else {
                    return;
                };
                while let Some(Ok(Message::Text(t))) = ws.next().await {
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v["action"] != "subscribe" {
                        continue;
                    }
                    for f in script(n, v["from_seq"].as_u64().unwrap()) {
                        if ws.send(Message::Text(f.into())).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, conns)
}

/// Follows the scripted operation: the seqs handed on and every reconnect's (from_seq, reason).
async fn run(
    op: &OperationId,
    script: fn(usize, u64) -> Vec<String>,
) -> (Vec<u64>, Vec<(u64, String)>, usize) {
    let api = ticket_api().await;
    let (ws, conns) = ws_api(script).await;
    let opts = Options {
        timeout: Some(Duration::from_secs(20)),
        gap_repair: Duration::from_millis(200),
        ..Options::default()
    };
    let (mut seqs, mut reconnects) = (Vec::new(), Vec::new());
    let outcome = follow(&api, &ws, op.as_str(), opts, |e| match e {
        Event::Line(l) => seqs.push(l.seq),
        Event::Reconnecting { from_seq, reason } => reconnects.push((from_seq, reason)),
        Event::Status { .. } => {}
    })
    .await
    .unwrap();
    assert_eq!(outcome.final_status.as_deref(), Some("succeeded"));
    let n = *conns.lock().unwrap();
    (seqs, reconnects, n)
}

static OP: std::sync::LazyLock<OperationId> = std::sync::LazyLock::new(OperationId::generate);

#[tokio::test]
async fn a_late_watcher_fetches_the_lines_written_before_it_attached_and_claims_no_loss() {
    // Attached while lines 36..=49 were fanned out but not archived yet: the replay has 1..=35, the
    // live stream starts at 50; the archive has 36..=49 when asked again.
    let (seqs, reconnects, conns) = run(&OP, |_, from| match from {
        1 => vec![
            replayed(&OP, 1..=35),
            subscribed(&OP, 1, 35),
            live(&OP, 50..=55),
            live(&OP, 56..=60),
        ],
        from => vec![replayed(&OP, from..=49), subscribed(&OP, from, 49), end(&OP, 60)],
    })
    .await;
    assert_eq!(seqs, (1..=60).collect::<Vec<_>>(), "every line once, in order");
    assert!(reconnects.is_empty(), "nothing was lost: {reconnects:?}");
    assert_eq!(conns, 1, "the same connection asked the archive again");
    // The end came live before the lines written before attaching were asked for again.
    let (seqs, reconnects, conns) = run(&OP, |_, from| match from {
        1 => vec![
            replayed(&OP, 1..=35),
            subscribed(&OP, 1, 35),
            live(&OP, 50..=60),
            end(&OP, 60),
        ],
        from => vec![replayed(&OP, from..=60), subscribed(&OP, from, 60), end(&OP, 60)],
    })
    .await;
    assert_eq!(seqs, (1..=60).collect::<Vec<_>>());
    assert!(reconnects.is_empty(), "nothing was lost: {reconnects:?}");
    assert_eq!(conns, 1);
}

#[tokio::test]
async fn a_gap_in_the_live_stream_after_attaching_is_reported_and_repaired() {
    // Lines 21..=24 skipped by the live stream after this watcher attached at 11: a real gap.
    let (seqs, reconnects, _) = run(&OP, |conn, from| match (conn, from) {
        (0, 1) => vec![
            replayed(&OP, 1..=10),
            subscribed(&OP, 1, 10),
            live(&OP, 11..=20),
            live(&OP, 25..=30),
        ],
        (_, from) => vec![replayed(&OP, from..=30), subscribed(&OP, from, 30), end(&OP, 30)],
    })
    .await;
    assert_eq!(seqs, (1..=30).collect::<Vec<_>>());
    assert_eq!(reconnects.len(), 1, "{reconnects:?}");
    assert_eq!(reconnects[0].0, 21);
    assert!(
        reconnects[0].1.contains("lines from seq 21 are missing"),
        "{reconnects:?}"
    );
}
