//! Terraform state versions in the customer's own storage (an AWS target's `state_bucket`, GCS, Azure Blob,
//! Spaces, Linode Object Storage). Strato holds no credentials of that storage between runs, so a run lists
//! the versions at its end with the credentials it has, reports them (metadata only, never content), and
//! the cluster keeps the newest list; a restore is an operation of its own (`restore-state`) whose run
//! copies the chosen version back natively.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::OperationId;

/// How many versions per stage a cluster remembers (the newest): a DynamoDB item holds at most 400 KB.
pub const LISTED_VERSIONS_PER_STAGE: usize = 50;

/// One version of a stage's state object, as the storage lists it (metadata only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedStateVersion {
    /// The state object's key (S3, Azure Blob) or name (GCS).
    pub key: String,
    /// The storage's version id (S3 `VersionId`, GCS generation, Azure `VersionId`).
    pub version_id: String,
    /// RFC 3339, when the storage says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Bytes.
    pub size: i64,
    pub is_latest: bool,
}

/// A version copied back on top of its state object by a `restore-state` run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredVersion {
    pub key: String,
    pub from_version: String,
    /// The new current version holding the copy.
    pub new_version: String,
}

/// What a run found in the customer's storage at its end (in its final event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomerStateReport {
    /// Where the state is, as the tenant reads it (e.g. `Cloud Storage bucket acme-tfstate`).
    pub storage: String,
    #[serde(default)]
    pub versions: Vec<ListedStateVersion>,
    /// The version a `restore-state` run copied back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<RestoredVersion>,
}

/// The newest list of a cluster's state versions in the customer's storage, and which run listed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomerStateListing {
    pub storage: String,
    pub versions: Vec<ListedStateVersion>,
    #[serde(with = "crate::ts")]
    pub listed_at: OffsetDateTime,
    pub operation_id: OperationId,
}

impl CustomerStateListing {
    /// The list as recorded: per key the newest [`LISTED_VERSIONS_PER_STAGE`] (by listing order, which is
    /// newest first on every storage; the current version always kept).
    pub fn capped(
        storage: String,
        versions: &[ListedStateVersion],
        listed_at: OffsetDateTime,
        operation_id: OperationId,
    ) -> Self {
        Self {
            storage,
            versions: newest_per_key(versions),
            listed_at,
            operation_id,
        }
    }
}

/// Per key the newest [`LISTED_VERSIONS_PER_STAGE`] of `versions` (listed newest first), the current one
/// always kept: what a run reports and a cluster keeps.
pub fn newest_per_key(versions: &[ListedStateVersion]) -> Vec<ListedStateVersion> {
    let mut kept: Vec<ListedStateVersion> = Vec::new();
    for v in versions {
        let same_key = kept.iter().filter(|k| k.key == v.key).count();
        if v.is_latest || same_key < LISTED_VERSIONS_PER_STAGE {
            kept.push(v.clone());
        }
    }
    kept
}

/// Which version a `restore-state` operation copies back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRequest {
    pub key: String,
    pub version_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(key: &str, id: usize, latest: bool) -> ListedStateVersion {
        ListedStateVersion {
            key: key.into(),
            version_id: id.to_string(),
            last_modified: None,
            size: 1,
            is_latest: latest,
        }
    }

    #[test]
    fn the_list_keeps_the_newest_per_stage_and_always_the_current() {
        let mut all: Vec<_> = (0..60).map(|i| v("a.tfstate", i, false)).collect();
        all.push(v("a.tfstate", 99, true));
        all.push(v("b.tfstate", 1, true));
        let l = CustomerStateListing::capped("x".into(), &all, crate::ts::now(), OperationId::generate());
        let a: Vec<_> = l.versions.iter().filter(|v| v.key == "a.tfstate").collect();
        assert_eq!(a.len(), LISTED_VERSIONS_PER_STAGE + 1);
        assert_eq!(a[0].version_id, "0");
        assert!(a.iter().any(|v| v.version_id == "99" && v.is_latest));
        assert!(!a.iter().any(|v| v.version_id == "55"));
        assert_eq!(l.versions.iter().filter(|v| v.key == "b.tfstate").count(), 1);
    }
}
