//! The cluster lifecycle as a table. Each row is an allowed transition; anything not in the table is a typed
//! error. [`crate::model::Cluster::transition`] is the only way a cluster changes state, and it checks here.
//! (What a transition sets in motion is decided by whoever asked for it: the dispatcher starts the runner,
//! the status function records outputs or errors; no caller acted on a per-row action, so the table has none.)

use crate::model::ClusterState::{self, *};

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
