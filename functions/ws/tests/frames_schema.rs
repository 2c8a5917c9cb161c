//! The WebSocket frames' JSON Schemas (`functions/ws/server-frames.schema.json`, `client-frames.schema.json`)
//! are generated from the frame types: this test fails when the checked-in files are stale
//! (`STRATO_BLESS=1 cargo test -p strato-ws --test frames_schema` rewrites them), and checks real frames —
//! as `encode_frames` cuts them, and the sample client messages — against them.

use std::path::PathBuf;

use serde_json::{Value, json};
use strato_model::ids::{ClusterId, OperationId};
use strato_model::messages::{LogFrame, LogLine, LogStream, SkippedLines};
use strato_model::model::{ClusterState, OperationStatus};
use strato_model::ts;
use strato_stream::live_batch::encode_live;
use strato_stream::logs::{ControlFrame, MAX_FRAME_BYTES, encode_frames, frame_schemas};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn check_or_bless(name: &str, generated: &Value) {
    let text = serde_json::to_string_pretty(generated).unwrap() + "\n";
    if std::env::var_os("STRATO_BLESS").is_some() {
        std::fs::write(path(name), &text).unwrap();
        return;
    }
    let current = std::fs::read_to_string(path(name)).unwrap_or_default();
    assert!(
        current == text,
        "functions/ws/{name} is stale: regenerate it with `STRATO_BLESS=1 cargo test -p strato-ws --test frames_schema`"
    );
}

#[test]
fn the_checked_in_schemas_are_the_generated_ones() {
    let (server, client) = frame_schemas();
    check_or_bless("server-frames.schema.json", &server);
    check_or_bless("client-frames.schema.json", &client);
}

fn validator(name: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid(v: &jsonschema::Validator, frame: &str) {
    let value: Value = serde_json::from_str(frame).unwrap();
    let errors: Vec<String> = v.iter_errors(&value).map(|e| e.to_string()).collect();
    let shown: String = frame.chars().take(300).collect();
    assert!(errors.is_empty(), "{shown}: {errors:?}");
}

fn line(seq: u64, text: String) -> LogLine {
    LogLine {
        seq,
        ts: ts::now(),
        stream: LogStream::Stdout,
        step: "apply".into(),
        text,
    }
}

#[test]
fn every_frame_the_server_sends_matches_the_schema() {
    let server = validator("server-frames.schema.json");
    let op = OperationId::generate();
    // A batch with a line too long for one frame: `log` frames and `log_part` frames.
    let log = LogFrame::Log {
        operation_id: op.clone(),
        first_seq: 1,
        lines: vec![line(1, "short".into()), line(2, "x".repeat(3 * MAX_FRAME_BYTES))],
        skipped: Some(SkippedLines {
            from_seq: 1,
            to_seq: 1,
        }),
    };
    let mut all = encode_frames(&log, MAX_FRAME_BYTES).unwrap();
    assert!(all.iter().any(|f| f.contains("\"log_part\"")));
    // log-fanout's packed frames, as encode_live cuts them (with a skip marker and two runs).
    let mut other_step = line(4, "other step".into());
    other_step.step = "plan".into();
    let live = LogFrame::Log {
        operation_id: op.clone(),
        first_seq: 3,
        lines: vec![line(3, "live".into()), other_step],
        skipped: Some(SkippedLines {
            from_seq: 2,
            to_seq: 2,
        }),
    };
    let packed = encode_live(&op, &[log.clone(), live], MAX_FRAME_BYTES).unwrap();
    assert!(
        packed
            .iter()
            .any(|f| f.contains("\"log_batch\"") && f.contains("\"skipped\""))
    );
    all.extend(packed);
    let status = LogFrame::Status {
        operation_id: op.clone(),
        cluster_id: ClusterId::generate(),
        cluster_state: ClusterState::Provisioning,
        operation_status: OperationStatus::Running,
        step: Some("network/apply".into()),
        message: None,
        at: ts::now(),
    };
    let end = LogFrame::End {
        operation_id: op.clone(),
        final_status: OperationStatus::Succeeded,
        last_seq: 2,
    };
    all.push(serde_json::to_string(&status).unwrap());
    all.push(serde_json::to_string(&end).unwrap());
    let control = [
        ControlFrame::Subscribed {
            operation_id: op.clone(),
            from_seq: 1,
            replayed_to: 2,
            more: false,
        },
        ControlFrame::Subscribed {
            operation_id: op.clone(),
            from_seq: 1,
            replayed_to: 5000,
            more: true,
        },
        ControlFrame::Unsubscribed { operation_id: op },
        ControlFrame::Pong,
        ControlFrame::Error {
            message: "unknown action 'x'".into(),
            fix: "send subscribe, unsubscribe or ping".into(),
            action: Some("x".into()),
            operation_id: None,
        },
    ];
    all.extend(control.iter().map(|c| serde_json::to_string(c).unwrap()));
    for f in &all {
        assert_valid(&server, f);
    }
    // Not a blank check: a frame of an unknown type, or one missing its operation, is refused.
    assert!(!server.is_valid(&json!({"type": "gossip"})));
    assert!(!server.is_valid(&json!({"type": "end", "final_status": "succeeded", "last_seq": 1})));
    assert!(!server.is_valid(&json!({"type": "log_batch", "first_seq": 1, "runs": []})));
}

#[test]
fn the_sample_client_messages_match_the_schema() {
    let client = validator("client-frames.schema.json");
    for name in ["subscribe", "unsubscribe", "ping"] {
        let p = path(&format!("../../events/ws/{name}.json"));
        let event: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_valid(&client, event["body"].as_str().unwrap());
    }
    assert!(!client.is_valid(&json!({"action": "subscribe"})));
}
