//! A cluster's Terraform state versions (entries of [`super::ROUTES`]): listed live in Strato's bucket or as the
//! last run listed them in the customer's own storage, and restored at once or by a `restore-state` run.

use axum::routing::on;

use super::{ADMIN, QUEUED, READ};
use crate::handlers as h;
use crate::route::{Body, Doc, Endpoint, Route, doc};

pub(super) const LIST: Route = Route {
    endpoint: Endpoint::ListStateVersions,
    method: "GET",
    path: "/v1/clusters/{id}/state-versions",
    access: READ,
    body: Body::Limited,
    handler: |m| on(m, h::list_state_versions),
    audit: None,
    doc: doc(
        "List the Terraform state versions of a cluster",
        None,
        &[(200, "StateVersions", "Versions and past restores")],
        &[404],
    ),
};

pub(super) const RESTORE: Route = Route {
    endpoint: Endpoint::RestoreStateVersion,
    method: "POST",
    path: "/v1/clusters/{id}/state-versions/{version}/restore",
    access: ADMIN,
    body: Body::Keyed,
    handler: |m| on(m, h::restore_state_version),
    audit: Some("state.restore"),
    doc: Doc {
        description: Some(
            "In Strato's bucket the version is copied back at once (200). In the customer's own storage \
             a restore-state operation is queued (202): its run copies the version back with the \
             credentials only runs hold; the version must be among those last listed.",
        ),
        ..doc(
            "Restore a Terraform state version",
            None,
            &[(200, "StateRestoreResult", "Restored"), (202, "Accepted", QUEUED)],
            &[400, 404, 409, 422],
        )
    },
};
