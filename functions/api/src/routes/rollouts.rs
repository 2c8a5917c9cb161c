//! The rollout routes (entries of [`super::ROUTES`]): a tenant's over its own fleet (`/v1/rollouts…`), and
//! the platform operator's across tenants (`/v1/admin/rollouts…`, [`Access::Platform`]), which are the same
//! calls.

use axum::routing::on;

use super::{ADMIN, READ};
use crate::rollouts::handlers as h;
use crate::route::{Access, Body, Doc, Endpoint, Route, doc};

const START: &str = "Selects the fleet on `template` that is not on `to_version` yet (a tenant's own clusters; \
the operator's across tenants, narrowed by `selector.tenants`), at most 200 clusters, each claimed by this \
rollout while it runs (a cluster in another active rollout: 409 naming it). `preview` plans every selected \
cluster on `to_version` as `POST /v1/clusters/{id}/plan` would, applying nothing; `apply` upgrades them in \
`waves`, each cluster planned first: a failure, a policy deny, a replacement not in `stop.allow_replace`, a \
destroy without `stop.allow_destroy` or a monthly rise above `stop.max_monthly_delta` pauses the rollout with \
the reason. Each update is an ordinary update operation (locks, queueing, retries, approvals).";

const STEER: &str = "`pause` stops anything new from starting (runs in flight end and are recorded); \
`resume` goes on (`skip_failed: true` leaves the wave's failed and held clusters out, else they are planned \
again); `abort` ends it, leaving upgraded clusters upgraded and the rest untouched. On an ended rollout: 409.";

const MEMBERS: &[(&str, &str)] = &[
    ("limit", "Members per page, 1-200 (default 50)"),
    ("next", "The `next` of the previous page"),
];

macro_rules! rollout_routes {
    ($create:ident, $list:ident, $get:ident, $pause:ident, $resume:ident, $abort:ident,
     $prefix:literal, $write:expr, $read:expr, $audit:literal,
     [$e_create:ident, $e_list:ident, $e_get:ident, $e_pause:ident, $e_resume:ident, $e_abort:ident],
     [$h_create:path, $h_list:path, $h_get:path, $h_pause:path, $h_resume:path, $h_abort:path]) => {
        pub(super) const $create: Route = Route {
            endpoint: Endpoint::$e_create,
            method: "POST",
            path: concat!($prefix, "/rollouts"),
            access: $write,
            body: Body::Limited,
            handler: |m| on(m, $h_create),
            audit: Some(concat!($audit, "rollout.start")),
            doc: Doc {
                description: Some(START),
                ..doc(
                    "Start a rollout of a template version (preview or apply)",
                    Some("RolloutRequest"),
                    &[(202, "Rollout", "Recorded; its first runs are queued")],
                    &[400, 409, 422, 429],
                )
            },
        };
        pub(super) const $list: Route = Route {
            endpoint: Endpoint::$e_list,
            method: "GET",
            path: concat!($prefix, "/rollouts"),
            access: $read,
            body: Body::Limited,
            handler: |m| on(m, $h_list),
            audit: None,
            doc: doc(
                "List rollouts, newest first",
                None,
                &[(200, "RolloutList", "The rollouts")],
                &[],
            ),
        };
        pub(super) const $get: Route = Route {
            endpoint: Endpoint::$e_get,
            method: "GET",
            path: concat!($prefix, "/rollouts/{id}"),
            access: $read,
            body: Body::Limited,
            handler: |m| on(m, $h_get),
            audit: None,
            doc: Doc {
                query: MEMBERS,
                ..doc(
                    "Read a rollout: its phase, fleet summary and members",
                    None,
                    &[(200, "Rollout", "The rollout")],
                    &[400, 404],
                )
            },
        };
        pub(super) const $pause: Route = Route {
            endpoint: Endpoint::$e_pause,
            method: "POST",
            path: concat!($prefix, "/rollouts/{id}/pause"),
            access: $write,
            body: Body::Limited,
            handler: |m| on(m, $h_pause),
            audit: Some(concat!($audit, "rollout.pause")),
            doc: Doc {
                description: Some(STEER),
                ..doc(
                    "Pause a rollout",
                    None,
                    &[(200, "Rollout", "Paused")],
                    &[404, 409],
                )
            },
        };
        pub(super) const $resume: Route = Route {
            endpoint: Endpoint::$e_resume,
            method: "POST",
            path: concat!($prefix, "/rollouts/{id}/resume"),
            access: $write,
            body: Body::Limited,
            handler: |m| on(m, $h_resume),
            audit: Some(concat!($audit, "rollout.resume")),
            doc: Doc {
                description: Some(STEER),
                ..doc(
                    "Resume a paused rollout",
                    Some("RolloutResumeRequest"),
                    &[(200, "Rollout", "Running again")],
                    &[400, 404, 409],
                )
            },
        };
        pub(super) const $abort: Route = Route {
            endpoint: Endpoint::$e_abort,
            method: "POST",
            path: concat!($prefix, "/rollouts/{id}/abort"),
            access: $write,
            body: Body::Limited,
            handler: |m| on(m, $h_abort),
            audit: Some(concat!($audit, "rollout.abort")),
            doc: Doc {
                description: Some(STEER),
                ..doc(
                    "Abort a rollout",
                    None,
                    &[(200, "Rollout", "Aborted")],
                    &[404, 409],
                )
            },
        };
    };
}

rollout_routes!(
    CREATE,
    LIST,
    GET,
    PAUSE,
    RESUME,
    ABORT,
    "/v1",
    ADMIN,
    READ,
    "",
    [
        CreateRollout,
        ListRollouts,
        GetRollout,
        PauseRollout,
        ResumeRollout,
        AbortRollout
    ],
    [h::start, h::list, h::get, h::pause, h::resume, h::abort]
);

rollout_routes!(
    ADMIN_CREATE,
    ADMIN_LIST,
    ADMIN_GET,
    ADMIN_PAUSE,
    ADMIN_RESUME,
    ADMIN_ABORT,
    "/v1/admin",
    Access::Platform,
    Access::Platform,
    "admin.",
    [
        AdminCreateRollout,
        AdminListRollouts,
        AdminGetRollout,
        AdminPauseRollout,
        AdminResumeRollout,
        AdminAbortRollout
    ],
    [
        h::admin_start,
        h::admin_list,
        h::admin_get,
        h::admin_pause,
        h::admin_resume,
        h::admin_abort
    ]
);
