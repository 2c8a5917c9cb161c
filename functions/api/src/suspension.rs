//! Whether a tenant is suspended, as this process last read it: a tenant's change costs no DynamoDB read for
//! its suspension while the answer is younger than [`MAX_AGE`]; past it, the read is the one its policy check
//! needs anyway (the router's `suspension` reads what governs the tenant whole, and the change uses it).
//! A suspension written by this process applies here at once; one written by another process (another warm
//! Lambda) applies here within [`MAX_AGE`] — the propagation an operator is told about.

use std::time::Duration;

use strato_domain::ids::TenantId;
use strato_domain::recent::Recent;

/// How long an answer is reused.
pub const MAX_AGE: Duration = Duration::from_secs(30);
/// The most tenants remembered; past it the memory starts over (a read each, then cached again).
const MAX_TENANTS: usize = 10_000;

/// A tenant's suspension reason (`None`: not suspended), shared by every clone of the api's context (one per
/// process).
#[derive(Clone, Debug)]
pub struct Suspensions(Recent<TenantId, Option<String>>);

impl Default for Suspensions {
    fn default() -> Self {
        Self(Recent::new(MAX_AGE, MAX_TENANTS))
    }
}

impl Suspensions {
    /// The remembered answer for `tenant`, if young enough.
    pub fn get(&self, tenant: &TenantId, now: std::time::Instant) -> Option<Option<String>> {
        self.0.get(tenant, now)
    }

    /// Remembers `tenant`'s answer (read or just written) as of `now`.
    pub fn put(&self, tenant: &TenantId, reason: Option<String>, now: std::time::Instant) {
        self.0.put(tenant.clone(), reason, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_answer_is_reused_until_it_is_too_old_and_a_write_replaces_it() {
        let s = Suspensions::default();
        let t: TenantId = "acme".parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(s.get(&t, t0), None, "never read");
        s.put(&t, None, t0);
        assert_eq!(s.get(&t, t0 + Duration::from_secs(29)), Some(None));
        assert_eq!(s.get(&t, t0 + MAX_AGE), None, "too old: read again");
        s.put(&t, Some("unpaid invoice".into()), t0 + Duration::from_secs(1));
        assert_eq!(
            s.get(&t, t0 + Duration::from_secs(2)),
            Some(Some("unpaid invoice".into()))
        );
        let other: TenantId = "globex".parse().unwrap();
        assert_eq!(s.get(&other, t0), None, "per tenant");
    }
}
