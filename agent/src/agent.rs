//! One turn of the agent's loop: observe, register or heartbeat, rotate when due, and decide how long to
//! wait. Failures never end the loop: each is logged as what happened, at which step, and the fix, and
//! retried after a back-off.

use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretString};
use strato_agent_wire::{DEFAULT_HEARTBEAT_SECS, Report};

use crate::backoff;
use crate::ports::{CallError, Cluster, ControlPlane, CredentialStore};
use crate::report;

/// What a turn did (for the log and the tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Registered with the token; the credential is kept (and stored unless `stored` is false).
    Registered { stored: bool },
    /// A heartbeat was delivered; the control plane's view of the cluster's health.
    Reported { health: String },
    /// The control plane refused the token or credential.
    Refused,
    /// The control plane asked to slow down.
    Throttled,
    /// The control plane could not be reached (or failed).
    Unreachable,
    /// The control plane rejected the report.
    Rejected,
    /// The Secret holds neither a credential nor a registration token, or could not be read.
    NoCredential,
    /// The cluster's API could not be read.
    ClusterUnreadable,
}

/// The result of one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub outcome: Outcome,
    /// How long to wait before the next turn.
    pub wait: Duration,
}

/// Settings of the decisions.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Ask for a new credential after using one this long.
    pub rotate_every: Duration,
    pub agent_version: String,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            rotate_every: Duration::from_secs(30 * 24 * 3600),
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// Logs a failure as what happened, the step it happened at, and how to fix it. Never a token.
fn explain(what: &str, step: &str, fix: &str) {
    tracing::warn!(what, step, fix, "strato-agent could not complete a step");
}

pub struct Agent<C, P, S> {
    cluster: C,
    plane: P,
    store: S,
    policy: Policy,
    /// Draws in [0, 1) for the jitter (a seeded or fixed source in tests).
    unit: Box<dyn FnMut() -> f64 + Send>,
    credential: Option<SecretString>,
    /// When the credential in use was obtained (for rotation).
    credential_since: Option<Instant>,
    /// The credential was not yet written to the Secret.
    unsaved: bool,
    /// The last credential the control plane refused: not to be reused from the Secret.
    refused: Option<SecretString>,
    interval_secs: u64,
    failures: u32,
    /// Reports not delivered since the last delivered one (the only thing kept of them: each turn observes
    /// the cluster afresh, so the latest summary is the one buffered report).
    missed: u32,
}

impl<C: Cluster, P: ControlPlane, S: CredentialStore> Agent<C, P, S> {
    pub fn new(cluster: C, plane: P, store: S, policy: Policy, unit: Box<dyn FnMut() -> f64 + Send>) -> Self {
        Agent {
            cluster,
            plane,
            store,
            policy,
            unit,
            credential: None,
            credential_since: None,
            unsaved: false,
            refused: None,
            interval_secs: DEFAULT_HEARTBEAT_SECS,
            failures: 0,
            missed: 0,
        }
    }

    pub fn missed_reports(&self) -> u32 {
        self.missed
    }

    fn retry(&mut self, outcome: Outcome) -> Turn {
        self.failures = self.failures.saturating_add(1);
        let unit = (self.unit)();
        Turn {
            outcome,
            wait: backoff::retry_wait(self.failures, unit),
        }
    }

    /// A report that was built but not delivered.
    fn missed_one(&mut self) {
        self.missed = self.missed.saturating_add(1);
    }

    fn delivered(&mut self, interval_secs: u64, outcome: Outcome) -> Turn {
        self.failures = 0;
        self.missed = 0;
        self.interval_secs = interval_secs;
        let unit = (self.unit)();
        Turn {
            outcome,
            wait: backoff::heartbeat_wait(interval_secs, unit),
        }
    }

    /// The control plane's answer to a failed call, as the next turn's wait.
    fn call_failed(&mut self, err: CallError, step: &str) -> Turn {
        self.missed_one();
        match err {
            CallError::Refused => {
                if step == "register" {
                    explain(
                        "the control plane refused the registration token (it is good once and expires)",
                        step,
                        "re-run the cluster's configure step: it installs a new registration token in the \
                         agent's Secret, which the agent reads on its next attempt",
                    );
                } else {
                    explain(
                        "the control plane refused the agent's credential (revoked, or the cluster was deleted)",
                        step,
                        "re-run the cluster's configure step to install a new registration token; the agent \
                         registers again with it on its next attempt",
                    );
                    // Not reused from the Secret: the next turn registers with the token found there.
                    self.refused = self.credential.take();
                }
                self.retry(Outcome::Refused)
            }
            CallError::TooMany { retry_after } => {
                let wait = retry_after.unwrap_or(Duration::from_secs(self.interval_secs));
                tracing::info!(
                    step,
                    wait_secs = wait.as_secs(),
                    "the control plane asked to slow down"
                );
                Turn {
                    outcome: Outcome::Throttled,
                    wait,
                }
            }
            CallError::Unreachable(why) => {
                explain(
                    &format!("the control plane did not answer: {why}"),
                    step,
                    "check that the cluster can reach STRATO_API_URL over HTTPS (egress, DNS, proxy); the agent \
                     keeps retrying and reports how many reports were missed",
                );
                self.retry(Outcome::Unreachable)
            }
            CallError::Rejected { status, detail } => {
                explain(
                    &format!("the control plane rejected the report with {status}: {detail}"),
                    step,
                    "update the agent to the version the control plane expects (re-run the configure step)",
                );
                self.retry(Outcome::Rejected)
            }
        }
    }

