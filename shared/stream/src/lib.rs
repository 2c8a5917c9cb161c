//! Log framing: the runner's lines batched into frames under the queue's message limit ([`live_batch`]),
//! the frames' wire form, control frames and their replay in order ([`logs`]). The runner writes them, the
//! log fan-out and the WebSocket API read them, and the CLI renders them.
//!
//! It stands on `strato-model` alone (the line and frame records live in its `messages`), so a change to
//! the framing rebuilds only the crates that stream logs, and a change to templates, catalogs or ports does
//! not rebuild it.

pub mod live_batch;
pub mod logs;
