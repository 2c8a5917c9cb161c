//! The ECS Task State Change event a stopped task sends (typed in strato_domain::ecs_event), and its delivery to the events queue as the EventBridge rule would.

use super::*;

pub(super) fn iso(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) fn time_of(t: Option<&aws_sdk_ecs::primitives::DateTime>) -> Option<String> {
    t.and_then(|d| OffsetDateTime::from_unix_timestamp_nanos(d.as_nanos()).ok())
        .map(iso)
}

/// The "ECS Task State Change" event for a stopped task, in EventBridge's envelope.
pub(super) fn stopped_event(
    task: &Task,
    def: Option<&aws_sdk_ecs::types::TaskDefinition>,
    container_name: Option<&str>,
    ended: &Ended,
    region: &str,
) -> TaskStateChangeEvent {
    let arn = task.task_arn().unwrap_or_default();
    let account = arn.split(':').nth(4).unwrap_or("123456789012");
    let now = OffsetDateTime::now_utc();
    let container_def = def.and_then(|d| d.container_definitions().first());
    let name = container_name
        .map(str::to_owned)
        .or_else(|| container_def.and_then(|c| c.name()).map(str::to_owned))
        .unwrap_or_else(|| "runner".into());
    let memory = task
        .memory()
        .or_else(|| def.and_then(|d| d.memory()))
        .unwrap_or("2048");
    let cpu = task.cpu().or_else(|| def.and_then(|d| d.cpu())).unwrap_or("1024");
    let container = TaskContainer {
        container_arn: Some(format!("{}/{}", arn.replacen(":task/", ":container/", 1), name)),
        name,
        image: Some(
            container_def
                .and_then(|c| c.image())
                .unwrap_or("strato-runner")
                .into(),
        ),
        last_status: Some("STOPPED".into()),
        task_arn: Some(arn.into()),
        cpu: Some("0".into()),
        memory: Some(memory.into()),
        exit_code: ended.exit_code,
        reason: ended.container_reason.clone(),
    };
    let container_overrides = task
        .overrides()
        .map(|o| {
            o.container_overrides()
                .iter()
                .map(|c| TaskContainerOverride {
                    name: c.name().map(str::to_owned),
                    environment: c
                        .environment()
                        .iter()
                        .filter_map(|kv| {
                            Some(EnvVar {
                                name: kv.name()?.to_owned(),
                                value: kv.value()?.to_owned(),
                            })
                        })
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    let detail = TaskStateChange {
        task_arn: arn.into(),
        last_status: "STOPPED".into(),
        desired_status: Some("STOPPED".into()),
        cluster_arn: task.cluster_arn().map(str::to_owned),
        task_definition_arn: task.task_definition_arn().map(str::to_owned),
        group: task
            .group()
            .map(str::to_owned)
            .or_else(|| def.and_then(|d| d.family()).map(|f| format!("family:{f}"))),
        launch_type: Some("FARGATE".into()),
        platform_version: Some("1.4.0".into()),
        cpu: Some(cpu.into()),
        memory: Some(memory.into()),
        started_by: task.started_by().map(str::to_owned),
        stop_code: Some(ended.stop_code.to_owned()),
        stopped_reason: Some(ended.stopped_reason.clone()),
        created_at: Some(time_of(task.created_at()).unwrap_or_else(|| iso(now))),
        started_at: ended.started_at.map(iso),
        stopping_at: Some(iso(now)),
        stopped_at: Some(iso(now)),
        containers: vec![container],
        overrides: TaskOverrides { container_overrides },
        version: Some(4),
    };
    let time = chrono::DateTime::from_timestamp(now.unix_timestamp(), 0).unwrap_or_default();
    detail.into_event(
        uuid::Uuid::new_v4().to_string(),
        time,
        Some(region.to_owned()),
        Some(account.to_owned()),
    )
}

pub(super) async fn send_event(shared: &Shared, event: &TaskStateChangeEvent) {
    let body = match serde_json::to_string(event) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "EventBridge: the task event could not be serialized");
            return;
        }
    };
    for attempt in 1..=5u32 {
        match shared
            .sqs
            .send_message()
            .queue_url(&shared.config.events_queue_url)
            .message_body(&body)
            .send()
            .await
        {
            Ok(_) => {
                tracing::info!("EventBridge: ECS Task State Change (STOPPED) sent to the events queue");
                return;
            }
            Err(e) => {
                tracing::warn!(attempt, error = %DevstackError::aws("SendMessage", e), "EventBridge: could not deliver the task event");
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
        }
    }
    tracing::error!(
        "EventBridge: the task event was lost after 5 attempts (EventBridge would retry for 24 h)"
    );
}
