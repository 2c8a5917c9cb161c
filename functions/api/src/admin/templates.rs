//! The operator's template catalog: every version with its standing (`GET /v1/admin/templates`), a version
//! published from an uploaded bundle with the checks `strato-devstack publish` runs, and a version
//! deprecated (new clusters cannot use it) or yanked with a reason (no cluster may move to it; clusters on it
//! keep running and read the reason) — the rules are [`strato_domain::template_status`]. A standing applies at
//! once in the process that set it and within `TEMPLATE_STATUS_MAX_AGE` (30 s) in every other.

use base64::Engine;
use serde::{Deserialize, Serialize};
use strato_domain::template_status::{Standing, TemplateStatus, may_become};
use utoipa::ToSchema;

use crate::context::Ctx;
use crate::edge::Reply;
use crate::error::ApiError;
use crate::operator::Operator;

/// One published version as the operator sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminTemplateVersion)]
pub(crate) struct VersionView {
    pub version: String,
    /// `active`, `deprecated` or `yanked`.
    pub standing: String,
    /// Why it was deprecated or yanked (required for a yank).
    pub reason: Option<String>,
    /// The operator's `sub` that set the standing.
    pub by: Option<String>,
    /// When the standing was set (RFC 3339).
    pub at: Option<String>,
    /// The bundle's sha256.
    pub sha256: String,
}

/// One template, every version oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminTemplate)]
pub(crate) struct TemplateView {
    pub name: String,
    pub description: String,
    pub versions: Vec<VersionView>,
}

/// The whole catalog.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminTemplateList)]
pub(crate) struct TemplateListView {
    pub templates: Vec<TemplateView>,
}

/// `POST …/versions/{version}`: the bundle, base64.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = AdminPublishRequest)]
pub(crate) struct PublishBody {
    /// The bundle (a tar.gz as `strato-devstack publish` packs it: `template.toml` at the root, the modules
    /// its stages use under `modules/<module>/`, optionally `.terraform.lock.hcl`), base64. At most 4 MiB
    /// before encoding.
    #[serde(default)]
    pub bundle: Option<String>,
}

/// `POST …/deprecate` and `…/yank`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = AdminStandingRequest)]
pub(crate) struct StandingBody {
    /// Why: required for a yank (tenants with clusters on it read it), optional for a deprecation.
    #[serde(default)]
    pub reason: Option<String>,
}

fn version_view(s: &strato_aws::store::StoredTemplate, st: &TemplateStatus) -> VersionView {
    let some = |v: &Option<String>| v.clone().filter(|x| !x.is_empty());
    VersionView {
        version: s.template.version().to_owned(),
        standing: st.standing.as_str().to_owned(),
        reason: some(&st.reason),
        by: some(&st.by),
        at: some(&st.at),
        sha256: s.sha256.clone(),
    }
}

/// `GET /v1/admin/templates`: one Scan of the catalog table (a few dozen small items), every standing.
pub(crate) async fn list(ctx: &Ctx) -> Result<Reply<TemplateListView>, ApiError> {
    let all = ctx.store.catalog().await?;
    let templates = crate::templates::grouped(&all)
        .into_iter()
        .map(|(name, versions)| TemplateView {
            name: name.to_owned(),
            description: versions
                .last()
                .map(|v| v.0.template.manifest.description.clone())
                .unwrap_or_default(),
            versions: versions.iter().map(|(s, st)| version_view(s, st)).collect(),
        })
        .collect();
    Ok(Reply::ok(TemplateListView { templates }))
}

fn not_published(name: &str, version: &str) -> ApiError {
    ApiError::NotFound(format!(
        "{}@{} is not published; GET /v1/admin/templates lists the catalog",
        crate::requests::truncate(name, 64),
        crate::requests::truncate(version, 64)
    ))
}

