//! `GET /v1/clusters/{id}/kubeconfig`: how a tenant reaches the Kubernetes cluster Strato made. The
//! endpoint and CA come from the cluster's outputs as its template's `[connect]` names them; credentials are
//! never part of it: the kubeconfig's exec plugin (`aws eks get-token`) signs a short-lived token on the
//! tenant's machine with the tenant's own AWS identity, or the role the request names (default: the cluster's
//! target role, the identity that created the cluster and so its first administrator).

use serde::{Deserialize, Serialize};
use strato_domain::connect::{ConnectKind, EksAccess, Unreachable, cloud_cluster_name, endpoint_and_ca};
use strato_domain::model::Cluster;
use strato_domain::state_machine::ClusterState;
use strato_domain::template::Template;
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::views::TemplateCache;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// The query parameters, read as text and checked here (400 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct KubeconfigQuery {
    pub role_arn: Option<String>,
    pub aws_profile: Option<String>,
    pub context: Option<String>,
}

/// A kubeconfig for one cluster, and what it is made of.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Kubeconfig)]
pub(crate) struct KubeconfigView {
    /// The name of the kubeconfig's context, cluster and user entries (`strato-<cluster name>` unless asked).
    pub context: String,
    /// How clients authenticate: `eks` (tokens from `aws eks get-token`).
    pub kind: String,
    /// The cloud's name for the cluster, which tokens are signed for.
    pub cluster_name: String,
    pub region: String,
    /// The Kubernetes API's URL.
    pub endpoint: String,
    /// The role the exec plugin assumes to sign tokens; absent: the caller's own AWS identity.
    pub role_arn: Option<String>,
    /// The AWS CLI profile the exec plugin runs with; absent: the environment's.
    pub aws_profile: Option<String>,
    /// The kubeconfig (YAML): `kubectl --kubeconfig <file>`, or merge it with `strato clusters kubeconfig --merge`.
    pub kubeconfig: String,
    /// The command the exec plugin runs for a token, to try by hand.
    pub token_command: String,
    /// What the caller should know about who the cluster lets in.
    pub note: Option<String>,
}

const ROLE_RULE: &str =
    "arn:aws:iam::<12-digit account id>:role/<role name>, or `none` for your own AWS identity";
const PROFILE_RULE: &str = "an AWS CLI profile name: 1-64 letters, digits, '_', '-' and '.'";
const CONTEXT_RULE: &str = "1-100 letters, digits, '_', '-', '.', ':' and '@'";

/// What the caller asked for: `role` is `None` for "the default", `Some(None)` for "no role".
struct Asked {
    role: Option<Option<String>>,
    aws_profile: Option<String>,
    context: Option<String>,
}

