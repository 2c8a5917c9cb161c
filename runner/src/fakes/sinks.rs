//! Where a run's events, logs, artifacts and sensitive outputs go, in memory; and a SIGTERM a test sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use strato_domain::messages::{LogFrame, LogLine, RunnerEvent};
use strato_terraform::artifacts;
use tokio::sync::watch;

use super::lock;
use crate::RunnerError;
use crate::ports::{Artifacts, LiveLog, OutputSecrets, Reporter, TaskSignals};

fn unavailable(what: String) -> RunnerError {
    RunnerError::Domain(strato_domain::Error::Unavailable(what))
}

#[derive(Default)]
struct Sent {
    /// Every event in the order sent, and whether it was sent as the final one.
    events: Vec<(RunnerEvent, bool)>,
    fail_final: bool,
}

/// The `events` queue: what was sent, in order. Clones share it.
#[derive(Clone, Default)]
pub struct FakeReporter(Arc<Mutex<Sent>>);

impl FakeReporter {
    /// Every event, in the order sent.
    pub fn all(&self) -> Vec<RunnerEvent> {
        lock(&self.0).events.iter().map(|(e, _)| e.clone()).collect()
    }

    /// Progress events, in the order sent.
    pub fn progress(&self) -> Vec<RunnerEvent> {
        lock(&self.0)
            .events
            .iter()
            .filter(|(_, last)| !last)
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// Events sent as the final one (a run sends at most one).
    pub fn finals(&self) -> Vec<RunnerEvent> {
        lock(&self.0)
            .events
            .iter()
            .filter(|(_, last)| *last)
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// Makes sending the final event fail (a queue that is down).
    pub fn fail_final(&self) {
        lock(&self.0).fail_final = true;
    }
}

impl Reporter for FakeReporter {
    async fn send(&self, ev: &RunnerEvent) -> Result<(), RunnerError> {
        lock(&self.0).events.push((ev.clone(), false));
        Ok(())
    }

    async fn send_final(&self, ev: &RunnerEvent) -> Result<(), RunnerError> {
        let mut s = lock(&self.0);
        if s.fail_final {
            return Err(RunnerError::FinalEvent("the events queue is down".into()));
        }
        s.events.push((ev.clone(), true));
        Ok(())
    }
}

#[derive(Default)]
struct Bucket {
    objects: BTreeMap<String, Vec<u8>>,
    frames: Vec<LogFrame>,
    /// Puts under these prefixes fail.
    failing: Vec<String>,
}

/// The live `logs` queue and the artifacts bucket. Clones share them.
#[derive(Clone, Default)]
pub struct FakeSinks(Arc<Mutex<Bucket>>);

impl FakeSinks {
    pub fn object(&self, key: &str) -> Option<Vec<u8>> {
        lock(&self.0).objects.get(key).cloned()
    }

    pub fn keys(&self) -> Vec<String> {
        lock(&self.0).objects.keys().cloned().collect()
    }

    /// Stores an object as an earlier run (or a test) would have.
    pub fn insert(&self, key: &str, body: Vec<u8>) {
        lock(&self.0).objects.insert(key.to_owned(), body);
    }

    /// Makes every put under `prefix` fail.
    pub fn fail_puts_under(&self, prefix: &str) {
        lock(&self.0).failing.push(prefix.to_owned());
    }

    /// The live frames sent, in order.
    pub fn frames(&self) -> Vec<LogFrame> {
        lock(&self.0).frames.clone()
    }

    /// The archived log lines of every run, chunk by chunk in sequence order.
    pub fn archived_lines(&self) -> Vec<LogLine> {
        let s = lock(&self.0);
        let mut chunks: Vec<((u64, u64), &Vec<u8>)> = s
            .objects
            .iter()
            .filter_map(|(k, v)| Some((artifacts::parse_log_chunk_key(k)?, v)))
            .collect();
        chunks.sort_by_key(|(range, _)| *range);
        chunks
            .iter()
            .flat_map(|(_, body)| {
                String::from_utf8_lossy(body)
                    .into_owned()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }
}

impl LiveLog for FakeSinks {
    async fn send_frame(&self, frame: &LogFrame, _body: String) -> Result<(), RunnerError> {
        lock(&self.0).frames.push(frame.clone());
        Ok(())
    }
}

impl Artifacts for FakeSinks {
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), RunnerError> {
        let mut s = lock(&self.0);
        if s.failing.iter().any(|p| key.starts_with(p.as_str())) {
            return Err(unavailable(format!("PutObject {key}: access denied")));
        }
        s.objects.insert(key.to_owned(), body);
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, RunnerError> {
        lock(&self.0)
            .objects
            .get(key)
            .cloned()
            .ok_or_else(|| unavailable(format!("GetObject {key}: no such key")))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, RunnerError> {
        Ok(lock(&self.0)
            .objects
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
}

#[derive(Default)]
struct Secrets {
    stored: BTreeMap<String, Map<String, Value>>,
    deleted: Vec<String>,
}

/// Secrets Manager: the clusters' sensitive outputs by secret name. Clones share them.
#[derive(Clone, Default)]
pub struct FakeSecrets(Arc<Mutex<Secrets>>);

impl FakeSecrets {
    pub fn get(&self, name: &str) -> Option<Map<String, Value>> {
        lock(&self.0).stored.get(name).cloned()
    }

    /// Names of the secrets deleted, in order.
    pub fn deleted(&self) -> Vec<String> {
        lock(&self.0).deleted.clone()
    }
}

impl OutputSecrets for FakeSecrets {
    async fn store_outputs(&self, name: &str, values: &Map<String, Value>) -> Result<(), RunnerError> {
        lock(&self.0).stored.insert(name.to_owned(), values.clone());
        Ok(())
    }

    async fn delete_outputs(&self, name: &str) -> Result<(), RunnerError> {
        let mut s = lock(&self.0);
        s.stored.remove(name);
        s.deleted.push(name.to_owned());
        Ok(())
    }
}

/// The task's SIGTERM, sent by [`FakeSignals::terminate`]. Clones share it.
#[derive(Clone)]
pub struct FakeSignals(Arc<watch::Sender<bool>>);

impl Default for FakeSignals {
    fn default() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }
}

impl FakeSignals {
    /// As ECS stopping the task.
    pub fn terminate(&self) {
        self.0.send_replace(true);
    }
}

impl TaskSignals for FakeSignals {
    fn terminated(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.0.subscribe();
        async move {
            if rx.wait_for(|sent| *sent).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
