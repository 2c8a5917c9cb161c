//! How long to wait: the heartbeat interval with jitter, and exponential back-off with full jitter.

use std::time::Duration;

use strato_agent_wire::MIN_HEARTBEAT_SECS;

/// The first retry waits up to this long; each failure doubles it up to [`BACKOFF_CAP`].
pub const BACKOFF_BASE: Duration = Duration::from_secs(2);
pub const BACKOFF_CAP: Duration = Duration::from_secs(300);
/// Never retry sooner than this, whatever the jitter drew.
pub const BACKOFF_FLOOR: Duration = Duration::from_secs(1);

/// The wait before the next heartbeat: the interval the control plane asked for (never below its minimum),
/// plus up to 10% so that many agents restarted together spread out. Jitter only lengthens it: a heartbeat
/// sooner than asked would be refused with 429.
pub fn heartbeat_wait(interval_secs: u64, unit: f64) -> Duration {
    let base = Duration::from_secs(interval_secs.max(MIN_HEARTBEAT_SECS));
    base + base.mul_f64(0.1 * unit.clamp(0.0, 1.0))
}

/// Full jitter after `failures` consecutive failures (1 or more): a uniform draw in
/// `[0, min(cap, base * 2^(failures-1))]`, at least [`BACKOFF_FLOOR`].
pub fn retry_wait(failures: u32, unit: f64) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let ceiling = BACKOFF_BASE.saturating_mul(1u32 << exp).min(BACKOFF_CAP);
    ceiling.mul_f64(unit.clamp(0.0, 1.0)).max(BACKOFF_FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_wait_is_the_interval_plus_at_most_ten_percent_and_never_below_the_minimum() {
        assert_eq!(heartbeat_wait(60, 0.0), Duration::from_secs(60));
        assert_eq!(heartbeat_wait(60, 1.0), Duration::from_secs(66));
        assert_eq!(heartbeat_wait(60, 0.5), Duration::from_secs(63));
        assert_eq!(heartbeat_wait(1, 0.0), Duration::from_secs(MIN_HEARTBEAT_SECS));
    }

    #[test]
    fn the_retry_wait_doubles_up_to_the_cap_and_draws_below_it() {
        assert_eq!(retry_wait(1, 1.0), Duration::from_secs(2));
        assert_eq!(retry_wait(2, 1.0), Duration::from_secs(4));
        assert_eq!(retry_wait(5, 1.0), Duration::from_secs(32));
        assert_eq!(retry_wait(9, 1.0), BACKOFF_CAP);
        assert_eq!(
            retry_wait(1000, 1.0),
            BACKOFF_CAP,
            "no overflow after many failures"
        );
        assert_eq!(
            retry_wait(9, 0.5),
            Duration::from_secs(150),
            "full jitter: anywhere below the ceiling"
        );
        assert_eq!(retry_wait(9, 0.0), BACKOFF_FLOOR);
    }
}
