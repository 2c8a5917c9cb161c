//! Request bodies as serde types. serde stops at a body's first error, and a client should learn every
//! problem at once, so each field is a [`Field`]: it takes whatever JSON it is given and keeps either the
//! typed value or the raw one; unknown members are collected (`#[serde(flatten)]`). Each request's `check`
//! then reports every missing, mistyped and unknown field with its path, and the [`JsonBody`] extractor
//! answers 400 for a body that is not a JSON object at all.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::error::ApiError;

/// One member of a request object, read leniently.
#[derive(Debug, Clone, Default)]
pub(crate) enum Field<T> {
    #[default]
    Missing,
    Null,
    Ok(T),
    /// Present but not a `T`: the raw value, for the message.
    Bad(Value),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Field::Null,
            v => match T::deserialize(&v) {
                Ok(t) => Field::Ok(t),
                Err(_) => Field::Bad(v),
            },
        })
    }
}

impl<T> Field<T> {
    /// A required string member: "is required" when absent, "must be a string" when anything else.
    pub fn required(self, path: &str, allowed: &str, errors: &mut Vec<FieldError>) -> Option<T> {
        match self {
            Field::Ok(t) => Some(t),
            Field::Missing => {
                errors.push(ApiError::field(path, "is required", allowed));
                None
            }
            Field::Null | Field::Bad(_) => {
                errors.push(ApiError::field(path, "must be a string", allowed));
                None
            }
        }
    }

    /// An optional member; `None` when absent, null or (reported) bad.
    pub fn optional(
        self,
        path: &str,
        problem: &str,
        allowed: &str,
        errors: &mut Vec<FieldError>,
    ) -> Option<T> {
        match self {
            Field::Ok(t) => Some(t),
            Field::Missing | Field::Null => None,
            Field::Bad(_) => {
                errors.push(ApiError::field(path, problem, allowed));
                None
            }
        }
    }
}

/// Members a request does not have, each reported as `<prefix><name>`.
pub(crate) fn unknown(
    other: &BTreeMap<String, Value>,
    prefix: &str,
    problem: &str,
    known: &str,
    errors: &mut Vec<FieldError>,
) {
    for k in other.keys() {
        let shown: String = k.chars().take(64).collect();
        errors.push(ApiError::field(&format!("{prefix}{shown}"), problem, known));
    }
}

/// A request body of type `T`: 400 when it is empty, not JSON or not an object. `T`'s fields are lenient,
/// so reading an object into it cannot fail on a field; the route's `check` reports those.
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let body = Bytes::from_request(req, state)
            .await
            .map_err(|e| bad(format!("the request body could not be read: {}", e.body_text())))?;
        read(&body).map(JsonBody)
    }
}

/// A JSON object body as `T` (see [`JsonBody`]).
pub(crate) fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let obj = parse_object(body)?;
    serde_json::from_value(Value::Object(obj))
        .map_err(|e| bad(format!("the body does not have the expected shape: {e}")))
}

fn bad(detail: String) -> ApiError {
    ApiError::BadRequest {
        detail,
        errors: Vec::new(),
    }
}

/// Reads the body as a JSON object; anything else is a 400 that says what is wrong and where.
pub(crate) fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(bad("the request needs a JSON object body".into()));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad("the body must be a JSON object".into())),
        // serde_json's message names the problem and its line and column.
        Err(e) => Err(bad(format!("the body is not valid JSON: {e}"))),
    }
}

/// Whether a request's body may be read as JSON: a POST, PUT or PATCH that carries a body (anything but
/// whitespace) must declare it `application/json` (parameters such as `charset` allowed) or an
/// `application/*+json` type; anything else, or no `Content-Type` at all, is a 415. A body that is not
/// declared JSON is not read as JSON, so a form post or a text upload can never create a cluster by
/// accident. A request without a body, where none is needed, is not concerned.
pub(crate) fn json_media_type(
    method: &axum::http::Method,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<(), ApiError> {
    use axum::http::Method;
    if ![Method::POST, Method::PUT, Method::PATCH].contains(method)
        || body.iter().all(u8::is_ascii_whitespace)
    {
        return Ok(());
    }
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Err(ApiError::UnsupportedMediaType { sent: None });
    };
    // Only what is printable goes back into the message.
    let raw = value.to_str().unwrap_or("(not text)");
    let essence = raw
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let json = match essence.split_once('/') {
        Some(("application", "json")) => true,
        Some(("application", sub)) => sub.len() > "+json".len() && sub.ends_with("+json"),
        _ => false,
    };
    if json {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType {
            sent: Some(truncate(raw, 100)),
        })
    }
}

