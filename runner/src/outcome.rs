//! What an engine command comes to ([`Outcome`]) and how a run is told to stop ([`StopRx`]): the engine's
//! port (`crate::ports::Engine`), its process implementation and its fake share them.

use tokio::sync::watch;

/// Why the operation must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Cancelled,
    TimedOut,
    Terminated,
}

pub type StopRx = watch::Receiver<Option<StopReason>>;

/// Result of one command.
#[derive(Debug, Default)]
pub struct Outcome {
    pub code: Option<i32>,
    /// Captured stdout (only for commands run with `capture_stdout`, which is then not logged).
    pub stdout: String,
    /// The user-visible output (redacted), for error classification.
    pub user_text: String,
    pub stopped: Option<StopReason>,
    pub debug: Vec<u8>,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.stopped.is_none()
    }
}

/// Waits until `stop` holds a reason (at once if it already does); never, once nobody can send one.
pub async fn wait_stop(stop: &mut StopRx) -> StopReason {
    loop {
        if let Some(r) = *stop.borrow_and_update() {
            return r;
        }
        if stop.changed().await.is_err() {
            // The sender is gone: nobody can ask to stop any more.
            std::future::pending::<()>().await;
        }
    }
}
