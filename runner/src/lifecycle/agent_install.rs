//! The `install-agent` step of a create whose template says `[agent] install = "runner"`: once the stage
//! that outputs the cluster's API endpoint has applied, the runner applies the cluster agent's manifests
//! (`agent/deploy/agent.yaml`, filled in for this cluster) to that API by server-side apply, as field
//! manager `strato-runner` with `force`, so running it again changes nothing. It authenticates with a
//! short-lived token: an EKS token signed with the run's provider session (the identity that created the
//! cluster, and so its administrator), fresh for each request; or the bearer token a sensitive output holds
//! (DigitalOcean, Linode). A new cluster's API often does not answer for a minute or two: the step keeps
//! trying, with back-off, for `STRATO_AGENT_INSTALL_WAIT_SECS`. Each object applied is logged by kind and
//! name; neither token nor the Secret's data ever is. A failure fails the create (and so is cleaned up as
//! any failed create is) with what happened and the fix. The cluster then waits in CONFIGURING for the
//! agent to register (the status function's `configure` step).

use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use secrecy::ExposeSecret;
use serde_json::{Map, Value};
use strato_domain::ErrorCategory;
use strato_domain::model::{CloudProvider, OperationKind};
use strato_domain::template::{AgentInstall, AgentSpec};

use super::PreparedRun;
use super::failure::Failure;
use crate::credentials::EngineCredentials;
use crate::kube::manifests::{AGENT_YAML, AgentValues, Object, render};
use crate::kube::{KubeApi, KubeCluster, KubeError};
use crate::ports::Ports;

/// The step's reported name. Not `configure`: that is the step the status function opens after the run
/// (waiting for the agent), which it opens only once per operation.
pub(super) const STEP: &str = "install-agent";

/// At most this many tries of one object, however short the back-off.
const MAX_TRIES: u32 = 64;

/// What installing the agent needs beyond the stages' outputs: made while preparing a create whose
/// template has the runner install the agent.
pub(super) struct Install {
    pub(super) spec: AgentSpec,
    pub(super) provider: CloudProvider,
    pub(super) region: String,
    /// The AWS session the providers ran with: an EKS token is signed with it.
    pub(super) keys: Option<EngineCredentials>,
}

impl Install {
    pub(super) fn plan(
        kind: OperationKind,
        agent: Option<&AgentSpec>,
        provider: CloudProvider,
        region: &str,
        keys: Option<&EngineCredentials>,
    ) -> Option<Self> {
        let spec = agent.filter(|a| a.install == AgentInstall::Runner)?;
        (kind == OperationKind::Create).then(|| Self {
            spec: spec.clone(),
            provider,
            region: region.to_owned(),
            keys: keys.cloned(),
        })
    }
}

/// How the runner authenticates to the cluster's API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokenSource {
    /// The token a (sensitive) output holds.
    Output(String),
    /// An EKS token for the cluster of this name, signed per request.
    Eks(String),
}

/// A template defect: the outputs the manifest names are not what the runner needs.
fn template_failure(what: String, fix: String) -> Failure {
    let mut f = Failure::new(STEP, ErrorCategory::InvalidConfiguration, what);
    f.fix = fix;
    f
}

/// The non-empty string output `name` (manifest key `key`).
fn text_output(outputs: &Map<String, Value>, key: &str, name: &str) -> Result<String, Failure> {
    match outputs.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        other => Err(template_failure(
            format!(
                "output '{name}' (agent.{key}) is {} once the cluster's endpoint is known",
                if other.is_none_or(Value::is_null) {
                    "missing"
                } else {
                    "not a non-empty string"
                }
            ),
            format!(
                "The template must output '{name}' from the stage that outputs agent.endpoint_output or an earlier \
                 one; correct the template (or agent.{key} in its manifest), then retry."
            ),
        )),
    }
}

