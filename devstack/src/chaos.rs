//! Fault injection for devstack's SQS event source mappings (off unless [`DevstackConfig::chaos`] is set):
//! the faults AWS is allowed to cause and Strato must survive — a batch delivered twice (SQS is at least
//! once), deliveries delayed, and a function that errors on a fraction of its batches, either before its
//! handler ran or after (its work done, its answer lost, so the whole batch comes back). Seeded, so a failing
//! run can be replayed with the seed it prints.
//!
//! [`DevstackConfig::chaos`]: crate::stack::DevstackConfig::chaos

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What to inject, per delivery.
#[derive(Debug, Clone, Default)]
pub struct Chaos {
    pub seed: u64,
    /// Probability that a batch is handed to its function a second time (after the first invocation).
    pub duplicate: f64,
    /// Each invocation waits a random time up to this long first.
    pub max_delay: Duration,
    /// Per queue (logical name): the probability that an invocation ends in a function error.
    pub function_errors: BTreeMap<String, f64>,
}

/// The faults chosen for one invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    pub delay: Duration,
    pub duplicate: bool,
    /// A function error before the handler runs: nothing is done, the batch is redelivered.
    pub error_before: bool,
    /// A function error after the handler ran: its work is done but the batch is redelivered anyway.
    pub error_after: bool,
}

/// A [`Chaos`] with its random source and what it injected, shared by every poller of a stack.
#[derive(Debug, Clone)]
pub struct ChaosState {
    chaos: Chaos,
    rng: Arc<Mutex<StdRng>>,
    counts: Arc<Mutex<BTreeMap<String, InjectedCounts>>>,
}

/// How many faults were injected into one queue's deliveries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InjectedCounts {
    pub invocations: u64,
    pub delayed: u64,
    pub duplicated: u64,
    pub errors_before: u64,
    pub errors_after: u64,
}

impl ChaosState {
    pub fn new(chaos: Chaos) -> Self {
        let rng = StdRng::seed_from_u64(chaos.seed);
        Self {
            chaos,
            rng: Arc::new(Mutex::new(rng)),
            counts: Arc::default(),
        }
    }

    /// Draws the faults of one invocation on `queue` and counts them.
    pub fn draw(&self, queue: &str) -> Faults {
        let error_p = self.chaos.function_errors.get(queue).copied().unwrap_or(0.0);
        let faults = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            let max_ms = self.chaos.max_delay.as_millis() as u64;
            let delay = Duration::from_millis(if max_ms == 0 {
                0
            } else {
                rng.random_range(0..=max_ms)
            });
            let duplicate = rng.random_bool(self.chaos.duplicate.clamp(0.0, 1.0));
            let error = rng.random_bool(error_p.clamp(0.0, 1.0));
            let after = rng.random_bool(0.5);
            Faults {
                delay,
                duplicate,
                error_before: error && !after,
                error_after: error && after,
            }
        };
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let c = counts.entry(queue.to_owned()).or_default();
        c.invocations += 1;
        c.delayed += u64::from(!faults.delay.is_zero());
        c.duplicated += u64::from(faults.duplicate);
        c.errors_before += u64::from(faults.error_before);
        c.errors_after += u64::from(faults.error_after);
        faults
    }

    /// What was injected so far, per queue.
    pub fn injected(&self) -> BTreeMap<String, InjectedCounts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_probabilities_and_the_seed() {
        let chaos = Chaos {
            seed: 7,
            duplicate: 0.25,
            max_delay: Duration::from_millis(100),
            function_errors: BTreeMap::from([("events".to_owned(), 0.5)]),
        };
        let a = ChaosState::new(chaos.clone());
        let b = ChaosState::new(chaos);
        let draws: Vec<Faults> = (0..2000).map(|_| a.draw("events")).collect();
        assert_eq!(
            draws,
            (0..2000).map(|_| b.draw("events")).collect::<Vec<_>>(),
            "same seed, same faults"
        );
        let counts = a.injected()["events"];
        assert_eq!(counts.invocations, 2000);
        assert!((400..600).contains(&counts.duplicated), "{counts:?}");
        assert!((400..600).contains(&counts.errors_before), "{counts:?}");
        assert!((400..600).contains(&counts.errors_after), "{counts:?}");
        assert!(draws.iter().all(|f| f.delay <= Duration::from_millis(100)));
        assert!(draws.iter().all(|f| !(f.error_before && f.error_after)));
        // A queue without an error rate never errors.
        assert!((0..200).all(|_| {
            let f = a.draw("jobs");
            !f.error_before && !f.error_after
        }));
    }
}
