//! What a rollout is asked to do: the mode, the waves, the soak time and the stop rules, checked before
//! anything starts; and how the selected clusters are split into waves.

use serde::{Deserialize, Serialize};

use crate::RolloutError;

/// The most clusters one rollout selects. The whole rollout is one stored item (DynamoDB's 400 KB): with
/// each member's plan findings bounded (`store::MAX_ADDRESSES`), 200 members stay well inside it. A larger
/// fleet is rolled out by several rollouts (e.g. one per tenant or per `from_versions`).
pub const MAX_MEMBERS: usize = 200;

/// The most waves a rollout may have: more is a schedule, not a rollout.
pub const MAX_WAVES: usize = 10;
/// The longest soak between two waves (7 days).
pub const MAX_SOAK_SECS: u64 = 7 * 24 * 3600;
/// The most runs one rollout keeps in flight at once (plans and updates together), whatever it asks.
pub const MAX_PARALLEL: u32 = 50;
/// In flight at once unless the rollout asks for another number.
pub const DEFAULT_PARALLEL: u32 = 5;

/// `preview` plans every selected cluster on the new version and applies nothing; `apply` upgrades them in
/// waves, each cluster planned and checked against the stop rules before its update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Preview,
    Apply,
}

/// One wave's size: a number of clusters, or the share of the whole fleet that has been upgraded once the
/// wave ends (cumulative: `[{percent: 25}, {percent: 100}]` is a quarter, then the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveSize {
    Clusters(u32),
    Percent(u8),
}

/// What pauses an apply rollout before a cluster's update starts. A failure of any plan or update always
/// pauses it, as does a policy deny or a validation failure; these rules say what else may pass.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRules {
    /// Resource addresses whose replacement is expected (exactly, or a prefix ending in `.` or `[`, e.g.
    /// `module.cluster.aws_eks_node_group.this`); any other replacement pauses the rollout.
    #[serde(default)]
    pub allow_replace: Vec<String>,
    /// Whether a plan may destroy resources (outside a replacement). Off: any destroy pauses.
    #[serde(default)]
    pub allow_destroy: bool,
    /// The most a cluster's monthly cost may rise (in the estimate's currency); above it, the rollout pauses.
    /// No limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_monthly_increase: Option<f64>,
}

impl StopRules {
    /// Whether replacing `address` is allowed by [`StopRules::allow_replace`].
    pub fn replace_allowed(&self, address: &str) -> bool {
        self.allow_replace.iter().any(|a| {
            let a = a.as_str();
            address == a
                || ((a.ends_with('.') || a.ends_with('[')) && address.starts_with(a))
                // Every instance of a counted resource: `x.this` allows `x.this[0]`, `x.this["a"]`.
                || (address.starts_with(a) && address[a.len()..].starts_with('['))
        })
    }
}

/// How a rollout runs (the template and version it goes to and the clusters it selects are the caller's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub mode: Mode,
    /// Apply only: at least one wave, the last reaching every selected cluster.
    #[serde(default)]
    pub waves: Vec<WaveSize>,
    /// Apply only: how long to wait after a wave ends before the next starts.
    #[serde(default)]
    pub soak_secs: u64,
    #[serde(default)]
    pub stop: StopRules,
    /// Runs in flight at once (default [`DEFAULT_PARALLEL`], at most [`MAX_PARALLEL`]); each is also held to
    /// its tenant's concurrency slots like any other operation.
    #[serde(default = "default_parallel")]
    pub max_parallel: u32,
}

fn default_parallel() -> u32 {
    DEFAULT_PARALLEL
}

fn invalid(field: &'static str, reason: impl Into<String>) -> RolloutError {
    RolloutError::Invalid {
        field,
        reason: reason.into(),
    }
}

impl Plan {
    /// Checks the plan on its own (not against a fleet): each field's bounds, named.
    pub fn check(&self) -> Result<(), RolloutError> {
        if !(1..=MAX_PARALLEL).contains(&self.max_parallel) {
            return Err(invalid("max_parallel", format!("must be 1 to {MAX_PARALLEL}")));
        }
        if let Some(m) = self.stop.max_monthly_increase
            && !(m.is_finite() && m >= 0.0)
        {
            return Err(invalid(
                "stop.max_monthly_increase",
                "must be a number of at least 0",
            ));
        }
        if self.stop.allow_replace.iter().any(|a| a.trim().is_empty()) {
            return Err(invalid("stop.allow_replace", "an address cannot be empty"));
        }
        match self.mode {
            Mode::Preview => {
                if !self.waves.is_empty() || self.soak_secs != 0 {
                    return Err(invalid(
                        "waves",
                        "a preview applies nothing: waves and soak_secs belong to mode apply",
                    ));
                }
            }
            Mode::Apply => {
                if self.waves.is_empty() {
                    return Err(invalid(
                        "waves",
                        "an apply rollout needs at least one wave, e.g. [{\"clusters\": 1}, {\"percent\": 100}]",
                    ));
                }
                if self.waves.len() > MAX_WAVES {
                    return Err(invalid("waves", format!("at most {MAX_WAVES} waves")));
                }
                if self.soak_secs > MAX_SOAK_SECS {
                    return Err(invalid("soak_secs", format!("at most {MAX_SOAK_SECS} (7 days)")));
                }
                let mut last_percent = 0u8;
                for w in &self.waves {
                    match *w {
                        WaveSize::Clusters(0) => {
                            return Err(invalid("waves", "a wave of clusters needs at least 1"));
                        }
                        WaveSize::Percent(p) if p == 0 || p > 100 => {
                            return Err(invalid("waves", "a percent is 1 to 100"));
                        }
                        WaveSize::Percent(p) if p <= last_percent => {
                            return Err(invalid(
                                "waves",
                                "percents are shares of the whole fleet upgraded by the wave's end: each must be above the one before",
                            ));
                        }
                        WaveSize::Percent(p) => last_percent = p,
                        WaveSize::Clusters(_) => {}
                    }
                }
                if self.waves.last() != Some(&WaveSize::Percent(100)) {
                    // The fleet is known only at start; a plan whose waves may not reach every cluster is
                    // refused now rather than leaving clusters behind then.
                    return Err(invalid(
                        "waves",
                        "the last wave must be {\"percent\": 100}, so every selected cluster is reached",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The selected clusters' wave numbers, in their order: each wave's cumulative target (clusters added to
    /// the previous target, or the percent of `fleet` rounded up), empty waves left out and numbers closed up.
    pub fn assign_waves(&self, fleet: usize) -> Vec<usize> {
        if self.mode == Mode::Preview {
            return vec![0; fleet];
        }
        let mut out = Vec::with_capacity(fleet);
        let mut reached = 0usize;
        let mut wave = 0usize;
        for w in &self.waves {
            let target = match *w {
                WaveSize::Clusters(n) => reached + n as usize,
                WaveSize::Percent(p) => (fleet * p as usize).div_ceil(100),
            }
            .min(fleet);
            if target <= reached {
                continue;
            }
            out.extend(std::iter::repeat_n(wave, target - reached));
            reached = target;
            wave += 1;
        }
        out
    }
}