/// A template by name and version.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = TemplateRefRequest)]
pub(crate) struct TemplateRefBody {
    /// A published template name.
    #[serde(default)]
    #[schema(value_type = String, required = true, pattern = "^[a-z][a-z0-9-]{0,63}$")]
    pub name: Field<String>,
    /// A published version, e.g. `1.0.0`.
    #[serde(default)]
    #[schema(value_type = String, required = true, pattern = "^[0-9]{1,6}\\.[0-9]{1,6}\\.[0-9]{1,6}$")]
    pub version: Field<String>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

mod target;
pub(crate) use target::TargetBody;

/// A cluster's drift settings; a member left out is left as it is.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = DriftSettingsRequest)]
pub(crate) struct DriftBody {
    #[serde(default)]
    #[schema(value_type = Option<crate::schema::DriftPolicy>)]
    pub policy: Field<strato_domain::model::DriftPolicy>,
    /// Hours between scheduled checks, 1-168; null: back to the default (6).
    #[serde(default)]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 168)]
    pub interval_hours: Field<u64>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

/// `POST /v1/clusters`; also `POST /v1/estimates`, where `name` may be left out and `drift` is refused.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = CreateClusterRequest)]
pub struct SpecBody {
    /// 3-40 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'.
    #[serde(default)]
    #[schema(value_type = String, required = true, pattern = "^[a-z][a-z0-9-]{1,38}[a-z0-9]$")]
    pub(crate) name: Field<String>,
    #[serde(default)]
    #[schema(value_type = TemplateRefBody, required = true)]
    pub(crate) template: Field<TemplateRefBody>,
    #[serde(default)]
    #[schema(value_type = crate::schema::CloudProvider, required = true)]
    pub(crate) provider: Field<strato_domain::model::CloudProvider>,
    /// A region of the provider.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub(crate) region: Field<String>,
    /// The template's variables by name (see `GET /v1/templates/{name}`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) variables: Field<BTreeMap<String, Value>>,
    #[serde(default)]
    #[schema(value_type = Option<TargetBody>)]
    pub(crate) target: Field<TargetBody>,
    /// Create only.
    #[serde(default)]
    #[schema(value_type = Option<DriftBody>)]
    pub(crate) drift: Field<DriftBody>,
    /// Create only: when the cluster is deleted on its own (RFC 3339, to come); or `ttl_hours`. At most
    /// your tenant's maximum lifetime, which is also the default when the tenant has one.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub(crate) expires_at: Field<String>,
    /// Create only: hours from now until the cluster is deleted on its own (instead of `expires_at`).
    #[serde(default)]
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub(crate) ttl_hours: Field<u64>,
    /// Create only: `required` makes every create and update of the cluster wait after its plan for an
    /// approver (`operations:approve`). The strictest of this, the template's and the tenant's default
    /// applies: `auto` cannot lower a template's or tenant's `required` (403 without the `admin` scope,
    /// else 422). Absent: the template's and tenant's decide (`auto` when neither says).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "required")]
    pub(crate) approval: Field<strato_domain::approval::ApprovalMode>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub(crate) other: BTreeMap<String, Value>,
}

/// `POST /v1/estimates`: a create's body whose name may be left out, without drift settings.
#[derive(ToSchema)]
#[schema(as = EstimateRequest)]
#[allow(dead_code)] // Documents the schema; the body is read as a `SpecBody`.
pub(crate) struct EstimateBody {
    /// Defaults to `estimate`; cloud resource names in the plan derive from it.
    #[schema(pattern = "^[a-z][a-z0-9-]{1,38}[a-z0-9]$")]
    name: Option<String>,
    template: TemplateRefBody,
    provider: crate::schema::CloudProvider,
    region: String,
    #[schema(value_type = Option<Object>)]
    variables: Option<BTreeMap<String, Value>>,
    target: Option<TargetBody>,
}

/// `PATCH /v1/clusters/{id}`: at least one member.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = UpdateClusterRequest)]
pub struct UpdateBody {
    /// A JSON merge patch of the variables: a value replaces, null removes (back to the default).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) variables: Field<BTreeMap<String, Value>>,
    /// Another published version of the cluster's template.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^[0-9]{1,6}\\.[0-9]{1,6}\\.[0-9]{1,6}$")]
    pub(crate) template_version: Field<String>,
    #[serde(default)]
    #[schema(value_type = Option<DriftBody>)]
    pub(crate) drift: Field<DriftBody>,
    /// A new expiry (RFC 3339, to come) to extend or shorten the cluster's life; null clears it (refused
    /// when your tenant has a maximum lifetime). Or `ttl_hours`.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime, nullable)]
    pub(crate) expires_at: Field<String>,
    /// Hours from now until the cluster is deleted on its own (instead of `expires_at`).
    #[serde(default)]
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub(crate) ttl_hours: Field<u64>,
    /// `auto` or `required` (see the create); null: none of its own (the template's and tenant's decide).
    /// Tightening is a writer's; lowering (taking back `required`) needs the `admin` scope and is audited.
    /// Changing it alone runs nothing; it applies to operations asked for afterwards.
    #[serde(default)]
    #[schema(value_type = Option<String>, nullable, example = "required")]
    pub(crate) approval: Field<strato_domain::approval::ApprovalMode>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub(crate) other: BTreeMap<String, Value>,
}

/// `PUT /v1/webhook`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = WebhookRequest)]
pub(crate) struct WebhookBody {
    /// An https:// URL of your receiver, whose host is a public name or address.
    #[serde(default)]
    #[schema(value_type = String, required = true, pattern = "^https://")]
    pub url: Field<String>,
    /// The signing secret: `whsec_` and the base64 (padding optional) of a key of at least 16 bytes (the
    /// Standard Webhooks form; the decoded key is what counts), or any other string of at least 16
    /// characters; never shown again. A plain secret is used as its bytes: give your receiver's library
    /// `whsec_` + base64(secret).
    #[serde(default)]
    #[schema(value_type = String, required = true, write_only, min_length = 16)]
    pub secret: Field<String>,
    /// The event types to receive (`operation.started`, `operation.succeeded`, `operation.failed`,
    /// `operation.awaiting_approval`, `cluster.state_changed`, `drift.detected`, `cluster.expiring`,
    /// `cluster.health_changed`, `rollout.paused`, `rollout.completed`, `rollout.aborted`);
    /// absent, null or empty: all of them.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub events: Field<Vec<String>>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

/// `GET /v1/clusters` query parameters, read as text and checked by the route (400 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListClustersQuery {
    pub state: Option<String>,
    pub name: Option<String>,
    pub include_deleted: Option<String>,
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// A paged listing's query parameters (`GET /v1/clusters/{id}/operations`), read as text and checked by
/// the route (400 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PageQuery {
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// `GET /v1/templates/{name}` query parameters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TemplateQuery {
    pub version: Option<String>,
}

/// `?limit=`: absent is `default`; anything but a whole number from 1 to `max` is a field error — an empty
/// `limit=` too: the contract says integer, and a value the caller meant to give but lost is not the default.
pub(crate) fn page_limit(raw: Option<&str>, default: u32, max: u32, errors: &mut Vec<FieldError>) -> u32 {
    match raw {
        None => default,
        Some(l) => match l.parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                errors.push(ApiError::field(
                    "limit",
                    "is not a page size",
                    format!("a whole number from 1 to {max}"),
                ));
                default
            }
        },
    }
}

