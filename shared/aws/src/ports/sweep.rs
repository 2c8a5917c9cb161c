//! The sweeper's ports on AWS: ECS DescribeTasks for a silent runner's task, the status function's events
//! queue for the stop event it reports, and Terraform's lock table.

use aws_sdk_dynamodb::Client as DynamoClient;

use crate::error::Error;
use crate::state_lock::{self, HeldLock};
use strato_domain::ecs_event::TaskStateChangeEvent;
use strato_domain::ports::{PortError, StateLock, StateLocks, TaskEventSink, TaskState, TaskStatus};

/// Runners' tasks on the ECS cluster `cluster`.
#[derive(Debug, Clone, Copy)]
pub struct EcsTaskStatus<'a> {
    pub ecs: &'a aws_sdk_ecs::Client,
    pub cluster: &'a str,
}

impl TaskStatus for EcsTaskStatus<'_> {
    async fn task_state(&self, task: &str) -> Result<TaskState, PortError> {
        let out = self
            .ecs
            .describe_tasks()
            .cluster(self.cluster)
            .tasks(task)
            .send()
            .await
            .map_err(|e| Error::aws("DescribeTasks", e))?;
        let Some(task) = out.tasks().first() else {
            return Ok(TaskState::Missing);
        };
        if task.last_status() != Some("STOPPED") {
            return Ok(TaskState::Alive);
        }
        Ok(TaskState::Stopped {
            stopped_reason: task.stopped_reason().map(str::to_owned),
            exit_code: task.containers().first().and_then(|c| c.exit_code()),
        })
    }
}

/// The events queue the status function reads (where EventBridge delivers ECS task state changes).
#[derive(Debug, Clone, Copy)]
pub struct SqsTaskEvents<'a> {
    pub sqs: &'a aws_sdk_sqs::Client,
    pub url: &'a str,
}

impl TaskEventSink for SqsTaskEvents<'_> {
    async fn send_task_event(&self, event: &TaskStateChangeEvent) -> Result<(), PortError> {
        Ok(crate::queues::send_json(self.sqs, self.url, "task state change event", event, 0).await?)
    }

    async fn send_control_event(
        &self,
        event: &strato_domain::messages::ControlEvent,
    ) -> Result<(), PortError> {
        Ok(crate::queues::send_json(self.sqs, self.url, "control event", event, 0).await?)
    }
}

/// Terraform's lock table (`table`), holding only the locks currently held.
#[derive(Debug, Clone, Copy)]
pub struct DynamoStateLocks<'a> {
    pub ddb: &'a DynamoClient,
    pub table: &'a str,
}

impl StateLocks for DynamoStateLocks<'_> {
    /// Terraform's lock table has a fixed schema with no index, so this is the one Scan Strato makes; the
    /// table holds only locks currently held (a handful), not history.
    async fn held_state_locks(&self) -> Result<Vec<StateLock>, PortError> {
        let mut locks = Vec::new();
        let mut pages = self.ddb.scan().table_name(self.table).into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| Error::aws("Scan", e))?;
            for item in page.items() {
                let Some(held) = HeldLock::from_item(item) else {
                    continue;
                };
                let Some((_, cluster)) = state_lock::owner(&held.lock_id) else {
                    continue;
                };
                locks.push(StateLock {
                    lock_id: held.lock_id,
                    cluster,
                    info: held.info,
                });
            }
        }
        Ok(locks)
    }

    async fn release_state_lock(&self, lock: &StateLock) -> Result<bool, PortError> {
        let held = HeldLock {
            lock_id: lock.lock_id.clone(),
            info: lock.info.clone(),
        };
        Ok(state_lock::release(self.ddb, self.table, &held).await?)
    }
}
