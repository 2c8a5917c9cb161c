//! In-memory ports for the decision tests: each records what it was asked and answers as scripted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use secrecy::{ExposeSecret, SecretString};
use strato_agent_wire::{Ack, Registered, Report, Rotated};

use crate::AgentError;
use crate::ports::{CallError, Cluster, ControlPlane, CredentialStore, Observation, Stored};

#[derive(Clone)]
pub struct FakeCluster {
    pub observation: Arc<Mutex<Result<Observation, String>>>,
}

impl FakeCluster {
    pub fn with(observation: Observation) -> Self {
        FakeCluster {
            observation: Arc::new(Mutex::new(Ok(observation))),
        }
    }
}

impl Cluster for FakeCluster {
    async fn observe(&self) -> Result<Observation, AgentError> {
        self.observation.lock().unwrap().clone().map_err(AgentError::Kube)
    }
}

/// A call the fake control plane received: the endpoint, the bearer it carried, the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub endpoint: &'static str,
    pub bearer: String,
    pub report: Option<Report>,
}

/// Answers each call from its script in order; an empty script answers as a healthy control plane.
#[derive(Clone, Default)]
pub struct FakePlane {
    pub calls: Arc<Mutex<Vec<Call>>>,
    pub script: Arc<Mutex<VecDeque<Result<(), CallError>>>>,
    pub heartbeat_secs: u64,
}

impl FakePlane {
    pub fn new() -> Self {
        FakePlane {
            heartbeat_secs: 30,
            ..Default::default()
        }
    }

    pub fn then(&self, answer: Result<(), CallError>) -> &Self {
        self.script.lock().unwrap().push_back(answer);
        self
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn answer(
        &self,
        endpoint: &'static str,
        bearer: &SecretString,
        report: Option<&Report>,
    ) -> Result<(), CallError> {
        self.calls.lock().unwrap().push(Call {
            endpoint,
            bearer: bearer.expose_secret().to_string(),
            report: report.cloned(),
        });
        self.script.lock().unwrap().pop_front().unwrap_or(Ok(()))
    }

    fn count(&self, endpoint: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.endpoint == endpoint)
            .count()
    }
}

impl ControlPlane for FakePlane {
    async fn register(&self, token: &SecretString, report: &Report) -> Result<Registered, CallError> {
        self.answer("register", token, Some(report))?;
        Ok(Registered {
            cluster_id: "cl-1".into(),
            credential: format!("cl-1.secret{}", self.count("register")),
            heartbeat_secs: self.heartbeat_secs,
        })
    }

    async fn heartbeat(&self, credential: &SecretString, report: &Report) -> Result<Ack, CallError> {
        self.answer("heartbeat", credential, Some(report))?;
        Ok(Ack {
            cluster_id: "cl-1".into(),
            heartbeat_secs: self.heartbeat_secs,
            health: "healthy".into(),
        })
    }

    async fn rotate(&self, credential: &SecretString) -> Result<Rotated, CallError> {
        self.answer("rotate", credential, None)?;
        Ok(Rotated {
            credential: format!("cl-1.rotated{}", self.count("rotate")),
        })
    }
}

#[derive(Clone, Default)]
pub struct FakeStore {
    pub token: Arc<Mutex<Option<String>>>,
    pub credential: Arc<Mutex<Option<String>>>,
    /// Writes fail while set.
    pub broken: Arc<Mutex<bool>>,
    pub saves: Arc<Mutex<u32>>,
}

impl FakeStore {
    pub fn with_token(token: &str) -> Self {
        let s = FakeStore::default();
        *s.token.lock().unwrap() = Some(token.into());
        s
    }

    pub fn credential(&self) -> Option<String> {
        self.credential.lock().unwrap().clone()
    }
}

impl CredentialStore for FakeStore {
    async fn load(&self) -> Result<Stored, AgentError> {
        let secret = |v: &Option<String>| v.clone().map(SecretString::from);
        Ok(Stored {
            registration_token: secret(&self.token.lock().unwrap()),
            credential: secret(&self.credential.lock().unwrap()),
        })
    }

    async fn save_credential(&self, credential: &SecretString) -> Result<(), AgentError> {
        if *self.broken.lock().unwrap() {
            return Err(AgentError::Secret {
                namespace: "strato-system".into(),
                name: "strato-agent".into(),
                problem: "forbidden".into(),
            });
        }
        *self.saves.lock().unwrap() += 1;
        *self.credential.lock().unwrap() = Some(credential.expose_secret().to_string());
        Ok(())
    }
}
