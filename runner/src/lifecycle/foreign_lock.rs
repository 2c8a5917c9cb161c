//! A Terraform state lock left by a dead run in a customer's storage on another cloud (a GCS lock object, a
//! blob lease, an S3 lock file). Strato cannot read those locks itself between runs (it holds none of the
//! storage's credentials), so it learns of one when a command fails on it: the engine's error names the
//! lock's ID. The lock is released with the engine's own `force-unlock` only when its holder is proven gone
//! by the rule the platform's locks follow ([`state_lock_verdict`]: no other run of the cluster that may have
//! started an engine is unfinished); then the command runs once more. At most once per stage and run.

use regex::Regex;
use std::sync::LazyLock;
use strato_domain::ErrorCategory;
use strato_terraform::state_lock::{StateLockVerdict, state_lock_verdict};
use tokio::sync::watch;

use super::PreparedRun;
use super::failure::Failure;
use crate::outcome::Outcome;
use crate::ports::{Engine, Ports, RunStore};

static LOCK_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*ID:\s+(\S+)\s*$").expect("valid regex"));

/// The ID of the lock a failed command names, when it failed on a state lock.
pub(super) fn lock_id(out: &Outcome) -> Option<String> {
    if out.code == Some(0) || out.stopped.is_some() {
        return None;
    }
    let diagnostics = out
        .user_text
        .find("Error:")
        .map_or(out.user_text.as_str(), |i| &out.user_text[i..]);
    if crate::classify::classify(diagnostics).category != ErrorCategory::StateLocked {
        return None;
    }
    LOCK_ID.captures(diagnostics).map(|c| c[1].to_owned())
}

impl<P: Ports> PreparedRun<'_, P> {
    /// Whether the lock `out` failed on was a dead run's in the customer's storage and is now released.
    pub(super) async fn released_foreign_lock(
        &self,
        stage: &str,
        step: &str,
        out: &Outcome,
    ) -> Result<bool, Failure> {
        let Some(done) = &self.foreign_locks else {
            return Ok(false);
        };
        let Some(id) = lock_id(out) else {
            return Ok(false);
        };
        if done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| s == stage)
        {
            return Ok(false);
        }
        let ctx = self.ctx;
        let me = &ctx.op.operation_id;
        let ops = ctx
            .ports
            .store
            .open_cluster_operations(&ctx.cluster.cluster_id)
            .await
            .map_err(|e| Failure::new(step, ErrorCategory::Transient, e.to_string()))?;
        if let StateLockVerdict::MaybeHeld(holders) = state_lock_verdict(&ops, Some(me), Some(me), |_| false)
        {
            let ids: Vec<String> = holders.iter().map(ToString::to_string).collect();
            self.note(
                step,
                &format!(
                    "Terraform state lock {id} is held and operation(s) {} of this cluster may still run; \
                     it is not released",
                    ids.join(", ")
                ),
            );
            return Ok(false);
        }
        // Only the cluster lock's holder may clear it.
        ctx.fenced(step).await?;
        done.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(stage.to_owned());
        let dir = self.ws.stage_dir(stage);
        let args = ["force-unlock".to_owned(), "-force".to_owned(), id.clone()];
        let mut never = watch::channel(None).1;
        let unlocked = self
            .engine_for(stage)
            .run(&dir, &args, step, true, &ctx.logs, &mut never)
            .await
            .is_ok_and(|o| o.code == Some(0));
        if unlocked {
            self.note(
                step,
                &format!(
                    "released Terraform state lock {id} in your state storage: every other run of this \
                     cluster has ended, so its holder is gone; running the command again"
                ),
            );
        }
        Ok(unlocked)
    }
}
