//! What arrives on the `events` queue: runner events, control events (the agent handshake) and EventBridge
//! "ECS Task State Change" events, told apart by their shape.

use strato_domain::ecs_event::DETAIL_TYPE;
pub use strato_domain::ecs_event::{
    EnvVar, TaskContainer, TaskContainerOverride, TaskOverrides, TaskStateChange, TaskStateChangeEvent,
};
use strato_domain::messages::{ControlEvent, RunnerEvent};
use strato_domain::run_proof::PROOF_FIELD;

use crate::StatusError;

#[derive(Debug, Clone)]
pub enum Incoming {
    /// A runner event and the run proof it carried (checked before it is applied).
    Runner(RunnerEvent, Option<String>),
    /// From the control plane itself: the agent handshake.
    Control(ControlEvent),
    Task(Box<TaskStateChange>),
    /// An event of another kind on the bus rule (it cannot be applied; logged and dropped).
    Other(String),
}

pub fn parse_body(message_id: &str, body: &str) -> Result<Incoming, StatusError> {
    let bad = |reason: String| StatusError::BadBody {
        message_id: message_id.to_owned(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| bad(e.to_string()))?;
    if let Some(kind) = value.get("detail-type") {
        let kind = kind.as_str().unwrap_or_default();
        if kind != DETAIL_TYPE {
            return Ok(Incoming::Other(kind.to_owned()));
        }
        let event: TaskStateChangeEvent = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        let detail = event.detail.ok_or_else(|| bad("detail: missing".into()))?;
        return Ok(Incoming::Task(Box::new(detail)));
    }
    if matches!(
        value.get("type").and_then(|t| t.as_str()),
        Some("agent_ready" | "configure_deadline")
    ) {
        return serde_json::from_value(value)
            .map(Incoming::Control)
            .map_err(|e| bad(e.to_string()));
    }
    let proof = value.get(PROOF_FIELD).and_then(|p| p.as_str()).map(str::to_owned);
    serde_json::from_value(value)
        .map(|ev| Incoming::Runner(ev, proof))
        .map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::sample_body;
    use strato_domain::run_proof::RunProofKey;

    #[test]
    fn ecs_stopped_sample_names_operation_token_and_exit() {
        let Incoming::Task(t) = parse_body("m", &sample_body("ecs-task-stopped-oom.json")).unwrap() else {
            panic!("not a task change");
        };
        assert_eq!(
            t.operation_id().unwrap().as_str(),
            "op-0192f1a2b3c47d8e9f0a1b2c3d4e5f60"
        );
        assert_eq!(t.fencing_token(), Some(1));
        assert_eq!(t.last_status, "STOPPED");
        assert_eq!(t.runner().unwrap().exit_code, Some(137));
    }

    #[test]
    fn operation_id_falls_back_to_started_by() {
        let mut v: serde_json::Value =
            serde_json::from_str(&sample_body("ecs-task-stopped-exit0.json")).unwrap();
        v["detail"]["overrides"] = serde_json::json!({});
        let Incoming::Task(t) = parse_body("m", &v.to_string()).unwrap() else {
            panic!()
        };
        assert_eq!(
            t.operation_id().unwrap().as_str(),
            "op-0192f1a2b3c47d8e9f0a1b2c3d4e5f60"
        );
        assert_eq!(t.fencing_token(), None);
    }

    #[test]
    fn every_runner_sample_parses_and_other_events_are_recognised() {
        for name in [
            "step-started",
            "step-finished",
            "heartbeat",
            "succeeded",
            "succeeded-drift",
            "failed",
            "cancelled",
        ] {
            let body = sample_body(&format!("runner-{name}.json"));
            let Ok(Incoming::Runner(ev, proof)) = parse_body("m", &body) else {
                panic!("{name}: not a runner event");
            };
            // The samples' proofs were made outside Rust (HMAC-SHA256 in Python) with this key: the wire
            // form is what the module documents.
            let key = RunProofKey::new(b"sample-run-proof-key-of-32-bytes".to_vec()).unwrap();
            assert!(key.verify_event(&ev, proof.as_deref()), "{name}: proof");
        }
        let other = r#"{"detail-type": "ECS Container Instance State Change", "detail": {}}"#;
        assert!(matches!(parse_body("m", other), Ok(Incoming::Other(_))));
        assert!(matches!(
            parse_body("m", r#"{"type": "teleported"}"#),
            Err(StatusError::BadBody { .. })
        ));
    }
}
