//! What arrives on the `events` queue: runner events, control events (the agent handshake) and EventBridge
//! "ECS Task State Change" events, told apart by their shape.

use serde::Deserialize;
use strato_shared::ids::OperationId;
use strato_shared::messages::{ControlEvent, ENV_FENCING_TOKEN, ENV_OPERATION_ID, RunnerEvent};

use crate::StatusError;

/// The EventBridge envelope; only what is needed.
#[derive(Debug, Deserialize)]
struct EventBridgeEnvelope {
    #[serde(rename = "detail-type")]
    detail_type: String,
    #[serde(default)]
    detail: serde_json::Value,
}

/// `detail` of an "ECS Task State Change" event.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStateChange {
    pub task_arn: String,
    pub last_status: String,
    #[serde(default)]
    pub started_by: Option<String>,
    #[serde(default)]
    pub stopped_reason: Option<String>,
    #[serde(default)]
    pub containers: Vec<TaskContainer>,
    #[serde(default)]
    pub overrides: TaskOverrides,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskContainer {
    pub name: String,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOverrides {
    #[serde(default)]
    pub container_overrides: Vec<TaskContainerOverride>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TaskContainerOverride {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub environment: Vec<EnvVar>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

impl TaskStateChange {
    fn env(&self, name: &str) -> Option<(&TaskContainerOverride, &str)> {
        self.overrides.container_overrides.iter().find_map(|c| {
            c.environment
                .iter()
                .find(|e| e.name == name)
                .map(|e| (c, e.value.as_str()))
        })
    }

    /// The operation the task ran: the runner's env override, else `startedBy` (both set by the dispatcher).
    pub fn operation_id(&self) -> Option<OperationId> {
        self.env(ENV_OPERATION_ID)
            .and_then(|(_, v)| v.parse().ok())
            .or_else(|| self.started_by.as_deref().and_then(|s| s.parse().ok()))
    }

    pub fn fencing_token(&self) -> Option<u64> {
        self.env(ENV_FENCING_TOKEN).and_then(|(_, v)| v.parse().ok())
    }

    /// The runner's container: the one carrying the overrides, else the first.
    pub(crate) fn runner(&self) -> Option<&TaskContainer> {
        let name = self.env(ENV_OPERATION_ID).and_then(|(c, _)| c.name.as_deref());
        self.containers
            .iter()
            .find(|c| Some(c.name.as_str()) == name)
            .or(self.containers.first())
    }
}

#[derive(Debug, Clone)]
pub enum Incoming {
    Runner(RunnerEvent),
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
    if value.get("detail-type").is_some() {
        let env: EventBridgeEnvelope = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if env.detail_type != "ECS Task State Change" {
            return Ok(Incoming::Other(env.detail_type));
        }
        let detail = serde_json::from_value(env.detail).map_err(|e| bad(format!("detail: {e}")))?;
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
    serde_json::from_value(value)
        .map(Incoming::Runner)
        .map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::sample_body;

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
            assert!(
                matches!(parse_body("m", &body), Ok(Incoming::Runner(_))),
                "{name}"
            );
        }
        let other = r#"{"detail-type": "ECS Container Instance State Change", "detail": {}}"#;
        assert!(matches!(parse_body("m", other), Ok(Incoming::Other(_))));
        assert!(matches!(
            parse_body("m", r#"{"type": "teleported"}"#),
            Err(StatusError::BadBody { .. })
        ));
    }
}
