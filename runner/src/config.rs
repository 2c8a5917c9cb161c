//! Configuration, read once from the environment at start.

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use strato_aws::env::{Env, EnvError};
use strato_aws::resources::Names;
use strato_domain::ids::OperationId;
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};
use strato_domain::run_proof::ENV_RUN_PROOF;
use strato_domain::telemetry::{ENV_TRACEPARENT, Traceparent};

use crate::RunnerError;
use crate::clouds::CloudEndpoints;

/// The agent image of this runner's release.
pub const DEFAULT_AGENT_IMAGE: &str = concat!("ghcr.io/strato-dev/strato-agent:", env!("CARGO_PKG_VERSION"));

/// The runner's configuration. Every variable is read once, at start; a missing or malformed required one
/// stops the runner with a message naming it.
///
/// | variable | meaning |
/// |---|---|
/// | `STRATO_OPERATION_ID` | the operation to run (container override set by the dispatcher; required) |
/// | `STRATO_FENCING_TOKEN` | the cluster lock's fencing token (container override; required) |
/// | `STRATO_RUN_PROOF` | the run's proof, sent on every event (container override; required; never given to the engine) |
/// | `STRATO_RESOURCE_PREFIX` | prefix of every table, queue and bucket (required) |
/// | `STRATO_ENGINE_ROLE_ARN` | role the providers run as in the platform account (clusters without a target account), assumed with Strato's own resources denied (required) |
/// | `STRATO_STATE_ROLE_ARN` | role the S3 backend runs as on the platform's state bucket, assumed per run scoped to the cluster's state (required) |
/// | `AWS_ENDPOINT_URL` | emulator endpoint for the runner's own SDK clients (optional) |
/// | `STRATO_TERRAFORM` | engine binary (default `tofu` on `PATH`) |
/// | `STRATO_AGENT_TOKEN_SECRET` | secret the cluster agent's registration token is derived from (needed only by templates with a managed `agent_token` variable) |
/// | `STRATO_CONTROL_PLANE_URL` | given to templates as the managed `control_plane_url` variable, and to the cluster agent the runner installs (`[agent] install = "runner"`) as the API it reports to |
/// | `STRATO_AGENT_IMAGE` | the cluster agent's image the runner installs, unless the template's `agent.image` names another (default `ghcr.io/strato-dev/strato-agent:<runner version>`) |
/// | `STRATO_AGENT_INSTALL_WAIT_SECS` | how long the runner keeps trying a new cluster's API while it does not answer yet, before the install fails (default 300) |
/// | `STRATO_KUBE_TIMEOUT_SECS` | each request to a cluster's API, connecting included (default 15) |
/// | `STRATO_KUBE_ENDPOINT`, `STRATO_KUBE_CA_PEM` | both or neither: install the agent at this `https://` API trusting this CA (PEM) instead of the endpoint and CA the template outputs (emulators: moto's EKS endpoint answers nothing; devstack's Kubernetes fake stands in). Never in AWS |
/// | `STRATO_TIME_LIMIT_SECS` | per-operation time limit, cleanup of a failed create included (default 1800) |
/// | `STRATO_CLEANUP_RESERVE_SECS` | the end of the time limit kept for that cleanup: a create's stages are stopped this long before it (default 300, at most half the limit) |
/// | `STRATO_STATE_LOCK_WAIT_SECS` | how long a run waits for another unfinished run of its cluster that may hold a Terraform state lock (default 120) |
/// | `STRATO_PROVIDER_ENDPOINT` | point Terraform's AWS provider and S3 backend at this endpoint (emulators) |
/// | `STRATO_PROVIDER_MAX_RETRIES` | with `STRATO_PROVIDER_ENDPOINT`: the AWS provider's own `max_retries` (tests) |
/// | `STRATO_STS_ENDPOINT` | endpoint of the STS used to assume a target account role (default: AWS / `AWS_ENDPOINT_URL`) |
/// | `STRATO_HEARTBEAT_SECS` | heartbeat and cancel-poll interval (default 15) |
/// | `STRATO_GRACE_SECS` | how long Terraform gets after SIGINT before it is killed (default 20) |
/// | `STRATO_STALL_SECS` | heartbeats stop for good once the run has shown no progress (no line of output, no step) this long (default 900) |
/// | `STRATO_EXIT_MARGIN_SECS` | after the time limit and the grace, this long for the final event; then the process exits whatever it is doing (default 120) |
/// | `STRATO_RETRY_BASE_MS` | first backoff delay of transient-failure retries (default 2000) |
/// | `STRATO_PREFLIGHT_TIMEOUT_SECS` | credential preflight timeout, each cloud's whole check (default 10) |
/// | `STRATO_ENDPOINT_GCP_STS`, `_GCP_IAM_CREDENTIALS`, `_AZURE_LOGIN`, `_AZURE_MANAGEMENT`, `_DIGITALOCEAN`, `_LINODE` | base URL of that cloud identity endpoint for the preflight (default the cloud's public one; emulators) |
/// | `STRATO_WORK_DIR` | parent of the per-operation workspace (default the system temp dir) |
/// | `STRATO_STATE_KMS_KEY` | KMS key (ARN) the platform's state objects are written with (SSE-KMS; `infra/` sets Strato's data key). Unset: SSE-S3 |
/// | `STRATO_GCS_ENDPOINT` | the Cloud Storage JSON API (`…/storage/v1/`) a GCP target's state bucket is reached at (emulators; default Google's) |
/// | `STRATO_AZURE_METADATA_HOST` | `host:port` of an emulated Azure cloud's ARM metadata endpoint (https): an Azure target's state backend takes its Entra ID and Resource Manager endpoints from it and asks Resource Manager for the storage account's blob endpoint (emulators; default Azure's public cloud) |
/// | `STRATO_S3_COMPATIBLE_ENDPOINT` | the S3 endpoint a DigitalOcean or Linode target's state bucket is reached at, path-style (emulators; default the cloud's own per region) |
/// | `STRATO_UNSAFE_SKIP_EXTERNAL_ID_PROBE` | `true` turns off the check that a target role refuses Strato without the tenant's external id. Only for emulators whose STS ignores trust policies (moto: devstack); never in AWS |
#[derive(Debug, Clone)]
pub struct Config {
    pub operation_id: OperationId,
    pub fencing_token: u64,
    pub run_proof: SecretString,
    pub names: Names,
    pub engine_role_arn: String,
    pub state_role_arn: String,
    pub terraform: PathBuf,
    pub agent_token_secret: Option<String>,
    pub control_plane_url: Option<String>,
    /// The cluster agent's image (see [`DEFAULT_AGENT_IMAGE`]).
    pub agent_image: String,
    /// How long a new cluster's API may stay unreachable while the runner installs the agent.
    pub agent_install_wait: Duration,
    /// Each request to a cluster's API.
    pub kube_timeout: Duration,
    /// Emulators only: the cluster API the agent is installed at instead of the template's outputs.
    pub kube_override: Option<crate::kube::KubeCluster>,
    pub time_limit: Duration,
    /// Kept from `time_limit` for the cleanup of a failed create (see [`Config::stage_time_limit`]).
    pub cleanup_reserve: Duration,
    pub state_lock_wait: Duration,
    pub provider_endpoint: Option<String>,
    pub provider_max_retries: Option<u32>,
    pub sts_endpoint: Option<String>,
    pub heartbeat: Duration,
    pub grace: Duration,
    /// No progress for this long: the heartbeat stops vouching for the run (see [`crate::liveness`]).
    pub stall_limit: Duration,
    /// See [`Config::hard_deadline`].
    pub exit_margin: Duration,
    pub retry_base: Duration,
    pub preflight_timeout: Duration,
    /// The other clouds' identity endpoints the preflight calls.
    pub cloud_endpoints: CloudEndpoints,
    pub work_dir: Option<PathBuf>,
    /// SSE-KMS key of the platform's state objects (the S3 backend's `kms_key_id`).
    pub state_kms_key: Option<String>,
    /// Skip the external-id probe of target roles (`trust::assume_checked`): moto's STS does not evaluate
    /// trust policies, so there the probe would refuse every role.
    pub unsafe_skip_external_id_probe: bool,
    /// Extra engine environment (not read from the environment: the engine inherits the runner's own).
    /// Lets an in-process caller (tests, bench) give the engine what the container image would.
    pub extra_engine_env: Vec<(String, String)>,
    /// The run's trace context: read as its parent's (`STRATO_TRACEPARENT`, the dispatcher's span; a
    /// malformed value starts a new trace), then made this run's own by `main`; its events and log batches
    /// carry it.
    pub traceparent: Option<Traceparent>,
    /// Where customers' non-AWS state stores are reached when not at the clouds' own endpoints.
    pub state_stores: StateStores,
}

