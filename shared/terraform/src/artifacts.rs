//! Object keys in the `artifacts` bucket. One place, so the runner (writer) and the ws function (replay) can
//! never disagree. A saved plan holds every input, sensitive ones included, and the prior state: it is
//! stored only for an approval request, and only sealed ([`plan_key`]).
//!
//! Log archive: the runner writes the user-visible log as JSON Lines chunks, one object per chunk, named by
//! the first and last sequence number they hold (zero-padded so lexical order = numeric order). A replay
//! from `from_seq` lists `logs/{op}/` and reads every chunk whose last seq is ≥ `from_seq`.

use strato_domain::ids::OperationId;

/// Width of the zero-padded sequence numbers in chunk keys.
const SEQ_WIDTH: usize = 12;

pub fn log_prefix(op: &OperationId) -> String {
    format!("logs/{op}/")
}

/// A chunk of the user log holding lines `first_seq..=last_seq` as JSON Lines of
/// [`strato_domain::messages::LogLine`].
pub fn log_chunk_key(op: &OperationId, first_seq: u64, last_seq: u64) -> String {
    format!("logs/{op}/{first_seq:0SEQ_WIDTH$}-{last_seq:0SEQ_WIDTH$}.jsonl")
}

/// Parses a chunk key back into `(first_seq, last_seq)`; `None` for anything else under the prefix.
pub fn parse_log_chunk_key(key: &str) -> Option<(u64, u64)> {
    let name = key.rsplit('/').next()?.strip_suffix(".jsonl")?;
    let (a, b) = name.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Marker object written once the runner has archived its last line: a replay that finds it knows the log
/// is complete. Its body is the final sequence number.
pub fn log_complete_key(op: &OperationId) -> String {
    format!("logs/{op}/complete")
}

/// The engine's debug log (`[TRACE]`/`[DEBUG]`/... lines) for one step; never shown to users.
pub fn debug_log_key(op: &OperationId, step: &str) -> String {
    format!("debug/{op}/{}.log", step.replace('/', "__"))
}

/// A plan saved for approval, sealed with Strato's key (an envelope as JSON), named by its checksum.
pub fn plan_key(op: &OperationId, stage: &str, sha256: &str) -> String {
    format!("plans/{op}/{}/{sha256}.sealed", stage.replace('/', "__"))
}

/// Where a runner event too large for an SQS message is stored whole (see `strato_aws::spill`).
pub const SPILLED_EVENT_PREFIX: &str = "events/";

/// The field of the small message that names a spilled event's object.
pub const SPILLED_EVENT_FIELD: &str = "spilled_event";

/// A spilled final event of one operation (a run sends one final event).
pub fn spilled_event_key(op: &OperationId) -> String {
    format!("{SPILLED_EVENT_PREFIX}{op}/final.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_sort_numerically_and_parse_back() {
        let op = OperationId::generate();
        let a = log_chunk_key(&op, 9, 99);
        let b = log_chunk_key(&op, 100, 250);
        assert!(a < b, "{a} should sort before {b}");
        assert!(a.starts_with(&log_prefix(&op)));
        assert_eq!(parse_log_chunk_key(&b), Some((100, 250)));
        assert_eq!(parse_log_chunk_key(&log_complete_key(&op)), None);
    }
}
