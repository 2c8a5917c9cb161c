//! The "ECS Task State Change" event, typed once: EventBridge delivers it to the events queue when a runner's
//! task stops; devstack's Fargate emulation and the scheduler's sweeper (for a silent runner whose task is
//! gone) send the same event, and the status function reads it. The envelope is `aws_lambda_events`'s
//! CloudWatch event; the `detail` holds what ECS sends (fields Strato does not read are kept optional).

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use serde::{Deserialize, Serialize};

use crate::ids::OperationId;
use crate::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};

/// EventBridge's `detail-type` for these events.
pub const DETAIL_TYPE: &str = "ECS Task State Change";
/// EventBridge's `source` for ECS events.
pub const SOURCE: &str = "aws.ecs";

/// The whole event as EventBridge sends it.
pub type TaskStateChangeEvent = CloudWatchEvent<TaskStateChange>;

/// `detail` of an "ECS Task State Change" event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStateChange {
    pub task_arn: String,
    pub last_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_definition_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    #[serde(default)]
    pub containers: Vec<TaskContainer>,
    #[serde(default)]
    pub overrides: TaskOverrides,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskContainer {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_arn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOverrides {
    #[serde(default)]
    pub container_overrides: Vec<TaskContainerOverride>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskContainerOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub environment: Vec<EnvVar>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub fn runner(&self) -> Option<&TaskContainer> {
        let name = self.env(ENV_OPERATION_ID).and_then(|(c, _)| c.name.as_deref());
        self.containers
            .iter()
            .find(|c| Some(c.name.as_str()) == name)
            .or(self.containers.first())
    }

    /// The runner's override environment as ECS reports it back (operation id, fencing token).
    pub fn runner_overrides(container: &str, op: &OperationId, fencing_token: Option<u64>) -> TaskOverrides {
        let mut environment = vec![EnvVar {
            name: ENV_OPERATION_ID.into(),
            value: op.to_string(),
        }];
        if let Some(t) = fencing_token {
            environment.push(EnvVar {
                name: ENV_FENCING_TOKEN.into(),
                value: t.to_string(),
            });
        }
        TaskOverrides {
            container_overrides: vec![TaskContainerOverride {
                name: Some(container.into()),
                environment,
            }],
        }
    }

    /// This detail in EventBridge's envelope, as the rule on the events queue delivers it.
    pub fn into_event(
        self,
        id: String,
        time: chrono::DateTime<chrono::Utc>,
        region: Option<String>,
        account_id: Option<String>,
    ) -> TaskStateChangeEvent {
        // The envelope is non-exhaustive: start from its default and fill it in.
        let mut event = TaskStateChangeEvent::default();
        event.version = Some("0".into());
        event.id = Some(id);
        event.detail_type = Some(DETAIL_TYPE.into());
        event.source = Some(SOURCE.into());
        event.account_id = account_id;
        event.time = time;
        event.region = region;
        event.resources = vec![self.task_arn.clone()];
        event.detail = Some(self);
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_round_trips_and_names_its_operation() {
        let op = OperationId::generate();
        let detail = TaskStateChange {
            task_arn: "arn:aws:ecs:us-east-1:123456789012:task/strato/abc".into(),
            last_status: "STOPPED".into(),
            stopped_reason: Some("Essential container in task exited".into()),
            containers: vec![TaskContainer {
                name: "runner".into(),
                exit_code: Some(137),
                ..Default::default()
            }],
            overrides: TaskStateChange::runner_overrides("runner", &op, Some(7)),
            ..Default::default()
        };
        let event = detail
            .clone()
            .into_event("e-1".into(), chrono::Utc::now(), None, None);
        let text = serde_json::to_string(&event).unwrap();
        assert!(
            text.contains("\"detail-type\":\"ECS Task State Change\""),
            "{text}"
        );
        let back: TaskStateChangeEvent = serde_json::from_str(&text).unwrap();
        let got = back.detail.unwrap();
        assert_eq!(got, detail);
        assert_eq!(got.operation_id(), Some(op));
        assert_eq!(got.fencing_token(), Some(7));
        assert_eq!(got.runner().and_then(|c| c.exit_code), Some(137));
    }

    #[test]
    fn the_sample_events_parse() {
        for name in ["ecs-task-stopped-exit0", "ecs-task-stopped-oom"] {
            let path = format!("{}/../../events/status/{name}.json", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // An SQS event whose one record's body is the EventBridge event.
            let sqs: serde_json::Value = serde_json::from_str(&text).unwrap();
            let body = sqs["Records"][0]["body"].as_str().unwrap();
            let event: TaskStateChangeEvent = serde_json::from_str(body).unwrap();
            assert_eq!(event.detail_type.as_deref(), Some(DETAIL_TYPE));
            let detail = event.detail.unwrap();
            assert_eq!(detail.last_status, "STOPPED");
            assert!(detail.operation_id().is_some(), "{name}");
        }
    }
}
