//! A published template version's standing in the catalog, set by the platform operator, and what it lets a
//! cluster do. A version's content never changes; its standing does:
//!
//! - `active`: every use.
//! - `deprecated`: new clusters cannot use it; clusters already on it keep working (updates, deletes, drift
//!   checks) and a cluster may still move to it (an operator deprecates a version to steer new work to a newer
//!   one, not to break a fleet mid-upgrade).
//! - `yanked` (with a reason): new clusters cannot use it and no cluster may move to it; clusters already on it
//!   keep running (their reads show the reason) so their owners can move off it on their own schedule.

use serde::{Deserialize, Serialize};

/// Active, deprecated or yanked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    #[default]
    Active,
    Deprecated,
    Yanked,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Deprecated => "deprecated",
            Self::Yanked => "yanked",
        }
    }

    /// Parses what [`Self::as_str`] writes; anything else (an item written before standings existed) is active.
    pub fn parse(s: &str) -> Self {
        match s {
            "deprecated" => Self::Deprecated,
            "yanked" => Self::Yanked,
            _ => Self::Active,
        }
    }
}

/// A version's standing, who set it, when, and (for a yank) why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TemplateStatus {
    pub standing: Standing,
    /// The yank's reason (required for a yank; optional note for a deprecation).
    pub reason: Option<String>,
    /// The operator's `sub` that set the standing.
    pub by: Option<String>,
    /// RFC 3339, when it was set.
    pub at: Option<String>,
}

/// What a request wants to do with a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A new cluster on it.
    Create,
    /// An existing cluster moving to it from another version.
    MoveTo,
    /// A cluster already on it changing anything else (variables, settings) or being deleted.
    Stay,
}

/// Why a use is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub standing: Standing,
    pub reason: Option<String>,
}

impl TemplateStatus {
    pub fn active() -> Self {
        Self::default()
    }

    /// Whether `use_` is allowed on a version of this standing.
    pub fn allows(&self, use_: Use) -> Result<(), Refused> {
        let ok = match (self.standing, use_) {
            (Standing::Active, _) | (_, Use::Stay) => true,
            (Standing::Deprecated, Use::MoveTo) => true,
            (Standing::Deprecated, Use::Create) | (Standing::Yanked, _) => false,
        };
        if ok {
            Ok(())
        } else {
            Err(Refused {
                standing: self.standing,
                reason: self.reason.clone(),
            })
        }
    }
}

/// How an operator may change a version's standing: a yank is final (a version yanked for a defect must not
/// come back by a mistaken deprecate); deprecate and undeprecate (`active`) move freely otherwise.
pub fn may_become(from: Standing, to: Standing) -> Result<(), &'static str> {
    match (from, to) {
        (Standing::Yanked, Standing::Yanked) => Ok(()),
        (Standing::Yanked, _) => Err("the version is yanked; a yank is final (publish a new version)"),
        _ => Ok(()),
    }
}

/// The newest version (by dotted numeric order) a new cluster may use, from `(version, status)` pairs.
pub fn newest_usable<'a>(
    versions: impl IntoIterator<Item = (&'a str, &'a TemplateStatus)>,
) -> Option<&'a str> {
    versions
        .into_iter()
        .filter(|(_, s)| s.allows(Use::Create).is_ok())
        .max_by_key(|(v, _)| version_key(v))
        .map(|(v, _)| v)
}

/// A dotted version's numeric parts (`1.10.0` after `1.9.0`); a part that is no number counts as 0.
pub fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(standing: Standing) -> TemplateStatus {
        TemplateStatus {
            standing,
            reason: (standing == Standing::Yanked).then(|| "CVE-1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_deprecated_version_refuses_new_clusters_but_not_moves_or_stays() {
        let d = st(Standing::Deprecated);
        assert!(d.allows(Use::Create).is_err());
        assert!(d.allows(Use::MoveTo).is_ok());
        assert!(d.allows(Use::Stay).is_ok());
    }

    #[test]
    fn a_yanked_version_refuses_creates_and_moves_and_keeps_its_clusters() {
        let y = st(Standing::Yanked);
        let refused = y.allows(Use::Create).unwrap_err();
        assert_eq!(refused.reason.as_deref(), Some("CVE-1"));
        assert!(y.allows(Use::MoveTo).is_err());
        assert!(y.allows(Use::Stay).is_ok());
    }

    #[test]
    fn an_active_version_allows_everything() {
        for u in [Use::Create, Use::MoveTo, Use::Stay] {
            assert!(TemplateStatus::active().allows(u).is_ok());
        }
    }

    #[test]
    fn a_yank_is_final() {
        assert!(may_become(Standing::Yanked, Standing::Active).is_err());
        assert!(may_become(Standing::Yanked, Standing::Deprecated).is_err());
        assert!(may_become(Standing::Deprecated, Standing::Active).is_ok());
        assert!(may_become(Standing::Deprecated, Standing::Yanked).is_ok());
    }

    #[test]
    fn the_newest_usable_version_skips_deprecated_and_yanked_ones_and_orders_numerically() {
        let (a, d, y) = (
            st(Standing::Active),
            st(Standing::Deprecated),
            st(Standing::Yanked),
        );
        let all = [("1.9.0", &a), ("1.10.0", &a), ("2.0.0", &d), ("2.1.0", &y)];
        assert_eq!(newest_usable(all), Some("1.10.0"));
        assert_eq!(newest_usable([("1.0.0", &d)]), None);
        assert_eq!(Standing::parse(""), Standing::Active);
        assert_eq!(Standing::parse(Standing::Yanked.as_str()), Standing::Yanked);
    }
}
