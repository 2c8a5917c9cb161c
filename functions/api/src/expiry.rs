//! A cluster's expiry in requests: `"expires_at": "<RFC 3339>"` or `"ttl_hours": n` on create and PATCH
//! (one or the other); PATCH `"expires_at": null` clears it. Bounded by the tenant's maximum
//! (`strato_domain::expiry`); every problem is a 422 naming the field.

use strato_domain::expiry::{ExpiryChange, ExpiryRequest, resolve};
use strato_domain::validate::FieldError;
use time::OffsetDateTime;

use crate::error::ApiError;
use crate::requests::Field;

const AT: &str = "an RFC 3339 time to come, e.g. 2026-12-01T18:00:00Z";
const TTL: &str = "whole hours from now, at least 1";

/// Reads the two fields; problems of shape go to `errors`. `null` for `ttl_hours` means nothing.
pub(crate) fn parse(
    expires_at: Field<String>,
    ttl_hours: Field<u64>,
    errors: &mut Vec<FieldError>,
) -> ExpiryRequest {
    let expires_at = match expires_at {
        Field::Missing => None,
        Field::Null => Some(None),
        Field::Ok(s) => match strato_domain::ts::parse(&s) {
            Some(t) => Some(Some(t)),
            None => {
                errors.push(ApiError::field("expires_at", "is not an RFC 3339 time", AT));
                None
            }
        },
        Field::Bad(_) => {
            errors.push(ApiError::field("expires_at", "must be a string or null", AT));
            None
        }
    };
    let ttl_hours = match ttl_hours {
        Field::Missing | Field::Null => None,
        Field::Ok(h) => Some(h),
        Field::Bad(_) => {
            errors.push(ApiError::field("ttl_hours", "must be a whole number", TTL));
            None
        }
    };
    ExpiryRequest {
        expires_at,
        ttl_hours,
    }
}

/// Whether the request mentions expiry at all.
pub(crate) fn asked(req: &ExpiryRequest) -> bool {
    req.expires_at.is_some() || req.ttl_hours.is_some()
}

/// The change `req` makes at `now` under the tenant's maximum `max` (hours).
pub(crate) fn change(
    req: ExpiryRequest,
    now: OffsetDateTime,
    max: Option<u64>,
    creating: bool,
) -> Result<ExpiryChange, ApiError> {
    resolve(req, now, max, creating).map_err(|e| {
        let allowed = if e.field == "ttl_hours" { TTL } else { AT };
        ApiError::invalid(vec![ApiError::field(e.field, e.message, allowed)])
    })
}
