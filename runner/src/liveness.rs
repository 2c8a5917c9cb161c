//! When the run last showed progress, for the heartbeat: a heartbeat vouches that the run is working, so it
//! is sent only while lines (the engine's output, the runner's notes) or step changes keep coming. Terraform
//! prints at least every ten seconds while it creates, changes or destroys anything ("Still creating…"),
//! so a long silence means a wedged engine or runner, and heartbeats then stop for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared by the log hub (every line touches it), the step events and the heartbeat.
#[derive(Debug, Clone)]
pub struct Liveness {
    origin: Instant,
    /// Milliseconds from `origin` to the last sign of progress.
    last: Arc<AtomicU64>,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            last: Arc::default(),
        }
    }
}

impl Liveness {
    /// Something progressed now.
    pub fn touch(&self) {
        let ms = self.origin.elapsed().as_millis() as u64;
        self.last.fetch_max(ms, Ordering::Relaxed);
    }

    /// How long nothing has progressed.
    pub fn quiet_for(&self) -> Duration {
        self.origin
            .elapsed()
            .saturating_sub(Duration::from_millis(self.last.load(Ordering::Relaxed)))
    }
}

/// The exit code of a runner ended by its hard deadline.
pub const EXIT_HARD_DEADLINE: i32 = 4;
/// How long after the hard deadline the watchdog exits the process if the run has not returned by then.
pub const WATCHDOG_AFTER: Duration = Duration::from_secs(30);

/// Exits the process `after` from now, on a thread of its own: it fires even when the async runtime itself
/// is wedged (a blocking call on a worker), which [`crate::run_with`]'s own deadline cannot see. Exiting
/// ends the task, so ECS reports it stopped and the sweeper releases the cluster.
pub fn exit_after(after: Duration) {
    let spawned = std::thread::Builder::new()
        .name("strato-watchdog".into())
        .spawn(move || {
            std::thread::sleep(after);
            eprintln!(
                "strato-runner: the hard deadline passed {}s ago; exiting",
                WATCHDOG_AFTER.as_secs()
            );
            std::process::exit(EXIT_HARD_DEADLINE);
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the watchdog thread");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touch_resets_the_quiet_time() {
        let l = Liveness::default();
        std::thread::sleep(Duration::from_millis(30));
        assert!(l.quiet_for() >= Duration::from_millis(30));
        l.clone().touch();
        assert!(l.quiet_for() < Duration::from_millis(30));
    }
}
