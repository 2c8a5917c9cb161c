//! The fake task launcher: RunTask with its client token, tasks listed by operation, scripted failures.

use super::*;

/// A task the fake launcher started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchedTask {
    pub task_id: String,
    pub operation_id: OperationId,
    pub fencing_token: u64,
    /// Whether [`TaskLauncher::find_started`] sees it yet (the real listing is eventually consistent).
    pub listed: bool,
}

#[derive(Debug, Default)]
pub(super) struct LauncherState {
    pub(super) tasks: Vec<LaunchedTask>,
    pub(super) calls: usize,
    pub(super) failures: VecDeque<LaunchFailure>,
    pub(super) unlisted: bool,
    /// Tasks that stopped or that ECS forgot, by id.
    pub(super) ended: HashMap<String, TaskState>,
}

/// Starts pretend runners: one task per `(operation, fencing token)` like RunTask's client token, a
/// listing that can lag, and scripted failures. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeLauncher {
    pub(super) state: Arc<Mutex<LauncherState>>,
}

impl FakeLauncher {
    /// Tasks started, in order (a repeated start under the same token adds none).
    pub fn tasks(&self) -> Vec<LaunchedTask> {
        lock(&self.state).tasks.clone()
    }

    /// Calls to `launch`, including failed and repeated ones.
    pub fn launch_calls(&self) -> usize {
        lock(&self.state).calls
    }

    /// The next launches fail with these, in order (before any client-token lookup, as a throttled call
    /// never reaches it).
    pub fn fail_next(&self, failure: LaunchFailure) {
        lock(&self.state).failures.push_back(failure);
    }

    /// While set, tasks started from now on are not listed by `find_started`.
    pub fn list_lags(&self, lagging: bool) {
        lock(&self.state).unlisted = lagging;
    }

    /// Makes every task listed (the listing caught up).
    pub fn list_all(&self) {
        for t in &mut lock(&self.state).tasks {
            t.listed = true;
        }
    }
}

impl TaskLauncher for FakeLauncher {
    async fn find_started(&self, op: &OperationId) -> Result<Option<String>, PortError> {
        Ok(lock(&self.state)
            .tasks
            .iter()
            .find(|t| &t.operation_id == op && t.listed)
            .map(|t| t.task_id.clone()))
    }

    async fn launch(
        &self,
        op: &strato_domain::model::Operation,
        fencing_token: u64,
        _trace: Option<&strato_domain::telemetry::Traceparent>,
    ) -> Result<String, LaunchFailure> {
        let op = &op.operation_id;
        let mut s = lock(&self.state);
        s.calls += 1;
        if let Some(f) = s.failures.pop_front() {
            return Err(f);
        }
        if let Some(t) = s
            .tasks
            .iter()
            .find(|t| &t.operation_id == op && t.fencing_token == fencing_token)
        {
            return Ok(t.task_id.clone());
        }
        let task_id = format!(
            "arn:aws:ecs:us-east-1:000000000000:task/fake/{}",
            s.tasks.len() + 1
        );
        let listed = !s.unlisted;
        s.tasks.push(LaunchedTask {
            task_id: task_id.clone(),
            operation_id: op.clone(),
            fencing_token,
            listed,
        });
        Ok(task_id)
    }
}
