//! An ended plan or update of a cluster a rollout holds is that rollout's input: sent to the `rollouts`
//! queue (the api function applies it and starts what it decides). After the end is saved and handed off,
//! like the lifecycle events: a failure to send is logged and counted (`RolloutInputsLost`), never the
//! record's failure. A redelivered end sends the same message again, which the queue's deduplication and
//! the rollout (it ignores an outcome it no longer waits for) absorb.

use strato_domain::model::Operation;
use strato_domain::ports::Clock;
use strato_rollout::feed::{Queue, outcome_message};

use crate::ports::{Ports, Status};

pub(crate) async fn ended<P: Ports>(ctx: &Status<'_, P>, done: &Operation) {
    let now = ctx.clock.now().unix_timestamp();
    let sent = async {
        let Some(m) = outcome_message(ctx.rollouts, done)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        ctx.rollout_queue.send(&m, now).await?;
        Ok::<_, String>(Some(m.rollout_id))
    }
    .await;
    match sent {
        Ok(Some(rollout)) => {
            tracing::info!(operation_id = %done.operation_id, %rollout, "rollout input queued");
        }
        Ok(None) => {}
        Err(e) => {
            strato_domain::vitals::rollout_input_lost();
            tracing::error!(operation_id = %done.operation_id, error = %e, "rollout input not queued");
        }
    }
}
