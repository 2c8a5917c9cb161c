//! Progress events (step started/finished, plan ready, heartbeats) sent in order by one background task, so
//! no engine command waits for an SQS round trip between steps. [`Progress::flush`] waits until every event
//! queued before it was sent (or given up on): the final event is sent only after it, so it stays last.

use strato_domain::messages::RunnerEvent;
use tokio::sync::{mpsc, oneshot};

use crate::ports::Reporter;

enum Item {
    Event(Box<RunnerEvent>),
    Flush(oneshot::Sender<()>),
}

/// The queue of a run's progress events. Cheap to clone; every clone feeds the same ordered sender.
#[derive(Clone)]
pub struct Progress {
    tx: mpsc::UnboundedSender<Item>,
}

impl Progress {
    /// Starts the sender task for `reporter`'s operation.
    pub fn start(reporter: impl Reporter) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
        crate::spawn(async move {
            while let Some(item) = rx.recv().await {
                match item {
                    // Best effort: a lost step or heartbeat event is logged, not fatal.
                    Item::Event(ev) => {
                        if let RunnerEvent::StepStarted { step, .. } = &*ev {
                            tracing::Span::current()
                                .record(strato_domain::telemetry::fields::STEP, step.as_str());
                        }
                        if let Err(e) = reporter.send(&ev).await {
                            tracing::warn!(error = %e, "progress event not sent");
                        }
                    }
                    Item::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self { tx }
    }

    /// Queues `ev`; returns at once.
    pub fn send(&self, ev: RunnerEvent) {
        if let RunnerEvent::StepStarted { step, .. } = &ev {
            tracing::Span::current().record(strato_domain::telemetry::fields::STEP, step.as_str());
        }
        let _ = self.tx.send(Item::Event(Box::new(ev)));
    }

    /// Waits until every event queued before this call was sent (or failed and was logged).
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Item::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}
