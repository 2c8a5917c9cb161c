//! The cluster lifecycle as a table. Each row is an allowed transition; anything not in the table is a typed
//! error. [`crate::model::Cluster::transition`] is the only way a cluster changes state, and it checks here.
//! (What a transition sets in motion is decided by whoever asked for it: the dispatcher starts the runner,
//! the status function records outputs or errors; no caller acted on a per-row action, so the table has none.)

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use ClusterState::*;

/// Where a cluster is in its life; the state machine's table of transitions says which moves exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClusterState {
    Pending,
    Provisioning,
    Configuring,
    Active,
    Updating,
    Deleting,
    Deleted,
    Failed,
}

impl ClusterState {
    pub const ALL: [ClusterState; 8] = [
        ClusterState::Pending,
        ClusterState::Provisioning,
        ClusterState::Configuring,
        ClusterState::Active,
        ClusterState::Updating,
        ClusterState::Deleting,
        ClusterState::Deleted,
        ClusterState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Pending => "PENDING",
            ClusterState::Provisioning => "PROVISIONING",
            ClusterState::Configuring => "CONFIGURING",
            ClusterState::Active => "ACTIVE",
            ClusterState::Updating => "UPDATING",
            ClusterState::Deleting => "DELETING",
            ClusterState::Deleted => "DELETED",
            ClusterState::Failed => "FAILED",
        }
    }

    pub fn is_terminal(self) -> bool {
        self == ClusterState::Deleted
    }
}

impl fmt::Display for ClusterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClusterState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ClusterState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("unknown cluster state '{s}'"))
    }
}

pub const TRANSITIONS: &[(ClusterState, ClusterState)] = &[
    (Pending, Provisioning),
    (Provisioning, Configuring),
    (Configuring, Active),
    (Active, Updating),
    (Updating, Active),
    (Active, Deleting),
    (Deleting, Deleted),
    (Pending, Failed),
    (Provisioning, Failed),
    (Configuring, Failed),
    (Active, Failed),
    (Updating, Failed),
    (Deleting, Failed),
    (Failed, Provisioning),
    (Failed, Deleting),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {from} cluster cannot become {to}; from {from} it can become: {}", allowed_list(*.from))]
pub struct TransitionError {
    pub from: ClusterState,
    pub to: ClusterState,
}

fn allowed_list(from: ClusterState) -> String {
    let names: Vec<&str> = allowed_from(from).map(ClusterState::as_str).collect();
    if names.is_empty() {
        "nothing (terminal state)".to_owned()
    } else {
        names.join(", ")
    }
}

/// The states reachable from `from` in one transition.
pub fn allowed_from(from: ClusterState) -> impl Iterator<Item = ClusterState> {
    TRANSITIONS
        .iter()
        .filter(move |(f, _)| *f == from)
        .map(|(_, to)| *to)
}

/// Checks a transition against the table.
pub fn check(from: ClusterState, to: ClusterState) -> Result<(), TransitionError> {
    if TRANSITIONS.contains(&(from, to)) {
        Ok(())
    } else {
        Err(TransitionError { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written out independently of the table, from the lifecycle in the design card.
    fn expected(from: ClusterState, to: ClusterState) -> bool {
        match (from, to) {
            (Pending, Provisioning)
            | (Provisioning, Configuring)
            | (Configuring, Active)
            | (Active, Updating)
            | (Updating, Active)
            | (Active, Deleting)
            | (Failed, Deleting)
            | (Deleting, Deleted)
            | (Failed, Provisioning) => true,
            (f, Failed) => f != Failed && f != Deleted,
            _ => false,
        }
    }

    #[test]
    fn every_pair() {
        let mut allowed = 0;
        for from in ClusterState::ALL {
            for to in ClusterState::ALL {
                match (check(from, to), expected(from, to)) {
                    (Ok(()), true) => allowed += 1,
                    (Err(err), false) => {
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
        for (i, (f, t)) in TRANSITIONS.iter().enumerate() {
            assert!(
                !TRANSITIONS[i + 1..].iter().any(|(f2, t2)| f2 == f && t2 == t),
                "{f} -> {t}"
            );
        }
    }

    #[test]
    fn deleted_is_terminal_and_says_so() {
        assert_eq!(allowed_from(Deleted).count(), 0);
        let err = check(Deleted, Provisioning).unwrap_err();
        assert!(err.to_string().contains("terminal"), "{err}");
        let err = check(Pending, Active).unwrap_err();
        assert!(err.to_string().contains("PROVISIONING, FAILED"), "{err}");
    }

    #[test]
    fn no_self_loops() {
        for s in ClusterState::ALL {
            assert!(check(s, s).is_err());
        }
    }
}
