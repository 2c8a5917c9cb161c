//! The rollout's state machine: given the rollout as stored and one input (an outcome of a cluster's run, the
//! clock, an operator's pause, resume or abort), the new state and the effects to carry out (start a plan or
//! an update, notify, wake up at a time). No function waits on another: each input is an event the
//! status function or the scheduler delivers, and an input that does not match the rollout's current view
//! (a duplicate delivery, an outcome of a run the rollout no longer waits for) changes nothing.

use serde::{Deserialize, Serialize};
use strato_domain::ids::{ClusterId, OperationId, TenantId};

use crate::RolloutError;
use crate::spec::{Mode, Plan};

/// What a cluster's plan on the new version found (from its preview).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanFindings {
    pub add: u32,
    pub change: u32,
    /// Addresses the plan would replace.
    #[serde(default)]
    pub replace: Vec<String>,
    /// Addresses the plan would destroy (outside a replacement).
    #[serde(default)]
    pub destroy: Vec<String>,
    /// The monthly cost's difference, when estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_difference: Option<f64>,
    /// Policy rules that would refuse the update.
    #[serde(default)]
    pub denied: Vec<String>,
}

/// Where one selected cluster is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MemberStatus {
    Pending,
    Planning {
        operation: OperationId,
    },
    /// Planned; in a preview, its final status.
    Planned {
        findings: PlanFindings,
    },
    Upgrading {
        operation: OperationId,
        findings: PlanFindings,
    },
    Upgraded {
        findings: PlanFindings,
    },
    /// Its plan or update failed, or the new version refused its variables.
    Failed {
        reason: String,
    },
    /// Its plan broke a stop rule: not updated.
    Held {
        reason: String,
        findings: PlanFindings,
    },
    /// Left out by a resume that skipped the failed and held clusters.
    Skipped {
        reason: String,
    },
}

impl MemberStatus {
    /// Every status's name, as serialized.
    pub const NAMES: [&'static str; 8] = [
        "pending",
        "planning",
        "planned",
        "upgrading",
        "upgraded",
        "failed",
        "held",
        "skipped",
    ];

    /// Its name, as serialized (`pending`, `planning`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Planning { .. } => "planning",
            Self::Planned { .. } => "planned",
            Self::Upgrading { .. } => "upgrading",
            Self::Upgraded { .. } => "upgraded",
            Self::Failed { .. } => "failed",
            Self::Held { .. } => "held",
            Self::Skipped { .. } => "skipped",
        }
    }

    fn in_flight(&self) -> bool {
        matches!(self, Self::Planning { .. } | Self::Upgrading { .. })
    }

    /// Done with, as far as this rollout goes (its wave can end).
    fn settled(&self, mode: Mode) -> bool {
        match self {
            Self::Upgraded { .. } | Self::Skipped { .. } => true,
            Self::Planned { .. } | Self::Failed { .. } | Self::Held { .. } => mode == Mode::Preview,
            Self::Pending | Self::Planning { .. } | Self::Upgrading { .. } => false,
        }
    }

    /// The operation the rollout waits for on this cluster.
    fn waiting_for(&self) -> Option<&OperationId> {
        match self {
            Self::Planning { operation } | Self::Upgrading { operation, .. } => Some(operation),
            _ => None,
        }
    }
}

/// One selected cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub tenant: TenantId,
    pub cluster: ClusterId,
    /// The template version the cluster was on when selected.
    pub from_version: String,
    pub wave: usize,
    #[serde(flatten)]
    pub status: MemberStatus,
}

/// Why a rollout paused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PauseReason {
    /// A cluster's plan or update failed (or the new version refused its variables).
    Failure { cluster: ClusterId, reason: String },
    /// A cluster's plan broke a stop rule.
    StopRule { cluster: ClusterId, reason: String },
    /// An operator paused it.
    Operator { by: String },
}