/// The endpoint (`https://`) and CA text the outputs name, both present.
fn endpoint_and_ca(spec: &AgentSpec, outputs: &Map<String, Value>) -> Result<(String, String), Failure> {
    let endpoint_output = spec.endpoint_output.as_deref().unwrap_or_default();
    let ca_output = spec.ca_output.as_deref().unwrap_or_default();
    let endpoint = text_output(outputs, "endpoint_output", endpoint_output)?;
    if !endpoint.starts_with("https://") {
        return Err(template_failure(
            format!("output '{endpoint_output}' (agent.endpoint_output) is not an https:// URL: {endpoint}"),
            "The output must be the cluster API's URL (https://…); correct the template, then retry.".into(),
        ));
    }
    Ok((endpoint, text_output(outputs, "ca_output", ca_output)?))
}

/// The cluster to install into: an emulator's API when one stands in (`STRATO_KUBE_ENDPOINT`/`_CA_PEM`),
/// after the outputs are checked as far as an emulator's cloud allows (moto's EKS makes its CA data up:
/// random text, never a PEM, so its shape is not checked then); else the outputs' cluster.
pub(super) fn target_cluster(
    spec: &AgentSpec,
    outputs: &Map<String, Value>,
    emulator: Option<&KubeCluster>,
) -> Result<KubeCluster, Failure> {
    match emulator {
        Some(e) => endpoint_and_ca(spec, outputs).map(|_| e.clone()),
        None => cluster_of(spec, outputs),
    }
}

/// The cluster's API from the outputs: an `https://` endpoint and the CA (base64 of its PEM, or the PEM).
pub(super) fn cluster_of(spec: &AgentSpec, outputs: &Map<String, Value>) -> Result<KubeCluster, Failure> {
    let ca_output = spec.ca_output.as_deref().unwrap_or_default();
    let (endpoint, ca) = endpoint_and_ca(spec, outputs)?;
    let pem = if ca.starts_with("-----BEGIN") {
        ca.into_bytes()
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(ca.as_bytes())
            .unwrap_or_default()
    };
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
        return Err(template_failure(
            format!("output '{ca_output}' (agent.ca_output) is not base64 of a PEM certificate"),
            "The output must be base64 of the PEM of the cluster's CA (EKS: certificate_authority[0].data); \
             correct the template, then retry."
                .into(),
        ));
    }
    Ok(KubeCluster {
        endpoint: endpoint.trim_end_matches('/').to_owned(),
        ca_pem: pem,
    })
}

pub(super) fn token_source(install: &Install, outputs: &Map<String, Value>) -> Result<TokenSource, Failure> {
    let spec = &install.spec;
    // A module may output a token on some clouds only (null elsewhere): present, it is used.
    if let Some(name) = &spec.token_output
        && (install.provider != CloudProvider::Aws || outputs.get(name).is_some_and(|v| !v.is_null()))
    {
        return text_output(outputs, "token_output", name).map(TokenSource::Output);
    }
    match (install.provider, &spec.name_output) {
        (CloudProvider::Aws, Some(name)) => {
            if install.keys.is_none() {
                return Err(template_failure(
                    "the run has no AWS session to sign an EKS token with (the target's role is assumed by the \
                     engine itself)"
                        .into(),
                    "Name a sensitive output holding a bearer token for the cluster in agent.token_output, or \
                     install the agent in the template (install = \"template\"), then retry."
                        .into(),
                ));
            }
            text_output(outputs, "name_output", name).map(TokenSource::Eks)
        }
        (p, _) => Err(template_failure(
            format!("the runner has no token for a {p} cluster's API"),
            "Name a sensitive output holding a bearer token for the cluster in agent.token_output, or install \
             the agent in the template (install = \"template\"), then retry."
                .into(),
        )),
    }
}

