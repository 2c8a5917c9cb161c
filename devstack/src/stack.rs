//! Starting and stopping the whole stack.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_ecs::types::{Compatibility, ContainerDefinition, NetworkMode};
use aws_sdk_sqs::types::QueueAttributeName;
use strato_aws::aws::AwsClients;
use strato_aws::queues::QueueUrls;
use strato_aws::resources::{self, Names};
use strato_calls::recorder::CallRecorder;
use strato_dispatcher::RunnerSettings;
use strato_domain::run_proof::RunProofKey;
use strato_testbed::{MotoServer, Tools};
use tokio::sync::watch;

use crate::auth::Authenticator;
use crate::cluster_agents::ClusterAgents;
use crate::error::DevstackError;
use crate::fargate::{FargateConfig, FargateStats};
use crate::registry::{Plugin, Registry};

mod apis;
pub mod config;
mod deployment;
mod recording;
mod setup;

use apis::{serve_http_api, websocket_api};
pub use config::{
    DevstackConfig, RUNNER_CONTAINER, StackEnv, default_runner_path, sibling_binary, workspace_root,
};
pub use deployment::{Applied, Deployment};
pub use setup::{Published, PublishedThroughApi, catalog_dirs, publish_catalog, publish_through_api};
use setup::{ecs_setup, publish_templates, runner_env};

#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Base URL of the HTTP API, e.g. `http://127.0.0.1:8080`.
    pub http_api: String,
    /// `ws://…` of the WebSocket API (`?token=<JWT>`, then `subscribe` frames).
    pub websocket: Option<String>,
    /// The AWS endpoint (moto).
    pub aws: String,
}

pub struct Devstack {
    pub env: Arc<StackEnv>,
    pub endpoints: Endpoints,
    pub fargate_stats: Arc<FargateStats>,
    /// Templates published at start: (name, version).
    pub published: Vec<(String, String)>,
    /// The faults being injected (what was injected so far), when the config asked for them.
    pub chaos: Option<crate::chaos::ChaosState>,
    /// The emulated clusters of agent templates and their agents (stop and restart an agent here).
    pub agents: Arc<ClusterAgents>,
    jwt_secret: String,
    console_served: bool,
    stop_intake: watch::Sender<bool>,
    stop_fargate: watch::Sender<bool>,
    stop_consumers: watch::Sender<bool>,
    intake_tasks: Vec<tokio::task::JoinHandle<()>>,
    fargate_task: Option<tokio::task::JoinHandle<()>>,
    agents_task: Option<tokio::task::JoinHandle<()>>,
    consumer_tasks: Vec<tokio::task::JoinHandle<()>>,
    moto: Option<MotoServer>,
    ws: Option<crate::apigw_ws::WsApi>,
    _work: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Devstack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Devstack")
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, DevstackError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DevstackError::step("background step", e))
}

