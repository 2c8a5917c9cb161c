//! Where the run's logs and objects go: the artifacts bucket and the live `logs` queue. Ports of their own,
//! below the log hub that writes to them (`crate::logs`) and the run's other ports (`crate::ports`).

use std::future::Future;

use strato_domain::messages::LogFrame;

use crate::RunnerError;

/// Objects in the artifacts bucket, by key (`strato_terraform::artifacts`): log archive chunks and marker,
/// debug logs, sealed plans. One attempt per call: the callers decide about retries.
pub trait Artifacts: Clone + Send + Sync + 'static {
    fn put(&self, key: &str, body: Vec<u8>) -> impl Future<Output = Result<(), RunnerError>> + Send;

    fn get(&self, key: &str) -> impl Future<Output = Result<Vec<u8>, RunnerError>> + Send;

    /// The keys under `prefix`.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<String>, RunnerError>> + Send;
}

/// The live `logs` queue (best effort: the archive is the record).
pub trait LiveLog: Clone + Send + Sync + 'static {
    /// Sends one frame; `body` is its JSON.
    fn send_frame(
        &self,
        frame: &LogFrame,
        body: String,
    ) -> impl Future<Output = Result<(), RunnerError>> + Send;
}
