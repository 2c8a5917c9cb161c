//! The cluster lifecycle as a table. Each row is an allowed transition and the action it triggers;
//! anything not in the table is a typed error.

use serde::{Deserialize, Serialize};

use crate::model::ClusterState::{self, *};

/// The side effect a transition sets in motion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run the template's create operation (init → plan → apply → output).
    RunCreate,
    /// Apply succeeded: install/await the cluster agent or verify outputs.
    ConfigureCluster,
    /// The cluster is usable: record outputs, release the lock.
    MarkReady,
    /// Apply changed variables (or a newer template version).
    RunUpdate,
    /// The update applied: back to ACTIVE, release the lock.
    CompleteUpdate,
    /// Destroy everything the cluster's state holds.
    RunDestroy,
    /// Destroy finished: archive the cluster record, release the lock.
    Finalize,
    /// Something failed: store the user-facing error, release the lock.
    RecordFailure,
    /// A FAILED cluster is provisioned again from its current state.
    RetryCreate,
}

pub const TRANSITIONS: &[(ClusterState, ClusterState, Action)] = &[
    (Pending, Provisioning, Action::RunCreate),
    (Provisioning, Configuring, Action::ConfigureCluster),
    (Configuring, Active, Action::MarkReady),
    (Active, Updating, Action::RunUpdate),
    (Updating, Active, Action::CompleteUpdate),
    (Active, Deleting, Action::RunDestroy),
    (Deleting, Deleted, Action::Finalize),
    (Pending, Failed, Action::RecordFailure),
    (Provisioning, Failed, Action::RecordFailure),
    (Configuring, Failed, Action::RecordFailure),
    (Active, Failed, Action::RecordFailure),
    (Updating, Failed, Action::RecordFailure),
    (Deleting, Failed, Action::RecordFailure),
    (Failed, Provisioning, Action::RetryCreate),
    (Failed, Deleting, Action::RunDestroy),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {from} cluster cannot become {to}; from {from} it can become: {}", allowed_list(*.from))]
pub struct TransitionError {
    pub from: ClusterState,
    pub to: ClusterState,
}

fn allowed_list(from: ClusterState) -> String {
    let names: Vec<&str> = allowed_from(from).map(|(to, _)| to.as_str()).collect();
    if names.is_empty() {
        "nothing (terminal state)".to_owned()
    } else {
        names.join(", ")
    }
}

/// The states reachable from `from`, with the action each triggers.
pub fn allowed_from(from: ClusterState) -> impl Iterator<Item = (ClusterState, Action)> {
    TRANSITIONS
        .iter()
        .filter(move |(f, _, _)| *f == from)
        .map(|(_, to, a)| (*to, *a))
}

/// Checks a transition against the table and returns the action it triggers.
pub fn transition(from: ClusterState, to: ClusterState) -> Result<Action, TransitionError> {
    TRANSITIONS
        .iter()
        .find(|(f, t, _)| *f == from && *t == to)
        .map(|(_, _, a)| *a)
        .ok_or(TransitionError { from, to })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written out independently of the table, from the lifecycle in the design card.
    fn expected(from: ClusterState, to: ClusterState) -> Option<Action> {
        match (from, to) {
            (Pending, Provisioning) => Some(Action::RunCreate),
            (Provisioning, Configuring) => Some(Action::ConfigureCluster),
            (Configuring, Active) => Some(Action::MarkReady),
            (Active, Updating) => Some(Action::RunUpdate),
            (Updating, Active) => Some(Action::CompleteUpdate),
            (Active, Deleting) | (Failed, Deleting) => Some(Action::RunDestroy),
            (Deleting, Deleted) => Some(Action::Finalize),
            (Failed, Provisioning) => Some(Action::RetryCreate),
            (f, Failed) if f != Failed && f != Deleted => Some(Action::RecordFailure),
            _ => None,
        }
    }

    #[test]
    fn every_pair() {
        let mut allowed = 0;
        for from in ClusterState::ALL {
            for to in ClusterState::ALL {
                match (transition(from, to), expected(from, to)) {
                    (Ok(a), Some(e)) => {
                        assert_eq!(a, e, "{from} -> {to}");
                        allowed += 1;
                    }
                    (Err(err), None) => {
                        assert_eq!(err, TransitionError { from, to });
                        assert!(err.to_string().contains(from.as_str()));
                    }
                    (got, want) => panic!("{from} -> {to}: table says {got:?}, lifecycle says {want:?}"),
                }
            }
        }
        assert_eq!(allowed, TRANSITIONS.len());
    }

    #[test]
    fn table_has_no_duplicate_rows() {
        for (i, (f, t, _)) in TRANSITIONS.iter().enumerate() {
            assert!(
                !TRANSITIONS[i + 1..].iter().any(|(f2, t2, _)| f2 == f && t2 == t),
                "{f} -> {t}"
            );
        }
    }

    #[test]
    fn deleted_is_terminal_and_says_so() {
        assert_eq!(allowed_from(Deleted).count(), 0);
        let err = transition(Deleted, Provisioning).unwrap_err();
        assert!(err.to_string().contains("terminal"), "{err}");
        let err = transition(Pending, Active).unwrap_err();
        assert!(err.to_string().contains("PROVISIONING, FAILED"), "{err}");
    }

    #[test]
    fn no_self_loops() {
        for s in ClusterState::ALL {
            assert!(transition(s, s).is_err());
        }
    }
}
