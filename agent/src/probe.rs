//! The liveness check. The loop writes the time into a file in /tmp after each turn and while it waits;
//! `strato-agent probe` (the Deployment's exec liveness probe: the agent has no inbound port) exits 0 only
//! if that time is recent. A loop stuck in a call that never returns stops writing, and the kubelet
//! restarts the pod.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::AgentError;

/// Where the loop writes its time (the Deployment mounts an emptyDir at /tmp: the root is read-only).
pub const DEFAULT_FILE: &str = "/tmp/strato-agent-alive";
/// The loop writes at least this often, whatever it waits for.
pub const TOUCH_EVERY: Duration = Duration::from_secs(20);
/// Older than this, the loop is taken for stuck: a turn is bounded well below it (see `run`).
pub const MAX_AGE: Duration = Duration::from_secs(180);

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub fn touch(file: &Path, now: SystemTime) -> Result<(), AgentError> {
    std::fs::write(file, unix(now).to_string())
        .map_err(|e| AgentError::Probe(format!("writing {}: {e}", file.display())))
}

/// Ok if the loop wrote `file` less than `max_age` before `now`.
pub fn check(file: &Path, max_age: Duration, now: SystemTime) -> Result<(), AgentError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| AgentError::Probe(format!("the loop has not written {} yet: {e}", file.display())))?;
    let at: u64 = text
        .trim()
        .parse()
        .map_err(|_| AgentError::Probe(format!("{} holds no time", file.display())))?;
    let age = unix(now).saturating_sub(at);
    if age > max_age.as_secs() {
        return Err(AgentError::Probe(format!(
            "the loop last ticked {age} s ago (more than {} s)",
            max_age.as_secs()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_passes_only_after_a_recent_tick() {
        let dir = std::env::temp_dir().join(format!("strato-agent-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("alive");
        let now = SystemTime::now();
        assert!(check(&file, MAX_AGE, now).is_err(), "no tick yet");
        touch(&file, now - Duration::from_secs(10)).unwrap();
        assert!(check(&file, MAX_AGE, now).is_ok());
        touch(&file, now - MAX_AGE - Duration::from_secs(1)).unwrap();
        let err = check(&file, MAX_AGE, now).unwrap_err().to_string();
        assert!(err.contains("181 s ago"), "{err}");
        std::fs::write(&file, "garbage").unwrap();
        assert!(check(&file, MAX_AGE, now).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