/// `STRATO_KUBE_ENDPOINT` and `STRATO_KUBE_CA_PEM`, both or neither: a half-set override would silently
/// install at the template's endpoint, which an emulator cannot serve.
fn kube_override<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Option<crate::kube::KubeCluster>, RunnerError> {
    match (env.optional("STRATO_KUBE_ENDPOINT"), env.optional("STRATO_KUBE_CA_PEM")) {
        (None, None) => Ok(None),
        (Some(endpoint), Some(ca)) if endpoint.starts_with("https://") && ca.contains("-----BEGIN CERTIFICATE-----") => {
            Ok(Some(crate::kube::KubeCluster {
                endpoint: endpoint.trim_end_matches('/').to_owned(),
                ca_pem: ca.into_bytes(),
            }))
        }
        _ => Err(RunnerError::Config(
            "STRATO_KUBE_ENDPOINT (an https:// URL) and STRATO_KUBE_CA_PEM (the PEM of its CA) are set together or \
             not at all (emulators only)"
                .into(),
        )),
    }
}

/// Endpoints of customers' state stores other than AWS S3, for emulators; `None`: the cloud's own.
#[derive(Debug, Clone, Default)]
pub struct StateStores {
    pub gcs: Option<String>,
    pub s3_compatible: Option<String>,
    /// `host:port` of an emulated Azure cloud's ARM metadata endpoint (https), which names its Entra ID,
    /// Resource Manager and, through Resource Manager, the storage account's blob endpoint.
    pub azure_metadata_host: Option<String>,
}

