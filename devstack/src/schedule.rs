//! EventBridge schedules (moto stores rules but never fires them): each rule fires its handler at its rate
//! with the "Scheduled Event" JSON. Runs are not overlapped: a slow run delays the next tick, like a
//! reserved-concurrency-1 target.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::registry::ScheduleRule;

/// The event EventBridge sends for a schedule rule.
pub fn scheduled_event(rule: &str, region: &str) -> Value {
    let now = time::OffsetDateTime::now_utc();
    json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": crate::gateway::ACCOUNT_ID,
        "time": now.replace_nanosecond(0).unwrap_or(now).format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        "region": region,
        "resources": [format!("arn:aws:events:{region}:{}:rule/{rule}", crate::gateway::ACCOUNT_ID)],
        "detail": {},
    })
}

pub fn spawn_schedule(
    rule: ScheduleRule,
    region: String,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(rule.rate.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await; // The first tick is immediate; a rate rule first fires one period after creation.
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            let event = scheduled_event(&rule.name, &region);
            tracing::info!(rule = %rule.name, "EventBridge: schedule fired");
            let handler = rule.handler.clone();
            let invocation = tracing::Instrument::instrument(
                async move { handler(event).await },
                crate::capture::component_span("scheduler"),
            );
            match tokio::spawn(invocation).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!(rule = %rule.name, error = %e, "EventBridge: scheduled function failed")
                }
                Err(e) => {
                    tracing::error!(rule = %rule.name, error = %e, "EventBridge: scheduled function panicked")
                }
            }
        }
    })
}