fn read_query(q: &KubeconfigQuery) -> Result<Asked, ApiError> {
    let mut errors = Vec::new();
    let mut bad = |field: &str, problem: &str, allowed: &str| {
        errors.push(FieldError {
            field: field.into(),
            problem: problem.into(),
            allowed: allowed.into(),
        })
    };
    let role = match q.role_arn.as_deref() {
        None => None,
        Some("none") => Some(None),
        Some(arn) if crate::target::role_arn_ok(arn) => Some(Some(arn.to_owned())),
        Some(_) => {
            bad("role_arn", "is not an IAM role ARN", ROLE_RULE);
            None
        }
    };
    let ok_chars = |s: &str, max: usize, extra: &str| {
        (1..=max).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    if let Some(p) = q.aws_profile.as_deref()
        && !ok_chars(p, 64, "_-.")
    {
        bad("aws_profile", "is not a profile name", PROFILE_RULE);
    }
    if let Some(c) = q.context.as_deref()
        && !ok_chars(c, 100, "_-.:@")
    {
        bad("context", "is not a context name", CONTEXT_RULE);
    }
    if !errors.is_empty() {
        return Err(ApiError::BadRequest {
            detail: "the query string has invalid parameters; see errors".into(),
            errors,
        });
    }
    Ok(Asked {
        role,
        aws_profile: q.aws_profile.clone(),
        context: q.context.clone(),
    })
}

pub(crate) async fn get(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    q: &KubeconfigQuery,
) -> Result<Reply<KubeconfigView>, ApiError> {
    let asked = read_query(q)?;
    let c = ctx.api().load_cluster(caller, id).await?;
    let mut templates = TemplateCache::new(&ctx.store);
    let template = templates.get(&c.spec.template).await?;
    Ok(Reply::ok(decide(&c, template, asked)?))
}

/// The kubeconfig of a cluster of `template`, or why there is none (409, saying what to do).
fn decide(c: &Cluster, template: Option<&Template>, asked: Asked) -> Result<KubeconfigView, ApiError> {
    let name = c.spec.name.as_str();
    if matches!(c.state(), ClusterState::Deleting | ClusterState::Deleted) {
        return Err(ApiError::Conflict(format!(
            "cluster '{name}' is {}: there is no Kubernetes API to connect to",
            c.state().as_str()
        )));
    }
    let t = &c.spec.template;
    let connect = template
        .and_then(|t| t.manifest.connect.as_ref())
        .ok_or_else(|| {
            ApiError::Conflict(format!(
                "template {}@{} does not say how to connect to its clusters (its manifest has no [connect] \
                 section): read the endpoint from the cluster's outputs, or update the cluster to a template \
                 version that has one",
                t.name, t.version
            ))
        })?;
    let (endpoint, certificate_authority) = endpoint_and_ca(connect, &c.outputs).map_err(|e| match e {
        Unreachable::Missing(output) => ApiError::Conflict(format!(
            "cluster '{name}' has no '{output}' output yet (it is {}): the kubeconfig is ready once the \
                 cluster stage has applied; try again when the cluster is ACTIVE",
            c.state().as_str()
        )),
        Unreachable::Malformed { output, reason } => ApiError::Conflict(format!(
            "output '{output}' of cluster '{name}' {reason}, so template {}@{} makes no kubeconfig: \
                 report it to the template's maintainers",
            t.name, t.version
        )),
    })?;
    let ConnectKind::Eks = connect.kind;
    let target = c.spec.target.as_ref().and_then(|t| t.aws());
    let role_arn = match asked.role {
        Some(role) => role,
        None => target.map(|t| t.role_arn.clone()),
    };
    let note = match target {
        None => Some(
            "The cluster runs in Strato's own AWS account: its API lets in the identities the platform's \
             operators grant access entries to, not your account's."
                .to_owned(),
        ),
        Some(t) if role_arn.as_deref() == Some(t.role_arn.as_str()) => Some(format!(
            "Tokens are signed as {} (the role that created the cluster, its administrator): its trust policy \
             must let your AWS identity assume it, beside Strato's statement.",
            t.role_arn
        )),
        Some(_) => Some(
            "The cluster's API lets in the role that created it; any other identity needs an EKS access \
             entry."
                .to_owned(),
        ),
    };
    let access = EksAccess {
        context: asked.context.unwrap_or_else(|| format!("strato-{name}")),
        cluster_name: cloud_cluster_name(name, c.cluster_id.as_str()),
        region: c.spec.region.clone(),
        endpoint,
        certificate_authority,
        role_arn,
        aws_profile: asked.aws_profile,
    };
    Ok(KubeconfigView {
        kubeconfig: access.kubeconfig_yaml(),
        token_command: access.token_command(),
        context: access.context,
        kind: connect.kind.as_str().to_owned(),
        cluster_name: access.cluster_name,
        region: access.region,
        endpoint: access.endpoint,
        role_arn: access.role_arn,
        aws_profile: access.aws_profile,
        note,
    })
}

#[cfg(test)]
#[path = "connect/tests.rs"]
mod tests;
