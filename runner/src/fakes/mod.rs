//! In-memory stand-ins for the runner's [ports](crate::ports) (feature `fakes`, and the crate's own unit
//! tests), with a scripted engine ([`FakeEngine`]): a whole run — prepare, stages, cleanup, final event —
//! in milliseconds, with no moto and no Terraform. Each fake records what the run did (events, log lines,
//! objects, secrets, role sessions, engine commands) and lets a test script failures.
//!
//! The control plane's records are the domain's [`FakeStore`](strato_fakes::FakeStore) (with its
//! conditional-write semantics), wrapped with what only the runner reads ([`FakeRunStore`]); sealing uses
//! the domain's [`FakeKeys`].

mod cloud;
mod engine;
mod kube;
mod sinks;
mod store;

pub use cloud::{FakeCloud, FakeState, Session};
pub use engine::{Call, Cmd, FakeEngine, Reply};
pub use kube::{FakeKube, KubeCall};
pub use sinks::{FakeReporter, FakeSecrets, FakeSignals, FakeSinks};
pub use store::FakeRunStore;
pub use strato_fakes::FakeKeys;

use std::sync::{Mutex, MutexGuard};

use crate::ports::Ports;

/// A panic in one test thread must not hide the state from the assertions that follow.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The runner's ports in memory.
#[derive(Debug)]
pub struct FakePorts;

impl Ports for FakePorts {
    type Store = FakeRunStore;
    type Sinks = FakeSinks;
    type Reporter = FakeReporter;
    type Secrets = FakeSecrets;
    type Keys = FakeKeys;
    type Cloud = FakeCloud;
    type Engine = FakeEngine;
    type Signals = FakeSignals;
    type Kube = FakeKube;
}
