//! A runner's stdout/stderr, as the awslogs driver would ship it: EMF lines to devstack's metrics store,
//! the rest to devstack's log and capture, watching for the allocation failures `RLIMIT_AS` causes.

use tokio::io::{AsyncBufReadExt, BufReader};

/// The runner's output, as CloudWatch Logs would get it (here: devstack's log, tagged with the task).
/// Returns whether the runner said it could not allocate memory (then aborted, under `RLIMIT_AS`).
pub(super) async fn forward<R: tokio::io::AsyncRead + Unpin>(
    reader: BufReader<R>,
    stream: &'static str,
    span: tracing::Span,
) -> bool {
    let mut out_of_memory = false;
    let mut lines = reader.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        // The runner's metrics (EMF on stdout): into devstack's store, as CloudWatch would extract them.
        if stream == "stdout" && crate::metrics::store().ingest_line(&line) {
            span.in_scope(|| tracing::debug!(target: "runner", stream, "{line}"));
            continue;
        }
        out_of_memory |= is_out_of_memory(&line);
        crate::capture::runner_line(&line, stream);
        span.in_scope(|| tracing::info!(target: "runner", stream, "{line}"));
    }
    out_of_memory
}

/// What Rust's allocation-failure handler and Go's runtime print before aborting.
pub(super) fn is_out_of_memory(line: &str) -> bool {
    (line.starts_with("memory allocation of ") && line.ends_with(" failed"))
        || line.starts_with("fatal error: out of memory")
        || line.starts_with("runtime: out of memory")
}