impl PauseReason {
    /// One line for people: what stopped the rollout.
    pub fn text(&self) -> String {
        match self {
            Self::Failure { cluster, reason } => format!("cluster {cluster} failed: {reason}"),
            Self::StopRule { cluster, reason } => format!("cluster {cluster} was held: {reason}"),
            Self::Operator { by } => format!("paused by {by}"),
        }
    }
}

/// The rollout's phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// Working on wave `wave` (a preview has one).
    Running {
        wave: usize,
    },
    /// Wave `wave` is done; the next starts at `until` (unix seconds).
    Soaking {
        wave: usize,
        until: i64,
    },
    /// Stopped before starting anything new; runs in flight end and are recorded.
    Paused {
        wave: usize,
        reason: PauseReason,
    },
    Completed,
    Aborted {
        by: String,
    },
}

/// A rollout as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    pub plan: Plan,
    pub members: Vec<Member>,
    pub phase: Phase,
}

/// An input: one event for the rollout (serialized as the `rollouts` queue carries it, see
/// [`crate::feed::RolloutMessage`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Input {
    /// A cluster's plan on the new version ended with a preview.
    Planned {
        cluster: ClusterId,
        operation: OperationId,
        findings: PlanFindings,
    },
    /// A cluster's update ended.
    Upgraded {
        cluster: ClusterId,
        operation: OperationId,
    },
    /// A cluster's plan or update failed (what, and how to fix it).
    Failed {
        cluster: ClusterId,
        operation: OperationId,
        reason: String,
    },
    /// The clock (the scheduler's tick, or the wake-up asked for).
    Tick,
    Pause {
        by: String,
    },
    /// Go on; `skip_failed` leaves the failed and held clusters of the current wave out (else they are
    /// planned again).
    Resume {
        skip_failed: bool,
    },
    Abort {
        by: String,
    },
}

/// What the caller does after storing the new state (in this order).
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Start a plan of `cluster` on the new version as operation `operation` (created only if it does not
    /// exist: carrying out an effect twice starts one run).
    Plan {
        cluster: ClusterId,
        operation: OperationId,
    },
    /// Start the update of `cluster` to the new version as operation `operation` (the same).
    Update {
        cluster: ClusterId,
        operation: OperationId,
    },
    /// Deliver [`Input::Tick`] at this time (unix seconds).
    WakeAt(i64),
    Paused(PauseReason),
    Completed,
    Aborted,
}

impl Rollout {
    /// A new rollout over `members` (tenant, cluster, version it is on), in the order given; waves assigned.
    pub fn new(plan: Plan, members: Vec<(TenantId, ClusterId, String)>) -> Result<Self, RolloutError> {
        plan.check()?;
        if members.is_empty() {
            return Err(RolloutError::NothingSelected);
        }
        if members.len() > crate::spec::MAX_MEMBERS {
            return Err(RolloutError::TooMany {
                found: members.len(),
                max: crate::spec::MAX_MEMBERS,
            });
        }
        let waves = plan.assign_waves(members.len());
        let members = members
            .into_iter()
            .zip(waves)
            .map(|((tenant, cluster, from_version), wave)| Member {
                tenant,
                cluster,
                from_version,
                wave,
                status: MemberStatus::Pending,
            })
            .collect();
        Ok(Self {
            plan,
            members,
            phase: Phase::Running { wave: 0 },
        })
    }

    /// How many waves the rollout has.
    pub fn waves(&self) -> usize {
        self.members.iter().map(|m| m.wave + 1).max().unwrap_or(0)
    }

    /// How many clusters are in each member status (every status, zero included).
    pub fn status_counts(&self) -> Vec<(&'static str, usize)> {
        MemberStatus::NAMES
            .iter()
            .map(|n| (*n, self.members.iter().filter(|m| m.status.name() == *n).count()))
            .collect()
    }

    /// Whether nothing more will happen.
    pub fn finished(&self) -> bool {
        matches!(self.phase, Phase::Completed | Phase::Aborted { .. })
    }

    /// The first effects: the first runs of wave 0.
    pub fn start(&mut self) -> Vec<Effect> {
        self.advance(0)
    }

