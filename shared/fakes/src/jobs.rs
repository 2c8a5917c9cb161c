//! `jobs.fifo` in memory.

use std::sync::{Arc, Mutex};

use time::{Duration, OffsetDateTime};

use super::{FakeClock, lock};
use strato_domain::messages::JobMessage;
use strato_domain::ports::{Clock, JobQueue, PortError};

/// A message the fake job queue accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct SentJob {
    pub job: JobMessage,
    /// The FIFO message group (the cluster).
    pub group: String,
    pub deduplication_id: String,
    pub sent_at: OffsetDateTime,
}

#[derive(Debug, Default)]
struct QueueState {
    sent: Vec<SentJob>,
    dropped: usize,
    visibility: Vec<(String, i32)>,
    /// Sends still to fail as if SQS could not be reached.
    failing: usize,
}

/// `jobs.fifo` in memory: keeps what was sent (dropping duplicates within SQS's five-minute deduplication
/// window, on the fake clock) and the visibility changes asked for. Clones share the data.
#[derive(Debug, Clone)]
pub struct FakeJobQueue {
    state: Arc<Mutex<QueueState>>,
    clock: FakeClock,
}

/// How long SQS FIFO queues remember a deduplication id.
pub const DEDUPLICATION_WINDOW: Duration = Duration::minutes(5);

impl FakeJobQueue {
    pub fn new(clock: FakeClock) -> Self {
        Self {
            state: Arc::default(),
            clock,
        }
    }

    /// Messages accepted, in order.
    pub fn sent(&self) -> Vec<SentJob> {
        lock(&self.state).sent.clone()
    }

    /// Sends dropped as duplicates.
    pub fn dropped(&self) -> usize {
        lock(&self.state).dropped
    }

    /// The next `n` sends fail ([`PortError::Unavailable`]) and send nothing.
    pub fn fail_sends(&self, n: usize) {
        lock(&self.state).failing = n;
    }

    /// `(receipt handle, seconds)` of every visibility change, in order.
    pub fn visibility_changes(&self) -> Vec<(String, i32)> {
        lock(&self.state).visibility.clone()
    }
}

impl JobQueue for FakeJobQueue {
    async fn enqueue(&self, job: &JobMessage, wake: &str) -> Result<(), PortError> {
        let now = self.clock.now();
        let deduplication_id = format!("{}-{wake}", job.operation_id);
        let mut s = lock(&self.state);
        if s.failing > 0 {
            s.failing -= 1;
            return Err(PortError::Unavailable("the job queue is unreachable".into()));
        }
        let duplicate = s
            .sent
            .iter()
            .any(|m| m.deduplication_id == deduplication_id && now - m.sent_at < DEDUPLICATION_WINDOW);
        if duplicate {
            s.dropped += 1;
            return Ok(());
        }
        s.sent.push(SentJob {
            job: job.clone(),
            group: job.cluster_id.to_string(),
            deduplication_id,
            sent_at: now,
        });
        Ok(())
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        lock(&self.state)
            .visibility
            .push((receipt_handle.to_owned(), secs));
    }
}
