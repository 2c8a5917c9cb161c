//! After a failed or cancelled create: destroy what it created, stage by stage in reverse, and say so in the
//! failure.

use backon::{BackoffBuilder, ExponentialBuilder};
use strato_domain::ErrorCategory;
use strato_domain::model::OperationKind;
use tokio::sync::watch;

use super::failure::Failure;
use super::{CLEANUP_ATTEMPTS, PreparedRun};
use crate::outcome::StopReason;
use crate::ports::{Engine, Ports};

/// What a cleanup achieved.
struct Cleaned {
    destroyed: Vec<String>,
    left: Vec<String>,
    last_error: Option<String>,
}

impl<P: Ports> PreparedRun<'_, P> {
    /// A failed create (not one stopped by SIGTERM or at the end of the time limit: no time is left) that
    /// may have created something is cleaned up, under the same heartbeats, SIGTERM handling and time limit
    /// as the stages; the failure then names what was destroyed, or — category `cleanup_failed` — what is
    /// left and, when a stop cut the cleanup short, why. A create may have created something once this run
    /// started an `apply`, or when an earlier run of the operation may have (an approved plan's apply, a
    /// re-dispatch); `init`, `plan`, `show` and `output` create nothing.
    pub(super) async fn clean_up_failed_create(&mut self, failure: Failure) -> Failure {
        let may_have_created =
            self.apply_started.load(std::sync::atomic::Ordering::Relaxed) || self.ctx.op.attempt > 1;
        let wants_cleanup = self.ctx.op.kind == OperationKind::Create
            && !self.initialized.is_empty()
            && may_have_created
            && failure.stopped != Some(StopReason::Terminated)
            && self.ctx.term.borrow().is_none();
        if !wants_cleanup {
            return failure;
        }
        self.note(
            "cleanup",
            &format!("create failed at {}: cleaning up what was created", failure.step),
        );
        let Cleaned {
            destroyed,
            left,
            last_error,
        } = self.cleanup().await;
        strato_domain::vitals::cleanup(left.is_empty());
        let cleaned = if destroyed.is_empty() {
            "nothing had been created".to_owned()
        } else {
            format!(
                "cleaned up {} resource(s): {}",
                destroyed.len(),
                destroyed.join(", ")
            )
        };
        let interrupted = match *self.ctx.term.borrow() {
            Some(StopReason::Terminated) => " (interrupted: the runner task was stopped, SIGTERM)",
            Some(_) => " (interrupted: the operation's time limit was reached)",
            None => "",
        };
        if left.is_empty() {
            return Failure {
                what: format!("{}; {cleaned}", failure.what),
                ..failure
            };
        }
        Failure {
            what: format!(
                "{}; cleanup failed{interrupted} after up to {CLEANUP_ATTEMPTS} attempts ({}), {} resource(s) \
                 left: {}; {cleaned}",
                failure.what,
                last_error.unwrap_or_else(|| "unknown error".into()),
                left.len(),
                left.join(", ")
            ),
            category: ErrorCategory::CleanupFailed,
            fix: ErrorCategory::CleanupFailed.default_fix().to_owned(),
            stopped: None,
            step: failure.step,
            address: None,
        }
    }

    /// Destroys every initialized stage in reverse, each up to [`CLEANUP_ATTEMPTS`] times.
    async fn cleanup(&mut self) -> Cleaned {
        let mut destroyed = Vec::new();
        let mut left = Vec::new();
        let mut last_error = None;
        let stages: Vec<String> = self.initialized.iter().rev().cloned().collect();
        for stage in stages {
            // Unknown (the listing failed) still gets a destroy; known-empty needs none.
            let before = self.state_list(&stage).await;
            if before.as_ref().is_some_and(Vec::is_empty) {
                continue;
            }
            let before = before.unwrap_or_default();
            // After a stop, the remaining stages are only listed: what is left must still be named.
            let ok =
                self.ctx.term.borrow().is_none() && self.destroy_for_cleanup(&stage, &mut last_error).await;
            let after = self.state_list(&stage).await.unwrap_or_else(|| before.clone());
            if ok && after.is_empty() {
                destroyed.extend(before);
            } else {
                destroyed.extend(before.iter().filter(|a| !after.contains(a)).cloned());
                left.extend(after);
            }
        }
        Cleaned {
            destroyed,
            left,
            last_error,
        }
    }

    /// `destroy` of one stage, with backoff between attempts, until it succeeds, the attempts are used up
    /// or the task is stopped. Records the last error's text.
    async fn destroy_for_cleanup(&mut self, stage: &str, last_error: &mut Option<String>) -> bool {
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(self.ctx.cfg.retry_base)
            .with_max_times(CLEANUP_ATTEMPTS - 1)
            .with_jitter()
            .build();
        loop {
            match self
                .command(
                    stage,
                    "cleanup",
                    &["destroy", "-input=false", "-no-color", "-auto-approve"],
                    false,
                    true,
                )
                .await
            {
                Ok(out) if out.success() => return true,
                Ok(out) => *last_error = Some(Failure::from_outcome(&self.step(stage, "cleanup"), &out).what),
                Err(f) => *last_error = Some(f.what),
            }
            if self.ctx.term.borrow().is_some() {
                return false;
            }
            let Some(d) = delays.next() else { return false };
            tokio::time::sleep(d).await;
        }
    }

    /// The stage's state addresses, or `None` when they cannot be listed.
    async fn state_list(&self, stage: &str) -> Option<Vec<String>> {
        let dir = self.ws.stage_dir(stage);
        let mut never = watch::channel(None).1;
        let out = self
            .engine_for(stage)
            .run(
                &dir,
                &["state".into(), "list".into()],
                "cleanup",
                true,
                &self.ctx.logs,
                &mut never,
            )
            .await
            .ok()?;
        (out.code == Some(0)).then(|| {
            strato_terraform::render::strip_write_prefix(&out.stdout)
                .lines()
                .map(|l| strato_terraform::render::strip_write_prefix(l.trim()).to_owned())
                // Data sources are no cloud resources (a modern engine keeps them in a partial apply's state).
                .filter(|l| !l.is_empty() && !l.starts_with("data.") && !l.contains(".data."))
                .collect()
        })
    }
}