impl Devstack {
    /// Starts everything (see the crate docs); `plugins` add functions built elsewhere.
    pub async fn start(config: DevstackConfig, plugins: Vec<Box<dyn Plugin>>) -> Result<Self, DevstackError> {
        let t0 = Instant::now();
        let tools: &'static Tools = blocking(strato_testbed::tools)
            .await?
            .map_err(|e| DevstackError::TestBed(e.to_string()))?;
        tracing::info!(tools = %tools.root.display(), "test bed ready");
        let mut config = setup::choose_engine(config).await?;
        let (moto, endpoint) = match &config.aws_endpoint {
            Some(e) => (None, e.trim_end_matches('/').to_owned()),
            None => {
                let m = blocking(move || MotoServer::start(tools))
                    .await?
                    .map_err(|e| DevstackError::TestBed(e.to_string()))?;
                let e = m.endpoint.clone();
                (Some(m), e)
            }
        };
        tracing::info!(%endpoint, "AWS emulator");
        if let Some(d) = &config.deployment {
            config.prefix = d.prefix.clone();
            config.region = d.region.clone();
        }
        let (work, work_dir) = work_dir(&config)?;
        let (env, published, jwt_secret) = stack_env(&config, tools, endpoint, work_dir.clone()).await?;
        // The functions' metrics go to devstack's store from their first invocation on.
        crate::metrics::store();
        let mut registry = Registry::builtin(&env).await?;
        let ws_api = websocket_api(&config, &env, &jwt_secret, &mut registry).await?;
        let ws_url = ws_api.ws_url();
        for p in plugins {
            p.install(&env, &mut registry).await?;
        }
        let chaos = registry.inject(config.chaos.clone());

        let (stop_intake, intake_rx) = watch::channel(false);
        let (stop_fargate, fargate_rx) = watch::channel(false);
        let (stop_consumers, consumers_rx) = watch::channel(false);
        let (http_addr, mut intake_tasks) =
            serve_http_api(&config, &env, &registry, &intake_rx, &ws_url).await?;
        let mut consumer_tasks = Vec::new();
        for (logical, mapping) in &registry.sqs {
            let queue = crate::sqs::QueueRef::resolve(
                &env.aws.sqs,
                logical,
                &env.names.queue(logical),
                &config.region,
            )
            .await?;
            // Jobs start tasks: stop taking them first. Events and logs keep flowing until the tasks are gone.
            let jobs = logical == "jobs";
            let rx = if jobs { &intake_rx } else { &consumers_rx }.clone();
            let handles = crate::sqs::spawn_mapping(env.aws.sqs.clone(), queue, mapping.clone(), rx);
            if jobs {
                &mut intake_tasks
            } else {
                &mut consumer_tasks
            }
            .extend(handles);
        }
        for rule in &registry.schedules {
            intake_tasks.push(crate::schedule::spawn_schedule(
                rule.clone(),
                config.region.clone(),
                intake_rx.clone(),
            ));
        }
        let fargate_stats = Arc::new(FargateStats::default());
        let agents = ClusterAgents::new(
            strato_aws::store::Store::new(env.aws.dynamodb.clone(), &env.names),
            config.agent_binary.clone(),
        );
        let agents_task = agents.spawn_reaper(fargate_rx.clone());
        let fargate_task = spawn_fargate(
            &config,
            &env,
            work_dir,
            (fargate_stats.clone(), agents.clone()),
            http_addr,
            fargate_rx,
        )
        .await?;
        let endpoints = Endpoints {
            http_api: format!("http://{http_addr}"),
            websocket: Some(ws_url),
            aws: env.endpoint.clone(),
        };
        tracing::info!(
            http_api = %endpoints.http_api,
            prefix = env.names.prefix(),
            runner = %config.runner.display(),
            templates = published.len(),
            startup_ms = t0.elapsed().as_millis() as u64,
            "devstack is up"
        );
        let console_served = config
            .console_dir
            .as_deref()
            .is_some_and(|d| d.join("index.html").is_file());
        Ok(Self {
            console_served,
            env,
            endpoints,
            fargate_stats,
            published,
            chaos,
            jwt_secret,
            stop_intake,
            stop_fargate,
            stop_consumers,
            intake_tasks,
            fargate_task: Some(fargate_task),
            agents_task: Some(agents_task),
            agents,
            consumer_tasks,
            moto,
            ws: Some(ws_api),
            _work: work,
        })
    }

    /// SIGKILLs the runner process of `operation_id`, as a crash or the host would (its Terraform goes with it
    /// when the task is torn down; nothing gets to clean up). Returns the runner's pid.
    pub fn kill_runner(&self, operation_id: &str) -> Result<u32, DevstackError> {
        let step = "killing a runner";
        let pid = self
            .fargate_stats
            .running_pid(operation_id)
            .ok_or_else(|| DevstackError::step(step, format!("no runner of {operation_id} is running")))?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .map_err(|e| DevstackError::step(step, format!("pid {pid}: {e}")))?;
        tracing::warn!(operation_id, pid, "devstack: runner killed (SIGKILL) on request");
        Ok(pid)
    }

    /// The HS256 secret tokens are signed with (a dev secret: print it for the user, never log it).
    /// Whether the web console is served at the HTTP API's address.
    pub fn console_served(&self) -> bool {
        self.console_served
    }

    pub fn jwt_secret(&self) -> &str {
        &self.jwt_secret
    }

    /// A bearer token for `tenant`, valid for 12 hours.
    pub fn token(&self, tenant: &str) -> String {
        self.env
            .auth
            .mint(tenant, &format!("dev-{tenant}"), Duration::from_secs(12 * 3600))
    }

    /// The platform operator's token (subject `dev-operator`), valid for 12 hours: the `/v1/admin` routes'.
    pub fn operator_token(&self) -> String {
        self.env
            .auth
            .mint_operator("dev-operator", Duration::from_secs(12 * 3600))
    }

    /// A token for `tenant` with only these scopes (space-separated), e.g. a viewer's `clusters:read`.
    pub fn token_scoped(&self, tenant: &str, scope: &str) -> String {
        self.env.auth.mint_scoped(
            tenant,
            &format!("dev-{tenant}"),
            Duration::from_secs(12 * 3600),
            scope,
        )
    }