/// A query parameter, when given (absent and empty are the same), parsed by `parse`; a value that does
/// not parse is a field error naming `field`, what is wrong and what it takes.
pub(crate) fn query_param<T>(
    errors: &mut Vec<FieldError>,
    field: &str,
    raw: Option<&str>,
    parse: impl FnOnce(&str) -> Option<T>,
    problem: &str,
    takes: &str,
) -> Option<T> {
    let raw = raw.filter(|v| !v.is_empty())?;
    let parsed = parse(raw);
    if parsed.is_none() {
        errors.push(ApiError::field(field, problem, takes));
    }
    parsed
}

/// `?next=`: absent or empty is the first page (the spec says so); a token `parse` refuses is a field error.
pub(crate) fn page_after<T>(
    raw: Option<&str>,
    parse: impl FnOnce(&str) -> Option<T>,
    errors: &mut Vec<FieldError>,
) -> Option<T> {
    query_param(
        errors,
        "next",
        raw,
        parse,
        "is not a page token",
        "the 'next' value of the previous page",
    )
}

/// Text quoted back to a caller (a value sent, a path, a title), cut at `max` characters with a marker.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_must_be_a_json_object() {
        for (body, needle) in [
            (&b""[..], "needs a JSON object"),
            (b"  ", "needs a JSON object"),
            (b"[1]", "must be a JSON object"),
            (b"{\"name\": ", "not valid JSON"),
        ] {
            match parse_object(body) {
                Err(ApiError::BadRequest { detail, .. }) => assert!(detail.contains(needle), "{detail}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_body_must_be_declared_json() {
        use axum::http::{HeaderMap, HeaderValue, Method, header};
        let with = |t: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(t) = t {
                h.insert(header::CONTENT_TYPE, HeaderValue::from_str(t).unwrap());
            }
            h
        };
        let body = br#"{"name": "prod-eu"}"#;
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
            "application/merge-patch+json",
        ] {
            for m in [Method::POST, Method::PUT, Method::PATCH] {
                assert!(json_media_type(&m, &with(Some(ok)), body).is_ok(), "{m} {ok}");
            }
        }
        for refused in [
            Some("text/plain"),
            Some("text/plain; charset=utf-8"),
            Some("application/x-www-form-urlencoded"),
            Some("application/jsonx"),
            Some("application/+json"),
            Some("text/json+xml"),
            None,
        ] {
            for m in [Method::POST, Method::PUT, Method::PATCH] {
                let e = json_media_type(&m, &with(refused), body).expect_err("refused");
                assert_eq!(e.status().as_u16(), 415);
                let (p, _) = e.problem();
                assert!(
                    p.detail.contains("Content-Type: application/json"),
                    "{}",
                    p.detail
                );
                assert_eq!(p.errors[0].field, "Content-Type");
                if let Some(t) = refused {
                    assert!(p.detail.contains(t), "{}", p.detail);
                }
            }
        }
        // No body where none is needed (a cancel), and methods without bodies: not concerned.
        assert!(json_media_type(&Method::POST, &with(Some("text/plain")), b"").is_ok());
        assert!(json_media_type(&Method::POST, &with(None), b" \n").is_ok());
        assert!(json_media_type(&Method::DELETE, &with(Some("text/plain")), body).is_ok());
    }

    #[test]
    fn fields_keep_what_they_could_not_read() {
        let b: WebhookBody = read(br#"{"url": 1, "extra": true}"#).unwrap();
        assert!(matches!(b.url, Field::Bad(Value::Number(_))));
        assert!(matches!(b.secret, Field::Missing));
        assert_eq!(b.other.keys().collect::<Vec<_>>(), ["extra"]);
        let b: DriftBody = read(br#"{"interval_hours": null}"#).unwrap();
        assert!(matches!(b.interval_hours, Field::Null));
    }
}

/// `POST /v1/operations/{id}/approve` and `/reject`: an optional body. Clients send the plan they showed
/// (`plan_sha256`, `round`, `stage` of the operation's `approval`), so a decision never lands on another
/// round or stage than the one reviewed.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DecisionRequest)]
pub(crate) struct DecisionBody {
    /// Why, for the record (at most 1,000 characters); shown on the operation and in the audit log.
    #[serde(default)]
    pub comment: Option<String>,
    /// The `approval.plan_sha256` the approver reviewed; another pending plan is a 409 naming it.
    #[serde(default)]
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub plan_sha256: Option<String>,
    /// The `approval.round` the approver reviewed.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub round: Option<u32>,
    /// The `approval.stage` the approver reviewed.
    #[serde(default)]
    pub stage: Option<String>,
}

impl DecisionBody {
    /// An empty body is no comment and names no plan; anything else must be this object, with a
    /// well-formed checksum and round (422 naming each otherwise).
    pub(crate) fn from_bytes(body: &[u8]) -> Result<Self, crate::ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        let b: Self = read(body)?;
        let mut errors = Vec::new();
        if let Some(sha) = &b.plan_sha256
            && !(sha.len() == 64
                && sha
                    .bytes()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
        {
            errors.push(ApiError::field(
                "plan_sha256",
                "is not a SHA-256",
                "64 lowercase hex digits: the operation's approval.plan_sha256",
            ));
        }
        if b.round == Some(0) {
            errors.push(ApiError::field(
                "round",
                "is not a round",
                "1 or more: the operation's approval.round",
            ));
        }
        if b.stage.as_ref().is_some_and(|s| s.is_empty() || s.len() > 64) {
            errors.push(ApiError::field(
                "stage",
                "is not a stage name",
                "the operation's approval.stage",
            ));
        }
        if errors.is_empty() {
            Ok(b)
        } else {
            Err(ApiError::invalid(errors))
        }
    }

    /// The plan the approver saw, as the decision checks it.
    pub(crate) fn seen(&self) -> strato_domain::approval_rules::Seen {
        strato_domain::approval_rules::Seen {
            plan_sha256: self.plan_sha256.clone(),
            round: self.round,
            stage: self.stage.clone(),
        }
    }
}
