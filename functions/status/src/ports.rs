//! The status function's ports and its state: [`Ports`] names the adapters' types once, [`Status`] holds one
//! invocation's adapters and settings, [`ReportWait`] how long a stopped task waits for its report. Every
//! decision module takes `&Status<'_, P>`; `decide` (the batch and one handler per event kind) sits above
//! them, and nothing here imports a decision.

use strato_aws::resources::{QUEUES, QueueDef};
use strato_domain::ports::{
    Clock, EventsQueue, FrameSink, JobQueue, LeaseRenewal, NameReservations, RunArchive, SlotHolders,
    Storage, Templates, TenantSettings, Webhooks,
};
use strato_domain::run_proof::RunProofKey;

/// What becomes of a record that was handled without error (`RetryAfter`: not yet, hand it back).
pub use strato_aws::batch::Outcome;

/// The types of the status function's ports, named once so every decision reads `Status<'_, P>`.
pub trait Ports {
    /// Operations, clusters, cluster locks (and their leases), tenant slots, name reservations.
    type Store: Storage + LeaseRenewal + SlotHolders + NameReservations + TenantSettings;
    /// The template catalog (what a finished create must prove).
    type Templates: Templates;
    /// `jobs.fifo`: wake-ups, and updates a drift check queues.
    type Jobs: JobQueue;
    /// The `events` queue (timers, back-offs) and the `logs` queue (frames).
    type Queues: EventsQueue + FrameSink;
    /// The run's log archive.
    type Archive: RunArchive;
    type Webhooks: Webhooks;
    type Clock: Clock;
    /// The audit log: a drift reconcile is recorded as `strato:status`.
    type Audit: strato_domain::audit::AuditLog;
    /// Which rollout holds a cluster (an ended run of it is that rollout's input).
    type Rollouts: strato_rollout::RolloutStore;
    /// The `rollouts` queue the inputs go to.
    type RolloutQueue: strato_rollout::feed::Queue;
}

/// How long an exit-0 STOPPED event waits for the runner's final report before concluding it was lost.
///
/// The report travels on the same standard queue; if the batch holding it fails, SQS hands it out again
/// only after the queue's visibility timeout. So the wait spans several visibility timeouts, spread over the
/// deliveries the queue allows before its dead-letter queue takes the STOPPED event: the last of them
/// decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportWait {
    /// Seconds between deliveries of the STOPPED event.
    pub retry_secs: i32,
    /// The delivery that concludes the report was lost (the queue's last before its DLQ).
    pub last_receive: u32,
}

/// Visibility timeouts of the events queue a stop waits for its report: a report whose batch fails twice
/// still arrives in time.
pub const REPORT_WAIT_VISIBILITY_TIMEOUTS: u32 = 3;

impl ReportWait {
    /// The wait for a queue with this visibility timeout and delivery count.
    pub const fn for_queue(visibility_timeout_secs: u32, max_receive_count: u32) -> Self {
        let retries = if max_receive_count > 1 {
            max_receive_count - 1
        } else {
            1
        };
        let total = visibility_timeout_secs * REPORT_WAIT_VISIBILITY_TIMEOUTS;
        Self {
            retry_secs: total.div_ceil(retries) as i32,
            last_receive: if max_receive_count > 0 {
                max_receive_count
            } else {
                1
            },
        }
    }

    /// The wait on the `events` queue as the resource definitions declare it.
    pub const EVENTS: Self = {
        let q = events_queue();
        Self::for_queue(q.visibility_timeout_secs, q.max_receive_count)
    };

    /// How long the STOPPED event waits in all, from its first delivery to its last.
    pub fn total_secs(&self) -> i64 {
        i64::from(self.retry_secs) * i64::from(self.last_receive.saturating_sub(1))
    }
}

/// The `events` queue's definition, looked up at compile time (so the wait is a constant derived from it).
const fn events_queue() -> QueueDef {
    let mut i = 0;
    while i < QUEUES.len() {
        if same_bytes(QUEUES[i].logical.as_bytes(), b"events") {
            return QUEUES[i];
        }
        i += 1;
    }
    panic!("the resource definitions declare no events queue")
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The status function's dependencies, as ports.
pub struct Status<'a, P: Ports> {
    pub store: &'a P::Store,
    pub templates: &'a P::Templates,
    pub jobs: &'a P::Jobs,
    pub queues: &'a P::Queues,
    pub archive: &'a P::Archive,
    pub webhooks: &'a P::Webhooks,
    pub clock: &'a P::Clock,
    pub audit: &'a P::Audit,
    pub rollouts: &'a P::Rollouts,
    pub rollout_queue: &'a P::RolloutQueue,
    pub report_wait: ReportWait,
    /// How long an approval request waits before it expires (`STRATO_APPROVAL_TTL_HOURS`, default 72).
    pub approval_ttl: time::Duration,
    /// Checks that a runner event comes from its own run ([`strato_domain::run_proof`]).
    pub run_proofs: &'a RunProofKey,
}