impl Config {
    pub fn from_env() -> Result<Self, RunnerError> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, RunnerError> {
        let env = Env::new(get);
        // Each message names the variable; the ones the dispatcher sets also say so.
        let set_by_dispatcher =
            |e: EnvError| RunnerError::Config(format!("{e}; the dispatcher sets it as a container override"));
        let config = |e: EnvError| RunnerError::Config(e.to_string());
        let secs = |var, default| env.number(var, default).map(Duration::from_secs).map_err(config);
        Ok(Self {
            operation_id: env
                .required_parsed(ENV_OPERATION_ID, "an operation id (op-<uuid>)")
                .map_err(set_by_dispatcher)?,
            fencing_token: env
                .required_parsed(ENV_FENCING_TOKEN, "a whole number")
                .map_err(set_by_dispatcher)?,
            run_proof: env
                .required(ENV_RUN_PROOF)
                .map(SecretString::from)
                .map_err(set_by_dispatcher)?,
            names: env.names().map_err(config)?,
            engine_role_arn: env.required("STRATO_ENGINE_ROLE_ARN").map_err(config)?,
            state_role_arn: env.required("STRATO_STATE_ROLE_ARN").map_err(config)?,
            terraform: env.or("STRATO_TERRAFORM", "tofu").into(),
            agent_token_secret: env.optional("STRATO_AGENT_TOKEN_SECRET"),
            control_plane_url: env.optional("STRATO_CONTROL_PLANE_URL"),
            agent_image: env.or("STRATO_AGENT_IMAGE", DEFAULT_AGENT_IMAGE),
            agent_install_wait: secs("STRATO_AGENT_INSTALL_WAIT_SECS", 300)?,
            kube_timeout: secs("STRATO_KUBE_TIMEOUT_SECS", 15)?,
            kube_override: kube_override(&env)?,
            time_limit: secs("STRATO_TIME_LIMIT_SECS", 1800)?,
            cleanup_reserve: secs("STRATO_CLEANUP_RESERVE_SECS", 300)?,
            state_lock_wait: secs("STRATO_STATE_LOCK_WAIT_SECS", 120)?,
            provider_endpoint: env.optional("STRATO_PROVIDER_ENDPOINT"),
            provider_max_retries: env
                .parsed("STRATO_PROVIDER_MAX_RETRIES", "a whole number")
                .map_err(config)?,
            sts_endpoint: env.optional("STRATO_STS_ENDPOINT"),
            heartbeat: secs("STRATO_HEARTBEAT_SECS", 15)?,
            grace: secs("STRATO_GRACE_SECS", 20)?,
            stall_limit: secs("STRATO_STALL_SECS", 900)?,
            exit_margin: secs("STRATO_EXIT_MARGIN_SECS", 120)?,
            retry_base: Duration::from_millis(env.number("STRATO_RETRY_BASE_MS", 2000).map_err(config)?),
            preflight_timeout: secs("STRATO_PREFLIGHT_TIMEOUT_SECS", 10)?,
            cloud_endpoints: CloudEndpoints::from_env(&env),
            work_dir: env.optional("STRATO_WORK_DIR").map(PathBuf::from),
            state_kms_key: env.optional("STRATO_STATE_KMS_KEY"),
            unsafe_skip_external_id_probe: env
                .parsed("STRATO_UNSAFE_SKIP_EXTERNAL_ID_PROBE", "true or false")
                .map_err(config)?
                .unwrap_or(false),
            extra_engine_env: Vec::new(),
            traceparent: env.optional(ENV_TRACEPARENT).and_then(|v| v.parse().ok()),
            state_stores: StateStores {
                gcs: env.optional("STRATO_GCS_ENDPOINT"),
                s3_compatible: env.optional("STRATO_S3_COMPATIBLE_ENDPOINT"),
                azure_metadata_host: env.optional("STRATO_AZURE_METADATA_HOST"),
            },
        })
    }
}