    /// Applies `input` at `now` (unix seconds).
    pub fn step(&mut self, input: Input, now: i64) -> Result<Vec<Effect>, RolloutError> {
        match input {
            Input::Planned {
                cluster,
                operation,
                findings,
            } => {
                let mode = self.plan.mode;
                let held = self.held_by_rules(&findings);
                let running = matches!(self.phase, Phase::Running { .. });
                let m = self.member_mut(&cluster)?;
                if !matches!(&m.status, MemberStatus::Planning { operation: o } if *o == operation) {
                    return Ok(vec![]);
                }
                let mut out = Vec::new();
                match held {
                    Some(reason) if mode == Mode::Apply => {
                        m.status = MemberStatus::Held {
                            reason: reason.clone(),
                            findings,
                        };
                        out.extend(self.pause(PauseReason::StopRule { cluster, reason }));
                    }
                    // A preview's final status; or paused meanwhile: no update starts, and a resume plans the
                    // cluster again (the plan may be stale by then).
                    _ if mode == Mode::Preview || !running => {
                        m.status = MemberStatus::Planned { findings };
                    }
                    _ => {
                        let operation = OperationId::generate();
                        m.status = MemberStatus::Upgrading {
                            operation: operation.clone(),
                            findings,
                        };
                        out.push(Effect::Update { cluster, operation });
                    }
                }
                out.extend(self.advance(now));
                Ok(out)
            }
            Input::Upgraded { cluster, operation } => {
                let m = self.member_mut(&cluster)?;
                let MemberStatus::Upgrading {
                    operation: o,
                    findings,
                } = &m.status
                else {
                    return Ok(vec![]);
                };
                if *o != operation {
                    return Ok(vec![]);
                }
                m.status = MemberStatus::Upgraded {
                    findings: findings.clone(),
                };
                Ok(self.advance(now))
            }
            Input::Failed {
                cluster,
                operation,
                reason,
            } => {
                let mode = self.plan.mode;
                let m = self.member_mut(&cluster)?;
                if m.status.waiting_for() != Some(&operation) {
                    return Ok(vec![]);
                }
                m.status = MemberStatus::Failed {
                    reason: reason.clone(),
                };
                let mut out = Vec::new();
                if mode == Mode::Apply {
                    out.extend(self.pause(PauseReason::Failure { cluster, reason }));
                }
                out.extend(self.advance(now));
                Ok(out)
            }
            Input::Tick => Ok(self.advance(now)),
            Input::Pause { by } => match self.phase {
                Phase::Running { .. } | Phase::Soaking { .. } => Ok(self.pause(PauseReason::Operator { by })),
                Phase::Paused { .. } => Ok(vec![]),
                Phase::Completed | Phase::Aborted { .. } => Err(RolloutError::Finished),
            },
            Input::Resume { skip_failed } => {
                let Phase::Paused { wave, .. } = self.phase else {
                    return match self.phase {
                        Phase::Completed | Phase::Aborted { .. } => Err(RolloutError::Finished),
                        _ => Ok(vec![]),
                    };
                };
                for m in self.members.iter_mut().filter(|m| m.wave == wave) {
                    if matches!(m.status, MemberStatus::Planned { .. }) {
                        m.status = MemberStatus::Pending;
                    }
                    let again = match &m.status {
                        MemberStatus::Failed { reason } | MemberStatus::Held { reason, .. } => {
                            Some(reason.clone())
                        }
                        _ => None,
                    };
                    if let Some(reason) = again {
                        m.status = if skip_failed {
                            MemberStatus::Skipped {
                                reason: format!("skipped on resume: {reason}"),
                            }
                        } else {
                            MemberStatus::Pending
                        };
                    }
                }
                self.phase = Phase::Running { wave };
                Ok(self.advance(now))
            }
            Input::Abort { by } => {
                if self.finished() {
                    return Err(RolloutError::Finished);
                }
                self.phase = Phase::Aborted { by };
                Ok(vec![Effect::Aborted])
            }
        }
    }

