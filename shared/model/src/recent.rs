//! A process's recent answers: a value read from a table is reused while it is younger than a maximum age,
//! so a hot path costs no read for it meanwhile. For facts that change rarely and whose change may take that
//! long to reach other processes (a tenant's suspension, a template version's standing); the process that
//! writes a change puts it here at once. Bounded: past `cap` keys the memory starts over (a read each, then
//! remembered again).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shared by its clones (one per process).
pub struct Recent<K, V> {
    max_age: Duration,
    cap: usize,
    seen: Arc<Mutex<HashMap<K, (V, Instant)>>>,
}

impl<K, V> Clone for Recent<K, V> {
    fn clone(&self) -> Self {
        Self {
            max_age: self.max_age,
            cap: self.cap,
            seen: Arc::clone(&self.seen),
        }
    }
}

impl<K: Eq + Hash, V: Clone> Recent<K, V> {
    pub fn new(max_age: Duration, cap: usize) -> Self {
        Self {
            max_age,
            cap,
            seen: Arc::default(),
        }
    }

    /// The remembered answer for `key`, if younger than the maximum age at `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        let seen = self.seen.lock().ok()?;
        let (v, at) = seen.get(key)?;
        (now.saturating_duration_since(*at) < self.max_age).then(|| v.clone())
    }

    /// Remembers `key`'s answer (read or just written) as of `now`.
    pub fn put(&self, key: K, value: V, now: Instant) {
        if let Ok(mut seen) = self.seen.lock() {
            if seen.len() >= self.cap && !seen.contains_key(&key) {
                seen.clear();
            }
            seen.insert(key, (value, now));
        }
    }
}

impl<K, V> std::fmt::Debug for Recent<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recent")
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_until_too_old_and_the_memory_is_bounded() {
        let r: Recent<&str, u32> = Recent::new(Duration::from_secs(30), 2);
        let t0 = Instant::now();
        assert_eq!(r.get(&"a", t0), None);
        r.put("a", 1, t0);
        assert_eq!(r.get(&"a", t0 + Duration::from_secs(29)), Some(1));
        assert_eq!(r.get(&"a", t0 + Duration::from_secs(30)), None, "too old");
        r.put("b", 2, t0);
        r.put("c", 3, t0);
        assert_eq!(r.get(&"a", t0), None, "past the cap the memory started over");
        assert_eq!(r.get(&"c", t0), Some(3));
        let clone = r.clone();
        clone.put("d", 4, t0);
        assert_eq!(r.get(&"d", t0), Some(4), "clones share one memory");
    }
}