    fn same_as_refused(&self, credential: &SecretString) -> bool {
        self.refused
            .as_ref()
            .is_some_and(|r| r.expose_secret() == credential.expose_secret())
    }

    /// One turn. `now` decides whether the credential is due for rotation.
    pub async fn turn(&mut self, now: Instant) -> Turn {
        let observation = match self.cluster.observe().await {
            Ok(o) => o,
            Err(e) => {
                explain(
                    &format!("the cluster's API could not be read: {e}"),
                    "observe",
                    "check the agent's RBAC (agent/deploy/agent.yaml) and that the API server is up",
                );
                return self.retry(Outcome::ClusterUnreadable);
            }
        };
        let report = report::build(observation, &self.policy.agent_version, self.missed);
        if self.credential.is_none() {
            let stored = match self.store.load().await {
                Ok(s) => s,
                Err(e) => {
                    explain(
                        &format!("the agent's Secret could not be read: {e}"),
                        "load credential",
                        "check that the Secret named by STRATO_AGENT_SECRET exists in the agent's namespace and \
                         that the agent's Role allows `get` on it",
                    );
                    self.missed_one();
                    return self.retry(Outcome::NoCredential);
                }
            };
            match (
                stored.credential.filter(|c| !self.same_as_refused(c)),
                stored.registration_token,
            ) {
                (Some(credential), _) => {
                    self.credential = Some(credential);
                    self.credential_since = Some(now);
                }
                (None, Some(token)) => return self.register(&token, &report, now).await,
                (None, None) => {
                    explain(
                        "the agent's Secret holds no usable credential (none, or the one the control plane \
                         refused) and no registration token",
                        "load credential",
                        "re-run the cluster's configure step: it writes a registration token into the Secret",
                    );
                    self.missed_one();
                    return self.retry(Outcome::NoCredential);
                }
            }
        }
        if self.unsaved {
            self.save().await;
        }
        if self
            .credential_since
            .is_some_and(|since| now.duration_since(since) >= self.policy.rotate_every)
            && let Some(turn) = self.rotate(now).await
        {
            return turn;
        }
        self.heartbeat(&report).await
    }

    async fn register(&mut self, token: &SecretString, report: &Report, now: Instant) -> Turn {
        match self.plane.register(token, report).await {
            Ok(registered) => {
                tracing::info!(cluster_id = %registered.cluster_id, "registered with the control plane");
                self.credential = Some(SecretString::from(registered.credential));
                self.credential_since = Some(now);
                self.refused = None;
                self.unsaved = true;
                let stored = self.save().await;
                self.delivered(registered.heartbeat_secs, Outcome::Registered { stored })
            }
            Err(e) => self.call_failed(e, "register"),
        }
    }

    /// Writes the credential in use to the Secret; on failure keeps it in memory and tries again next turn.
    async fn save(&mut self) -> bool {
        let Some(credential) = &self.credential else {
            return false;
        };
        match self.store.save_credential(credential).await {
            Ok(()) => {
                self.unsaved = false;
                true
            }
            Err(e) => {
                explain(
                    &format!("the credential could not be written to the agent's Secret: {e}"),
                    "store credential",
                    "check that the agent's Role allows `patch` on its Secret; the agent keeps the credential in \
                     memory and retries, but a restart before then needs a new registration token",
                );
                false
            }
        }
    }

    /// Asks for a new credential and keeps it only once stored (the old one works until the new one is
    /// first used). `Some` when the turn ends here (the credential was refused).
    async fn rotate(&mut self, now: Instant) -> Option<Turn> {
        let current = self.credential.clone()?;
        match self.plane.rotate(&current).await {
            Ok(rotated) => {
                let fresh = SecretString::from(rotated.credential);
                match self.store.save_credential(&fresh).await {
                    Ok(()) => {
                        tracing::info!("rotated the agent's credential");
                        self.credential = Some(fresh);
                        self.credential_since = Some(now);
                    }
                    Err(e) => explain(
                        &format!("the rotated credential could not be written to the agent's Secret: {e}"),
                        "rotate credential",
                        "check that the agent's Role allows `patch` on its Secret; the agent keeps using its \
                         current credential and rotates again later",
                    ),
                }
                None
            }
            Err(CallError::Refused) => Some(self.call_failed(CallError::Refused, "rotate credential")),
            Err(e) => {
                // The current credential still works: rotation waits for a later turn.
                tracing::info!(?e, "credential rotation postponed");
                None
            }
        }
    }

    async fn heartbeat(&mut self, report: &Report) -> Turn {
        let Some(credential) = self.credential.clone() else {
            return self.retry(Outcome::NoCredential);
        };
        match self.plane.heartbeat(&credential, report).await {
            Ok(ack) => {
                let health = ack.health.clone();
                self.delivered(ack.heartbeat_secs, Outcome::Reported { health })
            }
            Err(e) => self.call_failed(e, "heartbeat"),
        }
    }
}