    fn member_mut(&mut self, cluster: &ClusterId) -> Result<&mut Member, RolloutError> {
        self.members
            .iter_mut()
            .find(|m| &m.cluster == cluster)
            .ok_or_else(|| RolloutError::NotAMember(cluster.clone()))
    }

    /// The first stop rule a cluster's plan breaks, said for people; `None` when it may go on.
    pub fn held_by_rules(&self, f: &PlanFindings) -> Option<String> {
        let rules = &self.plan.stop;
        if let Some(rule) = f.denied.first() {
            return Some(format!("policy {rule} would refuse the update"));
        }
        let replaced: Vec<&str> = f
            .replace
            .iter()
            .filter(|a| !rules.replace_allowed(a))
            .map(String::as_str)
            .collect();
        if !replaced.is_empty() {
            return Some(format!(
                "would replace {}, which the rollout does not allow (stop.allow_replace)",
                replaced.join(", ")
            ));
        }
        if !rules.allow_destroy && !f.destroy.is_empty() {
            return Some(format!(
                "would destroy {}, which the rollout does not allow (stop.allow_destroy)",
                f.destroy.join(", ")
            ));
        }
        if let (Some(max), Some(d)) = (rules.max_monthly_increase, f.monthly_difference)
            && d > max
        {
            // The reason reaches people through the API, the CLI and the console, which all call this
            // bound `stop.max_monthly_delta` (`--max-monthly-delta`): a reason naming the field it is stored
            // as would send them to one the API refuses.
            return Some(format!(
                "would raise the monthly cost by {d:.2}, above stop.max_monthly_delta {max:.2}"
            ));
        }
        None
    }

    fn pause(&mut self, reason: PauseReason) -> Vec<Effect> {
        let wave = match self.phase {
            Phase::Running { wave } | Phase::Soaking { wave, .. } => wave,
            // Already paused (or finished): the first reason stands.
            _ => return vec![],
        };
        self.phase = Phase::Paused {
            wave,
            reason: reason.clone(),
        };
        vec![Effect::Paused(reason)]
    }

    /// Starts what may start now: the current wave's pending clusters up to the parallel bound; at a wave's
    /// end, the soak or the next wave; at the last wave's end, completion.
    fn advance(&mut self, now: i64) -> Vec<Effect> {
        let mode = self.plan.mode;
        let wave = match self.phase {
            Phase::Running { wave } => wave,
            Phase::Soaking { wave, until } if now >= until => {
                self.phase = Phase::Running { wave: wave + 1 };
                wave + 1
            }
            Phase::Soaking { until, .. } => return vec![Effect::WakeAt(until)],
            _ => return vec![],
        };
        let mut out = Vec::new();
        let in_flight = self.members.iter().filter(|m| m.status.in_flight()).count();
        let room = (self.plan.max_parallel as usize).saturating_sub(in_flight);
        for m in self
            .members
            .iter_mut()
            .filter(|m| m.wave == wave && m.status == MemberStatus::Pending)
            .take(room)
        {
            let operation = OperationId::generate();
            m.status = MemberStatus::Planning {
                operation: operation.clone(),
            };
            out.push(Effect::Plan {
                cluster: m.cluster.clone(),
                operation,
            });
        }
        let wave_done = self
            .members
            .iter()
            .filter(|m| m.wave == wave)
            .all(|m| m.status.settled(mode));
        if !wave_done {
            return out;
        }
        if wave + 1 >= self.waves() {
            self.phase = Phase::Completed;
            out.push(Effect::Completed);
            return out;
        }
        if self.plan.soak_secs == 0 {
            self.phase = Phase::Running { wave: wave + 1 };
            out.extend(self.advance(now));
            return out;
        }
        let until = now + self.plan.soak_secs as i64;
        self.phase = Phase::Soaking { wave, until };
        out.push(Effect::WakeAt(until));
        out
    }
}