impl Config {
    /// When a create's stages are stopped (`timeout`): the time limit less the cleanup reserve (at most half
    /// of it), so a failed create's cleanup still runs within the task's time limit. Other kinds, which are
    /// not cleaned up, run to the time limit itself.
    pub fn stage_time_limit(&self) -> Duration {
        self.time_limit - self.cleanup_reserve.min(self.time_limit / 2)
    }

    /// When the process ends whatever it is doing: the time limit (which stops the engine and the
    /// cleanup), the engine's grace to stop, and a margin for the final event. The time limit only
    /// signals; a call that never returns (an SDK call, a wedged engine pipe, a lock) would otherwise keep
    /// the task, and the cluster's lock, alive for ever.
    pub fn hard_deadline(&self) -> Duration {
        self.time_limit + self.grace + self.exit_margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The configuration from every variable a run needs (for operation `op`), changed by `changes`: a value
    /// sets a variable, `None` removes it.
    fn config(op: &str, changes: &[(&'static str, Option<&str>)]) -> Result<Config, RunnerError> {
        let mut env: HashMap<&str, String> = [
            ("STRATO_OPERATION_ID", op),
            ("STRATO_FENCING_TOKEN", "3"),
            ("STRATO_RUN_PROOF", "p"),
            ("STRATO_RESOURCE_PREFIX", "dev"),
            (
                "STRATO_ENGINE_ROLE_ARN",
                "arn:aws:iam::123456789012:role/dev-runner-engine",
            ),
            (
                "STRATO_STATE_ROLE_ARN",
                "arn:aws:iam::123456789012:role/dev-runner-state",
            ),
        ]
        .map(|(k, v)| (k, v.to_owned()))
        .into();
        for (k, v) in changes {
            match v {
                Some(v) => env.insert(k, (*v).to_owned()),
                None => env.remove(k),
            };
        }
        Config::from_lookup(|k| env.get(k).cloned())
    }

    #[test]
    fn missing_and_malformed_variables_are_named() {
        let err = Config::from_lookup(|_| None).unwrap_err();
        assert!(err.to_string().contains("STRATO_OPERATION_ID"), "{err}");
        let op = OperationId::generate().to_string();
        let err = config(&op, &[("STRATO_FENCING_TOKEN", Some("x"))]).unwrap_err();
        assert!(err.to_string().contains("STRATO_FENCING_TOKEN"), "{err}");
        let err = config(&op, &[("STRATO_RUN_PROOF", None)]).unwrap_err();
        assert!(err.to_string().contains("STRATO_RUN_PROOF"), "{err}");
        let err = config(&op, &[("STRATO_TIME_LIMIT_SECS", Some("soon"))]).unwrap_err();
        assert!(err.to_string().contains("STRATO_TIME_LIMIT_SECS"), "{err}");
        let cfg = config(&op, &[]).unwrap();
        assert_eq!(cfg.fencing_token, 3);
        assert_eq!(cfg.time_limit, Duration::from_secs(1800));
        assert_eq!(cfg.terraform, PathBuf::from("tofu"));
        assert_eq!(
            cfg.agent_image,
            format!("ghcr.io/strato-dev/strato-agent:{}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(cfg.agent_install_wait, Duration::from_secs(300));
        assert_eq!(cfg.kube_override, None);
    }

    #[test]
    fn the_emulators_kube_api_is_set_whole_or_not_at_all() {
        let op = OperationId::generate().to_string();
        let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let set = config(
            &op,
            &[
                ("STRATO_KUBE_ENDPOINT", Some("https://127.0.0.1:6443/")),
                ("STRATO_KUBE_CA_PEM", Some(pem)),
            ],
        )
        .unwrap();
        let k = set.kube_override.unwrap();
        assert_eq!(k.endpoint, "https://127.0.0.1:6443");
        assert_eq!(k.ca_pem, pem.as_bytes());
        for half in [
            vec![("STRATO_KUBE_ENDPOINT", Some("https://127.0.0.1:6443"))],
            vec![("STRATO_KUBE_CA_PEM", Some(pem))],
            vec![
                ("STRATO_KUBE_ENDPOINT", Some("http://127.0.0.1:6443")),
                ("STRATO_KUBE_CA_PEM", Some(pem)),
            ],
        ] {
            let err = config(&op, &half).unwrap_err().to_string();
            assert!(
                err.contains("STRATO_KUBE_ENDPOINT") && err.contains("STRATO_KUBE_CA_PEM"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_creates_stages_leave_the_cleanup_reserve_of_the_time_limit() {
        let op = OperationId::generate().to_string();
        let cfg = |limit: &str, reserve: Option<&str>| {
            let changes = [
                ("STRATO_TIME_LIMIT_SECS", Some(limit)),
                ("STRATO_CLEANUP_RESERVE_SECS", reserve),
            ];
            config(&op, &changes).unwrap()
        };
        assert_eq!(cfg("1800", None).stage_time_limit(), Duration::from_secs(1500));
        // The reserve never takes more than half the limit.
        assert_eq!(cfg("60", None).stage_time_limit(), Duration::from_secs(30));
        assert_eq!(cfg("80", Some("30")).stage_time_limit(), Duration::from_secs(50));
        assert_eq!(cfg("80", Some("60")).stage_time_limit(), Duration::from_secs(40));
        assert_eq!(cfg("80", Some("0")).stage_time_limit(), Duration::from_secs(80));
    }
}
