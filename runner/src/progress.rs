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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use strato_domain::ids::OperationId;
    use tokio::sync::watch;

    use super::*;
    use crate::RunnerError;

    /// An events queue that answers only once the gate is open, and records what it was sent.
    #[derive(Clone)]
    struct Gated {
        open: watch::Receiver<bool>,
        sent: Arc<Mutex<Vec<String>>>,
    }

    impl Reporter for Gated {
        async fn send(&self, ev: &RunnerEvent) -> Result<(), RunnerError> {
            let _ = self.open.clone().wait_for(|o| *o).await;
            if let RunnerEvent::StepStarted { step, .. } = ev {
                self.sent.lock().unwrap().push(step.clone());
            }
            Ok(())
        }

        async fn send_final(&self, _: &RunnerEvent) -> Result<(), RunnerError> {
            unreachable!("progress sends no final event")
        }
    }

    #[tokio::test]
    async fn a_step_never_waits_for_the_queue_and_a_flush_waits_for_every_earlier_event_in_order() {
        let (gate, open) = watch::channel(false);
        let sent = Arc::new(Mutex::new(Vec::new()));
        let progress = Progress::start(Gated {
            open,
            sent: sent.clone(),
        });
        let op = OperationId::generate();
        for i in 0..25 {
            // Returns at once although the queue does not answer.
            progress.send(RunnerEvent::StepStarted {
                operation_id: op.clone(),
                fencing_token: 1,
                step: format!("step-{i}"),
                at: strato_domain::ts::now(),
            });
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(50), progress.flush())
                .await
                .is_err(),
            "a flush waits for the events before it"
        );
        gate.send_replace(true);
        progress.flush().await;
        let want: Vec<String> = (0..25).map(|i| format!("step-{i}")).collect();
        assert_eq!(
            *sent.lock().unwrap(),
            want,
            "every event sent, in the order queued"
        );
    }
}
