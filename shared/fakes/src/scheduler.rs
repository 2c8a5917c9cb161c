//! The fakes only the scheduler's sweep needs: what ECS says of a launched task, the events queue, and
//! Terraform's state lock table.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{FakeLauncher, lock};
use strato_domain::ecs_event::TaskStateChangeEvent;
use strato_domain::ports::{PortError, StateLock, StateLocks, TaskEventSink, TaskState, TaskStatus};

impl FakeLauncher {
    /// The task stopped, as ECS then describes it.
    pub fn stop_task(&self, task_id: &str, stopped_reason: Option<&str>, exit_code: Option<i32>) {
        lock(&self.state).ended.insert(
            task_id.to_owned(),
            TaskState::Stopped {
                stopped_reason: stopped_reason.map(str::to_owned),
                exit_code,
            },
        );
    }

    /// ECS no longer knows the task (it forgets stopped tasks after about an hour).
    pub fn forget_task(&self, task_id: &str) {
        lock(&self.state)
            .ended
            .insert(task_id.to_owned(), TaskState::Missing);
    }
}

impl TaskStatus for FakeLauncher {
    /// Launched tasks run until stopped or forgotten; a task never launched here is unknown.
    async fn task_state(&self, task: &str) -> Result<TaskState, PortError> {
        let s = lock(&self.state);
        if let Some(ended) = s.ended.get(task) {
            return Ok(ended.clone());
        }
        Ok(if s.tasks.iter().any(|t| t.task_id == task) {
            TaskState::Alive
        } else {
            TaskState::Missing
        })
    }
}

/// The events queue in memory: keeps every event sent. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeTaskEvents {
    sent: Arc<Mutex<Vec<TaskStateChangeEvent>>>,
    controls: Arc<Mutex<Vec<strato_domain::messages::ControlEvent>>>,
}

impl FakeTaskEvents {
    /// Events sent, in order.
    pub fn sent(&self) -> Vec<TaskStateChangeEvent> {
        lock(&self.sent).clone()
    }

    /// Control events sent, in order.
    pub fn controls(&self) -> Vec<strato_domain::messages::ControlEvent> {
        lock(&self.controls).clone()
    }
}

impl TaskEventSink for FakeTaskEvents {
    async fn send_task_event(&self, event: &TaskStateChangeEvent) -> Result<(), PortError> {
        lock(&self.sent).push(event.clone());
        Ok(())
    }

    async fn send_control_event(
        &self,
        event: &strato_domain::messages::ControlEvent,
    ) -> Result<(), PortError> {
        lock(&self.controls).push(event.clone());
        Ok(())
    }
}

/// Terraform's lock table in memory, one lock per state. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeStateLocks {
    locks: Arc<Mutex<BTreeMap<String, StateLock>>>,
}

impl FakeStateLocks {
    /// Takes (or takes again, with new info) the lock, as Terraform does.
    pub fn put(&self, l: StateLock) {
        lock(&self.locks).insert(l.lock_id.clone(), l);
    }

    pub fn is_held(&self, lock_id: &str) -> bool {
        lock(&self.locks).contains_key(lock_id)
    }
}

impl StateLocks for FakeStateLocks {
    async fn held_state_locks(&self) -> Result<Vec<StateLock>, PortError> {
        Ok(lock(&self.locks).values().cloned().collect())
    }

    /// Only the lock as read: one taken again meanwhile has other info and stays.
    async fn release_state_lock(&self, l: &StateLock) -> Result<bool, PortError> {
        let mut locks = lock(&self.locks);
        if locks.get(&l.lock_id) != Some(l) {
            return Ok(false);
        }
        locks.remove(&l.lock_id);
        Ok(true)
    }
}