    /// The public half of the runs' token-signing key (DER `SubjectPublicKeyInfo`, KMS `GetPublicKey`), for
    /// an emulated cloud to check run tokens' signatures with; only with [`DevstackConfig::oidc_issuer`].
    pub async fn oidc_public_key(&self) -> Result<Vec<u8>, DevstackError> {
        use strato_domain::identity::Signer as _;
        strato_aws::ports::KmsSigner::new(&self.env.aws.kms, self.env.names.oidc_key_alias())
            .public_key_der()
            .await
            .map_err(|e| DevstackError::step("reading the token-signing key's public half", e))
    }

    /// Stops in an order that leaves nothing behind: no new requests, jobs or schedules; then every runner
    /// (SIGTERM, grace, SIGKILL) with its STOPPED event; then the events those produce are applied by
    /// `status` (so cluster locks are released), up to `drain`; then the consumers; then moto.
    pub async fn shutdown(mut self, drain: Duration) {
        tracing::info!("devstack: stopping");
        let _ = self.stop_intake.send(true);
        for t in self.intake_tasks.drain(..) {
            let _ = t.await;
        }
        let _ = self.stop_fargate.send(true);
        if let Some(t) = self.fargate_task.take() {
            let _ = t.await;
        }
        // The clusters' agents go with the runners.
        if let Some(t) = self.agents_task.take() {
            let _ = t.await;
        }
        let deadline = Instant::now() + drain;
        while Instant::now() < deadline && queue_depth(&self.env.aws.sqs, &self.env.queues.events).await > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let _ = self.stop_consumers.send(true);
        for t in self.consumer_tasks.drain(..) {
            let _ = t.await;
        }
        if let Some(ws) = self.ws.take() {
            ws.shutdown().await;
        }
        if let Some(m) = self.moto.take() {
            let _ = blocking(move || drop(m)).await;
        }
        tracing::info!("devstack: stopped");
    }
}

/// The runners' work directory: the configured one, or a temporary one removed with the stack.
fn work_dir(config: &DevstackConfig) -> Result<(Option<tempfile::TempDir>, PathBuf), DevstackError> {
    match &config.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(DevstackError::io(format!("creating {}", d.display())))?;
            Ok((None, d.clone()))
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("strato-devstack-")
                .tempdir()
                .map_err(DevstackError::io("creating a work directory"))?;
            let p = t.path().to_owned();
            Ok((Some(t), p))
        }
    }
}

/// The AWS side (resources, published catalog, the runner's ECS cluster) and what handlers are built from.
/// The stack's resources and settings: created here, or read from the deployment (see [`Deployment`]).
/// Also returns the published templates and the bearer-token secret.
async fn stack_env(
    config: &DevstackConfig,
    tools: &'static Tools,
    endpoint: String,
    work_dir: PathBuf,
) -> Result<(Arc<StackEnv>, Vec<(String, String)>, String), DevstackError> {
    let names = Names::new(config.prefix.clone()).map_err(|e| DevstackError::Config {
        field: "prefix (STRATO_RESOURCE_PREFIX)",
        reason: e.to_string(),
    })?;
    let aws = AwsClients::for_endpoint(&endpoint, &config.region).await;
    let http = reqwest::Client::new();
    let ecs = aws_sdk_ecs::Client::new(&aws.config);
    let (runner_settings, applied) = match &config.deployment {
        None => {
            resources::create_all(&aws, &names).await?;
            if config.oidc_issuer.is_some() {
                resources::create_signing_key(&aws, &names).await?;
            }
            (
                ecs_setup(&ecs, &http, &endpoint, &config.region, &names).await?,
                None,
            )
        }
        Some(d) => {
            d.check_names(&names)?;
            let applied = deployment::read_applied(d, &aws, &ecs, &http, &endpoint).await?;
            (d.runner.clone(), Some(applied))
        }
    };
    crate::moto_ctl::ecs_manual_progression(&http, &endpoint).await?;
    let published = publish_templates(&aws, &names, config).await;
    let queues = QueueUrls::resolve(&aws.sqs, &names).await?;
    // On a deployment, bearer tokens are signed with the key its ws function checks (Secrets Manager's).
    let jwt_secret = match applied.as_ref().and_then(|a| a.get("ws", "STRATO_JWT_SECRET")) {
        Some(s) => s,
        None => config
            .jwt_secret
            .clone()
            .unwrap_or_else(crate::auth::random_secret),
    };
    let run_proofs = match applied
        .as_ref()
        .and_then(|a| a.get("status", "STRATO_RUN_PROOF_SECRET"))
    {
        Some(s) => s,
        None => crate::auth::random_secret(),
    };
    let agent_token_secret = applied
        .as_ref()
        .and_then(|a| a.get("api", "STRATO_AGENT_TOKEN_SECRET"))
        .or_else(|| config.agent_token_secret.clone())
        .unwrap_or_else(crate::auth::random_secret);
    let mut auth = Authenticator::new(jwt_secret.as_bytes().to_vec(), config.tenant_claim.clone());
    if let Some(f) = &config.token_file {
        auth = auth.with_token_file(f).map_err(|e| DevstackError::Config {
            field: "token file",
            reason: e.to_string(),
        })?;
    }
    let env = Arc::new(StackEnv {
        endpoint,
        region: config.region.clone(),
        names: names.clone(),
        aws,
        ecs,
        queues,
        auth,
        runner_settings,
        agent_token_secret,
        run_proofs: RunProofKey::new(run_proofs.into_bytes())
            .map_err(|e| DevstackError::step("making the run-proof key", e))?,
        sqs_concurrency: config.sqs_concurrency,
        tools,
        http,
        work_dir,
        drift_rate: config.drift_rate,
        sweep_rate: config.sweep_rate,
        sweep_grace: config.sweep_grace,
        agent_stale: config.agent_stale,
        agent_heartbeat: config.agent_heartbeat,
        recorder: config
            .record_aws_calls
            .then(|| CallRecorder::new("devstack", names.clone())),
        applied,
        oidc_issuer: config.oidc_issuer.clone(),
    });
    Ok((env, published, jwt_secret))
}

