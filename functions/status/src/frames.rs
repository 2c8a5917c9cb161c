//! Frames for WebSocket subscribers, sent through the logs queue and log-fanout.

use strato_domain::messages::LogFrame;
use strato_domain::model::{Cluster, Operation};
use strato_domain::ports::{Clock, Clusters, FrameSink, RunArchive};

use crate::ports::{Ports, Status};

/// Tells the operation's subscribers where it stands (via the logs queue and log-fanout). Best effort: the
/// state is already saved, and a lost frame is repaired by the next one or by reading the operation.
pub(crate) async fn announce<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    cluster: Option<&Cluster>,
    step: Option<String>,
    message: Option<String>,
) {
    let state = match cluster {
        Some(c) => Some(c.state()),
        // Status frames carry a cluster state; an estimate has none (its end frame still goes out).
        None if !op.kind.has_cluster() => None,
        None => ctx
            .store
            .load_cluster(&op.tenant_id, &op.cluster_id)
            .await
            .ok()
            .flatten()
            .map(|c| c.state()),
    };
    let Some(cluster_state) = state else { return };
    let frame = LogFrame::Status {
        operation_id: op.operation_id.clone(),
        cluster_id: op.cluster_id.clone(),
        cluster_state,
        operation_status: op.status,
        step,
        message,
        at: ctx.clock.now(),
    };
    if let Err(e) = ctx.queues.publish_frame(&frame).await {
        tracing::warn!(operation_id = %op.operation_id, error = %e, "status frame not sent");
    }
}

/// The last frame of an operation: its final status and the number of its last archived log line, so a
/// subscriber can tell whether it has every line.
pub(crate) async fn end_stream<P: Ports>(ctx: &Status<'_, P>, op: &Operation) {
    let last_seq = match ctx.archive.last_archived_seq(&op.operation_id).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(operation_id = %op.operation_id, error = %e, "log archive unreadable; end frame says 0");
            0
        }
    };
    let frame = LogFrame::End {
        operation_id: op.operation_id.clone(),
        final_status: op.status,
        last_seq,
    };
    if let Err(e) = ctx.queues.publish_frame(&frame).await {
        tracing::warn!(operation_id = %op.operation_id, error = %e, "end frame not sent");
    }
}