impl<P: Ports> PreparedRun<'_, P> {
    /// After a stage's outputs are read: installs the agent once they hold the cluster's endpoint (a create
    /// whose template has the runner install it; at most once per run).
    pub(super) async fn install_agent_when_reachable(
        &mut self,
        outputs: &Map<String, Value>,
    ) -> Result<(), Failure> {
        let due = self.agent.as_ref().is_some_and(|i| {
            i.spec
                .endpoint_output
                .as_ref()
                .is_some_and(|e| outputs.get(e).is_some_and(|v| !v.is_null()))
        });
        if !due {
            return Ok(());
        }
        let Some(install) = self.agent.take() else {
            return Ok(());
        };
        if let Some(reason) = self.ctx.stop_requested().await {
            return Err(Failure::stopped(STEP, reason));
        }
        self.ctx.event_step(STEP, None);
        let began = Instant::now();
        let r = self.install_agent(&install, outputs).await;
        strato_domain::vitals::step_finished(self.ctx.op.kind, STEP, r.is_ok(), began.elapsed());
        self.ctx.event_step(STEP, Some(r.is_ok()));
        r
    }

    async fn install_agent(&self, install: &Install, outputs: &Map<String, Value>) -> Result<(), Failure> {
        let cfg = &self.ctx.cfg;
        // The outputs are checked even when an emulator's API stands in, so a missing one still fails.
        let cluster = target_cluster(&install.spec, outputs, cfg.kube_override.as_ref())?;
        let source = token_source(install, outputs)?;
        let api_url = cfg.control_plane_url.as_deref().ok_or_else(|| {
            Failure::internal(
                STEP,
                "STRATO_CONTROL_PLANE_URL is not set: the agent would not know where to report (an operator sets it)",
            )
        })?;
        let registration_token = self
            .rendered
            .get("agent_token")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::internal(STEP, "no registration token was made for the agent"))?;
        let image = install.spec.image.as_deref().unwrap_or(&cfg.agent_image);
        let values = AgentValues {
            image,
            api_url,
            cluster_id: self.ctx.cluster.cluster_id.as_str(),
            registration_token,
        };
        let objects = render(AGENT_YAML, &values).map_err(|e| Failure::internal(STEP, e))?;
        self.note(
            STEP,
            &format!(
                "installing the cluster agent ({image}) at {} by server-side apply",
                cluster.endpoint
            ),
        );
        let started = Instant::now();
        for object in &objects {
            self.apply_object(install, &cluster, &source, object, started)
                .await?;
        }
        self.note(
            STEP,
            &format!(
                "{} objects applied; the cluster waits for the agent to register",
                objects.len()
            ),
        );
        Ok(())
    }

    /// One object, tried again with back-off while the API does not answer (or is overloaded) and the
    /// install's deadline allows.
    async fn apply_object(
        &self,
        install: &Install,
        cluster: &KubeCluster,
        source: &TokenSource,
        object: &Object,
        started: Instant,
    ) -> Result<(), Failure> {
        let deadline = started + self.ctx.cfg.agent_install_wait;
        let base = self.ctx.cfg.retry_base;
        let mut delay = base;
        let mut tries = 0;
        loop {
            tries += 1;
            let token = self.bearer_token(install, source)?;
            let err = match self
                .ctx
                .ports
                .kube
                .apply(cluster, &token, &object.path, &object.body)
                .await
            {
                Ok(applied) => {
                    self.note(
                        STEP,
                        &format!(
                            "{} {}",
                            if applied.created { "created" } else { "applied" },
                            object.describe()
                        ),
                    );
                    return Ok(());
                }
                Err(e) => e,
            };
            if !err.is_transient() || tries >= MAX_TRIES || Instant::now() + delay >= deadline {
                return Err(self.failure(install, cluster, source, object, &err, started.elapsed()));
            }
            self.note(
                STEP,
                &format!(
                    "the cluster's API did not take {} ({}); trying again in {:.1}s",
                    object.describe(),
                    self.ctx.logs.redactor.redact(&err.to_string()),
                    delay.as_secs_f64()
                ),
            );
            self.ctx
                .backoff(delay)
                .await
                .map_err(|r| Failure::stopped(STEP, r))?;
            delay = (delay * 2).min(base * 16);
        }
    }

    /// A bearer token for one request: the output's, or an EKS token signed now (EKS accepts one for 15
    /// minutes). Either is redacted from every log line from here on.
    fn bearer_token(&self, install: &Install, source: &TokenSource) -> Result<String, Failure> {
        let token = match source {
            TokenSource::Output(t) => t.clone(),
            TokenSource::Eks(name) => {
                let keys = install
                    .keys
                    .as_ref()
                    .ok_or_else(|| Failure::internal(STEP, "no AWS session to sign an EKS token with"))?;
                let signing = strato_aws::eks_token::SigningKeys {
                    access_key_id: &keys.access_key_id,
                    secret_access_key: keys.secret_access_key.expose_secret(),
                    session_token: keys.session_token.as_ref().map(|t| t.expose_secret()),
                };
                strato_aws::eks_token::mint(&signing, &install.region, name, SystemTime::now())
                    .map_err(|e| Failure::internal(STEP, format!("signing an EKS token: {e}")))?
            }
        };
        self.ctx.logs.redactor.add(&token);
        Ok(token)
    }

    /// What the tenant is told when `object` could not be applied.
    fn failure(
        &self,
        install: &Install,
        cluster: &KubeCluster,
        source: &TokenSource,
        object: &Object,
        err: &KubeError,
        waited: Duration,
    ) -> Failure {
        let spec = &install.spec;
        let endpoint = &cluster.endpoint;
        let what_obj = object.describe();
        let (category, what, fix) = match err {
            KubeError::Unreachable(_) | KubeError::Status { .. } if err.is_transient() => (
                ErrorCategory::Transient,
                format!(
                    "the cluster's API at {endpoint} did not take {what_obj} within {}s ({err})",
                    waited.as_secs()
                ),
                "Check that the runner reaches the cluster's API: its endpoint public (or the runner inside the \
                 cluster's network), the addresses allowed to reach it, DNS; then retry the operation (applying \
                 the agent again is safe)."
                    .to_owned(),
            ),
            KubeError::Tls(_) => (
                ErrorCategory::InvalidConfiguration,
                format!(
                    "the cluster's API at {endpoint} is not vouched for by the CA in output '{}' ({err})",
                    spec.ca_output.as_deref().unwrap_or_default()
                ),
                "The output must be base64 of the PEM of the CA that signed the API's certificate (EKS: \
                 certificate_authority[0].data); correct the template, then retry."
                    .to_owned(),
            ),
            KubeError::Status { code: 401, .. } => (
                ErrorCategory::Credentials,
                format!("the cluster's API refused the runner's token applying {what_obj} ({err})"),
                match (source, &spec.token_output) {
                    (TokenSource::Output(_), Some(out)) => format!(
                        "The token in output '{out}' was refused: the template must output a valid bearer token \
                         for the cluster's API; correct it, then retry."
                    ),
                    _ => "The runner signs an EKS token as the identity that created the cluster (the run's \
                             provider session): keep that identity a cluster administrator (an EKS access entry, or \
                             bootstrap_cluster_creator_admin_permissions), then retry."
                        .to_owned(),
                },
            ),
            KubeError::Status { code: 403, .. } => (
                ErrorCategory::Credentials,
                format!("the runner's identity may not apply {what_obj} ({err})"),
                "The identity the runner authenticates as must be a cluster administrator (cluster-admin); grant \
                 it, then retry."
                    .to_owned(),
            ),
            _ => (
                ErrorCategory::Internal,
                format!("the cluster's API refused {what_obj} ({err})"),
                ErrorCategory::Internal.default_fix().to_owned(),
            ),
        };
        let mut f = Failure::new(STEP, category, self.ctx.logs.redactor.redact(&what));
        f.fix = fix;
        f
    }
}