/// The Fargate emulation: one runner process per task of the runner cluster.
async fn spawn_fargate(
    config: &DevstackConfig,
    env: &StackEnv,
    work_dir: PathBuf,
    (stats, agents): (Arc<FargateStats>, Arc<ClusterAgents>),
    http_addr: std::net::SocketAddr,
    stop: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, DevstackError> {
    // One unpacked provider for every runner's `init`, instead of 170 MB unpacked per run.
    let tools = env.tools;
    let plugin_cache = match blocking(move || tools.shared_plugin_cache()).await? {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(error = %e, "no shared provider cache; each runner unpacks the provider");
            None
        }
    };
    let fargate = FargateConfig {
        cluster: env.runner_settings.cluster.clone(),
        runner: config.runner.clone(),
        work_dir,
        env: with_task_definition_env(
            env,
            config,
            with_control_plane_url(
                config,
                runner_env(env, config, plugin_cache.as_deref()),
                http_addr,
            ),
        ),
        events_queue_url: env.queues.events.clone(),
        region: config.region.clone(),
        grace: config.runner_grace,
        enforce_memory: config.enforce_memory,
        poll_interval: config.fargate_poll,
        keep_task_dirs: config.keep_task_dirs,
    };
    Ok(crate::fargate::spawn_with(
        env.ecs.clone(),
        env.aws.sqs.clone(),
        fargate,
        stats,
        stop,
        Some(agents),
    ))
}

/// The API agents report to (the managed `control_plane_url`): this stack's HTTP API, unless the config's
/// `runner_env` says otherwise (it comes later and wins).
fn with_control_plane_url(
    config: &DevstackConfig,
    mut out: Vec<(String, String)>,
    http_addr: std::net::SocketAddr,
) -> Vec<(String, String)> {
    let at = out.len().saturating_sub(config.runner_env.len());
    out.insert(
        at,
        ("STRATO_CONTROL_PLANE_URL".into(), format!("http://{http_addr}")),
    );
    out
}

/// On a deployment, the runner container's environment and secrets as its task definition gives them go
/// after devstack's own settings and before the config's `runner_env` (a test's overrides).
fn with_task_definition_env(
    env: &StackEnv,
    config: &DevstackConfig,
    mut out: Vec<(String, String)>,
) -> Vec<(String, String)> {
    if let Some(applied) = &env.applied {
        let at = out.len().saturating_sub(config.runner_env.len());
        out.splice(at..at, applied.runner_env.iter().cloned());
    }
    out
}

/// Visible + in-flight messages (0 when unknown: never block a shutdown on a failing call).
async fn queue_depth(sqs: &aws_sdk_sqs::Client, url: &str) -> u64 {
    let Ok(out) = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
    else {
        return 0;
    };
    out.attributes()
        .map(|a| a.values().filter_map(|v| v.parse::<u64>().ok()).sum())
        .unwrap_or(0)
}
