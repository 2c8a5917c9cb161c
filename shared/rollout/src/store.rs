//! Rollouts as stored: the record (its spec, the machine's state, a version for conditional writes), the
//! port the adapters implement (DynamoDB in `strato-aws`, [`crate::fake::FakeRollouts`] in memory), and
//! [`apply`], which feeds one input to a stored rollout by optimistic concurrency.
//!
//! A cluster is in at most one active rollout: [`RolloutStore::create`] claims every member or none, and a
//! finished rollout (completed or aborted) gives its claims back, so two rollouts of one cluster never
//! interleave.

use std::fmt;
use std::future::Future;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use strato_domain::ids::{ClusterId, OperationId, TenantId};

use crate::RolloutError;
use crate::machine::{Effect, Input, Phase, Rollout};

/// The bound the store's one-item layout sets on a rollout (the spec holds it: the machine checks it too).
pub use crate::spec::MAX_MEMBERS;
/// The most replaced (and, separately, destroyed) addresses kept per member; the counts stay exact.
pub const MAX_ADDRESSES: usize = 10;
/// Attempts of one conditional save before [`RolloutError::Conflict`] is returned.
pub const ATTEMPTS: usize = 5;

/// A rollout's id: `ro-` and 32 lowercase hex digits (time-ordered, like operation ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RolloutId(String);

impl RolloutId {
    pub fn generate() -> Self {
        let op = OperationId::generate();
        Self(format!("ro-{}", &op.as_str()[3..]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for RolloutId {
    type Err = RolloutError;
    fn from_str(s: &str) -> Result<Self, RolloutError> {
        let ok = s.strip_prefix("ro-").is_some_and(|rest| {
            rest.len() == 32
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        });
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(RolloutError::NotFound(s.chars().take(64).collect()))
        }
    }
}

impl fmt::Display for RolloutId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RolloutId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RolloutId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Whose rollout it is: a tenant's (its own fleet only) or the platform operator's (across tenants).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Owner {
    Tenant { tenant: TenantId },
    Platform,
}

impl Owner {
    /// Whether `tenant` (or the platform operator, `None`) may see and steer this rollout.
    pub fn visible_to(&self, tenant: Option<&TenantId>) -> bool {
        match (self, tenant) {
            (_, None) => true,
            (Self::Tenant { tenant: t }, Some(caller)) => t == caller,
            (Self::Platform, Some(_)) => false,
        }
    }
}

/// A stored rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: RolloutId,
    pub owner: Owner,
    pub template: String,
    pub to_version: String,
    /// Who started it (the caller's subject).
    pub created_by: String,
    /// Unix seconds.
    pub created_at: i64,
    pub rollout: Rollout,
    /// Bumped by every save; a save holds only if the stored version is still the one read.
    #[serde(default)]
    pub version: u64,
}

impl Record {
    /// When the scheduler should deliver a tick (the end of a soak), if ever.
    pub fn wake_at(&self) -> Option<i64> {
        match self.rollout.phase {
            Phase::Soaking { until, .. } => Some(until),
            _ => None,
        }
    }

    /// Whether it still holds its clusters.
    pub fn active(&self) -> bool {
        !self.rollout.finished()
    }

    /// The rollout waiting for `operation` on `cluster`, if it is.
    pub fn waits_for(&self, cluster: &ClusterId, operation: &OperationId) -> bool {
        self.rollout.members.iter().any(|m| {
            &m.cluster == cluster
                && matches!(&m.status,
                    crate::MemberStatus::Planning { operation: o } | crate::MemberStatus::Upgrading { operation: o, .. }
                    if o == operation)
        })
    }
}

/// Where rollouts are kept. Every write is conditional: [`RolloutStore::create`] on no member being claimed by
/// another active rollout, [`RolloutStore::save`] on the version read.
pub trait RolloutStore: Send + Sync {
    /// Claims every member cluster for `r` and records it (version 0), all or nothing:
    /// [`RolloutError::Claimed`] names a member another active rollout holds (no claim is kept).
    fn create(&self, r: &Record) -> impl Future<Output = Result<(), RolloutError>> + Send;

    fn load(&self, id: &RolloutId) -> impl Future<Output = Result<Option<Record>, RolloutError>> + Send;

    /// Saves `r` if the stored version is still `r.version`, then bumps `r.version`; else
    /// [`RolloutError::Conflict`]. Saving a finished rollout gives its clusters' claims back.
    fn save(&self, r: &mut Record) -> impl Future<Output = Result<(), RolloutError>> + Send;

    /// Every rollout, newest first.
    fn list(&self) -> impl Future<Output = Result<Vec<Record>, RolloutError>> + Send;

    /// The active rollout holding `cluster`, if one does.
    fn claimed_by(
        &self,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Option<RolloutId>, RolloutError>> + Send;

    /// The active rollouts whose wake time is at or before `now` (unix seconds).
    fn due(&self, now: i64) -> impl Future<Output = Result<Vec<RolloutId>, RolloutError>> + Send;
}

/// Feeds `input` to the stored rollout `id` at `now`: read, step, conditional save, again on a lost write
/// (at most [`ATTEMPTS`] times). An input that changes nothing (a duplicate or stale event) writes nothing
/// and returns no effects. `None`: no such rollout. The effects are the caller's to carry out, after the
/// save: each names its operation id, chosen before it was saved, so carrying one out twice starts one run.
pub async fn apply<S: RolloutStore>(
    store: &S,
    id: &RolloutId,
    input: Input,
    now: i64,
) -> Result<Option<(Record, Vec<Effect>)>, RolloutError> {
    for _ in 0..ATTEMPTS {
        let Some(mut r) = store.load(id).await? else {
            return Ok(None);
        };
        let before = r.rollout.clone();
        let effects = r.rollout.step(input.clone(), now)?;
        if r.rollout == before {
            // Nothing to record; a wake-up asked for again is not a change either.
            return Ok(Some((r, effects)));
        }
        match store.save(&mut r).await {
            Ok(()) => return Ok(Some((r, effects))),
            Err(RolloutError::Conflict) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(RolloutError::Conflict)
}