/// `POST …/deprecate` and `…/yank`: reads the version's standing, checks the change ([`may_become`]), writes it
/// conditionally on what was read.
pub(crate) async fn set_standing(
    ctx: &Ctx,
    op: &Operator,
    name: &str,
    version: &str,
    to: Standing,
    body: StandingBody,
) -> Result<Reply<VersionView>, ApiError> {
    let reason = body.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if let Some(r) = &reason
        && r.chars().count() > 500
    {
        return Err(ApiError::invalid(vec![ApiError::field(
            "reason",
            "is longer than 500 characters",
            "a short reason, at most 500 characters",
        )]));
    }
    if to == Standing::Yanked && reason.is_none() {
        return Err(ApiError::invalid(vec![ApiError::field(
            "reason",
            "is required to yank a version",
            "why (tenants with clusters on the version read it), e.g. \"CVE-2026-1234 in the node group\"",
        )]));
    }
    let possible = strato_domain::template::is_template_name(name)
        && strato_domain::template::is_template_version(version);
    let Some(stored) = (if possible {
        ctx.store.get_template(name, version).await?
    } else {
        None
    }) else {
        return Err(not_published(name, version));
    };
    let now = ctx.store.template_statuses(name).await?;
    let current = now
        .into_iter()
        .find(|(v, _)| v == version)
        .map(|(_, s)| s)
        .unwrap_or_default();
    may_become(current.standing, to).map_err(|why| ApiError::Conflict(format!("{name}@{version}: {why}")))?;
    let status = TemplateStatus {
        standing: to,
        reason,
        by: Some(op.subject.clone()),
        at: Some(strato_domain::ts::format(strato_domain::ts::now())),
    };
    ctx.store
        .set_template_status(name, version, current.standing, &status)
        .await?;
    Ok(Reply::ok(version_view(&stored, &status)))
}

/// `POST /v1/admin/templates/{name}/versions/{version}`: decodes the bundle, unpacks it into a fresh
/// directory under the function's `/tmp` (removed after), checks it as publishing does, and publishes it
/// (S3 object, then the catalog item, conditional on the version being new). A version is immutable: one
/// already published is a 409 whatever its content.
pub(crate) async fn publish(
    ctx: &Ctx,
    name: &str,
    version: &str,
    body: PublishBody,
) -> Result<Reply<VersionView>, ApiError> {
    let field =
        |problem: String, allowed: &str| ApiError::invalid(vec![ApiError::field("bundle", problem, allowed)]);
    const ALLOWED: &str =
        "a base64 tar.gz of template.toml and modules/ as `strato-devstack publish` packs it";
    let Some(encoded) = body.bundle else {
        return Err(field("is required".into(), ALLOWED));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| field(format!("is not base64: {e}"), ALLOWED))?;
    let dir = std::env::temp_dir().join(format!(
        "strato-bundle-{}-{}",
        std::process::id(),
        strato_domain::ts::now().unix_timestamp_nanos()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| ApiError::Config(format!("bundle directory: {e}")))?;
    let checked = strato_aws::bundles::check_upload(&bytes, &dir);
    // Removed whatever the outcome: a warm container's /tmp is 512 MB and shared by its invocations.
    let _ = std::fs::remove_dir_all(&dir);
    let bundle = checked.map_err(|e| field(e.to_string(), ALLOWED))?;
    let (got_name, got_version) = (bundle.template.name(), bundle.template.version());
    if (got_name, got_version) != (name, version) {
        return Err(field(
            format!("its template.toml is {got_name}@{got_version}, the path names {name}@{version}"),
            "a bundle of the version the path names",
        ));
    }
    if let Some(existing) = ctx.store.get_template(name, version).await? {
        let same = if existing.sha256 == bundle.sha256 {
            "the same"
        } else {
            "different"
        };
        return Err(ApiError::Conflict(format!(
            "{name}@{version} is already published ({same} content, sha256 {}); versions are immutable: \
             publish a new version",
            existing.sha256
        )));
    }
    ctx.s3
        .put_object()
        .bucket(ctx.config.names.bucket("templates"))
        .key(bundle.key())
        .body(bundle.bytes.clone().into())
        .send()
        .await
        .map_err(|e| ApiError::from(strato_aws::error::Error::aws("PutObject", e)))?;
    ctx.store
        .put_template(&bundle.template.manifest, &bundle.sha256, &bundle.key())
        .await?;
    let stored = strato_aws::store::StoredTemplate {
        template: bundle.template.clone(),
        sha256: bundle.sha256.clone(),
        bundle_key: bundle.key(),
    };
    let mut reply = Reply::ok(version_view(&stored, &TemplateStatus::active()));
    reply.status = axum::http::StatusCode::CREATED;
    reply.location = Some("/v1/admin/templates".into());
    Ok(reply)
}
