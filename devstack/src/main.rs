//! `strato-devstack`: the whole of Strato on one machine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use strato_devstack::{Devstack, DevstackConfig};

#[derive(Parser)]
#[command(
    version,
    about = "Strato on one machine: moto, API Gateway, SQS triggers, schedules and Fargate emulated"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    opts: Opts,
}

#[derive(clap::Args)]
struct Opts {
    /// Use this AWS endpoint (a running moto) instead of starting one.
    #[arg(long, env = "AWS_ENDPOINT_URL", global = true)]
    aws_endpoint: Option<String>,
    /// Prefix of every table, queue and bucket.
    #[arg(
        long,
        env = "STRATO_RESOURCE_PREFIX",
        default_value = "strato-dev",
        global = true
    )]
    prefix: String,
    /// Address of the HTTP API.
    #[arg(
        long,
        env = "STRATO_DEVSTACK_HTTP",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    http: SocketAddr,
    /// Address of the WebSocket API (and its `@connections` management API).
    #[arg(
        long,
        env = "STRATO_DEVSTACK_WS",
        default_value = "127.0.0.1:8081",
        global = true
    )]
    ws: SocketAddr,
    /// HS256 secret for bearer tokens (random per run when unset).
    #[arg(long, env = "STRATO_JWT_SECRET", hide_env_values = true, global = true)]
    jwt_secret: Option<String>,
    /// Static token file: one `TOKEN TENANT [SUBJECT]` per line.
    #[arg(long, env = "STRATO_DEVSTACK_TOKENS", global = true)]
    token_file: Option<PathBuf>,
    /// The JWT claim holding the tenant id.
    #[arg(long, env = "STRATO_TENANT_CLAIM", default_value = "tenant_id", global = true)]
    tenant_claim: String,
    /// The template catalog (`catalog/` and `modules/`).
    #[arg(long, env = "STRATO_TEMPLATES", global = true)]
    templates: Option<PathBuf>,
    /// The binary each emulated Fargate task runs (default: strato-runner next to this binary, built first
    /// if its sources changed). Given, it is used as it is: nothing is built.
    #[arg(long, env = "STRATO_DEVSTACK_RUNNER", global = true)]
    runner: Option<PathBuf>,
    /// Seconds between SIGTERM and SIGKILL when a task is stopped.
    #[arg(long, default_value_t = 30, global = true)]
    stop_timeout: u64,
    /// Do not limit a runner's address space to its task's memory.
    #[arg(long, global = true)]
    no_memory_limit: bool,
    /// Keep task working directories here (default: a temporary directory removed at exit).
    #[arg(long, env = "STRATO_DEVSTACK_WORK_DIR", global = true)]
    work_dir: Option<PathBuf>,
    /// The built web console to serve at the HTTP address (default: console/dist of the workspace).
    #[arg(long, env = "STRATO_CONSOLE_DIR", global = true)]
    console_dir: Option<PathBuf>,
    /// Run on a deployment of infra/ applied into the emulator at --aws-endpoint: the file holds its
    /// `terraform output -json` (nothing is created; prefix and region come from it).
    #[arg(long, env = "STRATO_DEVSTACK_DEPLOYMENT", global = true)]
    deployment: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Start the stack and run until Ctrl-C; prints the endpoints and a token.
    Up {
        /// Also write the api function's environment for this stack to FILE (dotenv, mode 0600, holds the
        /// dev secrets), for `cargo lambda watch --env-file FILE`.
        #[arg(long, value_name = "FILE")]
        env_file: Option<PathBuf>,
        /// The `strato` CLI profile to write (endpoints and the demo tenant's token); default: the
        /// stack's --prefix (`strato-dev`), so each stack has its own.
        #[arg(long, value_name = "NAME")]
        profile_name: Option<String>,
    },
    /// Start the stack and walk a cluster through its life (create, logs, outputs, drift check, delete).
    /// The terminal shows the tour only; the components' logs go to a file (its path is printed).
    Demo {
        /// Show the components' logs inline too.
        #[arg(long, short = 'v')]
        verbose: bool,
    },
    /// Publish the template catalog (every version under <templates>/catalog) to a running Strato through
    /// its operator API (`--api` and an operator token in STRATO_TOKEN; for a devstack, minted from
    /// STRATO_JWT_SECRET when STRATO_TOKEN is unset). A version the API already has is kept (versions are
    /// immutable). Nothing else is started.
    Publish {
        /// The API's base URL (e.g. https://api.strato.example.com).
        #[arg(long, env = "STRATO_API_URL", required_unless_present = "direct")]
        api: Option<String>,
        /// Instead of the API, write straight into the table and bucket named by --prefix with the AWS
        /// environment's credentials (or at AWS_ENDPOINT_URL): a new deployment's first catalog, before
        /// any operator identity exists.
        #[arg(long, conflicts_with = "api")]
        direct: bool,
    },
    /// Print a bearer token for a tenant (needs the same STRATO_JWT_SECRET as the running stack).
    Token {
        tenant: String,
        #[arg(long, default_value_t = 12)]
        hours: u64,
        /// The token's scopes, space-separated: `clusters:read` (a viewer), `clusters:write`, `admin`.
        #[arg(long, default_value = strato_devstack::auth::DEV_SCOPE)]
        scope: String,
    },
    /// Print the platform operator's bearer token (no tenant, `platform:admin`: the /v1/admin routes).
    OperatorToken {
        #[arg(long, default_value_t = 12)]
        hours: u64,
    },
}

fn config(o: &Opts) -> anyhow::Result<DevstackConfig> {
    let deployment = match &o.deployment {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let outputs: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
            Some(strato_devstack::Deployment::from_outputs(&outputs)?)
        }
        None => None,
    };
    let mut c = DevstackConfig {
        deployment,
        aws_endpoint: o.aws_endpoint.clone().filter(|e| !e.is_empty()),
        prefix: o.prefix.clone(),
        http_addr: o.http,
        ws_addr: o.ws,
        jwt_secret: o.jwt_secret.clone(),
        token_file: o.token_file.clone(),
        tenant_claim: o.tenant_claim.clone(),
        runner_grace: Duration::from_secs(o.stop_timeout),
        enforce_memory: !o.no_memory_limit,
        keep_task_dirs: o.work_dir.is_some(),
        work_dir: o.work_dir.clone(),
        ..DevstackConfig::default()
    };
    if let Some(dir) = &o.console_dir {
        c.console_dir = Some(dir.clone());
    }
    if let Some(t) = &o.templates {
        c.templates_root = Some(t.clone());
    }
    if let Some(r) = &o.runner {
        c.runner = r.clone();
    }
    Ok(c)
}

/// `cargo run -p strato-devstack -- demo` builds only devstack; the runner each emulated Fargate task runs is
/// a separate binary. Build it next to this one (same profile and target directory) unless `--runner` named
/// one: cargo does nothing when it is up to date, and a runner left from older sources would read what this
/// devstack writes with older types (after a `git pull`, a "malformed" template at `prepare`). A named
/// runner is used as given: a caller that built it (a test under `cargo nextest run --workspace`) would
/// otherwise pay for a `-p strato-runner` build, whose features differ from the workspace build's and so
/// recompile the runner's dependency graph (minutes of CPU the first time on a clone).
fn ensure_runner(c: &DevstackConfig, named: bool) -> anyhow::Result<()> {
    let default = strato_devstack::stack::default_runner_path();
    if named {
        anyhow::ensure!(
            c.runner.exists(),
            "the runner binary {} does not exist",
            c.runner.display()
        );
        return Ok(());
    }
    let dir = default.parent().context("runner directory")?;
    let release = dir.file_name().is_some_and(|n| n == "release");
    let target = dir.parent().context("target directory")?;
    eprintln!("building strato-runner (if its sources changed)…");
    let mut cmd = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "-q", "-p", "strato-runner", "--bin", "strato-runner"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(strato_devstack::stack::workspace_root());
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().context("running cargo to build strato-runner")?;
    anyhow::ensure!(status.success(), "building strato-runner failed ({status})");
    Ok(())
}

/// `strato-devstack publish --api URL`: each catalog version through the operator's publish route.
async fn publish_through_api(o: &Opts, api: &str) -> anyhow::Result<()> {
    let token = match std::env::var("STRATO_TOKEN").ok().filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => {
            let secret = o.jwt_secret.as_deref().context(
                "an operator token is needed: STRATO_TOKEN (or, for a devstack, STRATO_JWT_SECRET to mint one)",
            )?;
            strato_devstack::auth::mint_operator(secret.as_bytes(), "dev-operator", Duration::from_secs(600))
        }
    };
    let root = config(o)?
        .templates_root
        .context("no template catalog (--templates)")?;
    let dirs = strato_devstack::stack::catalog_dirs(Some(&root), &[]);
    anyhow::ensure!(
        !dirs.is_empty(),
        "no template found under {}/catalog",
        root.display()
    );
    let client = strato_cli::api::Api::new(api, Some(token))?;
    let out = strato_devstack::stack::publish_through_api(&client, &dirs).await;
    for (name, version) in &out.published {
        println!("published {name}@{version}");
    }
    for (name, version) in &out.kept {
        println!("already published {name}@{version} (versions are immutable: a change is a new version)");
    }
    not_published(&out.failed)
}

/// Each template that was not published, and why; an error when there is one.
fn not_published(failed: &std::collections::BTreeMap<String, String>) -> anyhow::Result<()> {
    for (dir, reason) in failed {
        eprintln!("NOT published {dir}: {reason}");
    }
    anyhow::ensure!(
        failed.is_empty(),
        "{} template(s) not published (see above)",
        failed.len()
    );
    Ok(())
}

/// `strato-devstack publish --direct`: the catalog, and only the catalog, straight into a stack's table and
/// bucket.
async fn publish(o: &Opts) -> anyhow::Result<()> {
    let names = strato_aws::resources::Names::new(o.prefix.clone()).context("--prefix")?;
    let aws = match o.aws_endpoint.as_deref().filter(|e| !e.is_empty()) {
        Some(endpoint) => {
            let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
            strato_aws::aws::AwsClients::for_endpoint(endpoint, &region).await
        }
        None => strato_aws::aws::AwsClients::from_env().await,
    };
    let root = config(o)?
        .templates_root
        .context("no template catalog (--templates)")?;
    let out = strato_devstack::stack::publish_catalog(&aws, &names, Some(&root), &[]).await;
    for (name, version) in &out.published {
        println!("published {name}@{version}");
    }
    not_published(&out.failed)?;
    anyhow::ensure!(
        !out.published.is_empty(),
        "no template found under {}/catalog",
        root.display()
    );
    Ok(())
}

async fn wait_for_stop() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

/// The environment the api binary needs to serve this stack's store under `cargo lambda watch`: the AWS
/// endpoint and resource prefix, and the secrets the in-process api uses (so tickets it signs are the ones
/// devstack's WebSocket API accepts). Only the api: the SQS-fed functions already run inside devstack.
fn lambda_env(stack: &Devstack) -> String {
    let env = &stack.env;
    let vars = [
        ("AWS_ENDPOINT_URL", stack.endpoints.aws.as_str()),
        ("AWS_REGION", env.region.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("STRATO_RESOURCE_PREFIX", env.names.prefix()),
        ("STRATO_TENANT_CLAIM", env.auth.tenant_claim()),
        ("STRATO_JWT_SECRET", stack.jwt_secret()),
        ("STRATO_AGENT_TOKEN_SECRET", env.agent_token_secret.as_str()),
        (strato_domain::webhook::ALLOW_HTTP_ENV, "1"),
        (strato_domain::webhook::ALLOW_LOOPBACK_ENV, "1"),
    ];
    vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

fn write_env_file(path: &std::path::Path, stack: &Devstack) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(lambda_env(stack).as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The stack's profile of the `strato` CLI (endpoints and the demo tenant's token), so
/// `strato --profile NAME …` works at once. Not fatal: the stack is useful without it.
fn write_cli_profile(stack: &Devstack, name: &str) {
    let e = &stack.endpoints;
    let profile = strato_cli::config::Profile {
        endpoint: e.http_api.clone(),
        ws_endpoint: e.websocket.clone(),
    };
    match strato_devstack::cli_profile::write(name, profile, &stack.token("demo")) {
        Ok(w) => {
            println!(
                "CLI profile '{name}' written to {} — try: strato --profile {name} templates list",
                w.dir.display()
            );
            if let Some(old) = w.replaced {
                println!(
                    "  (it replaced the '{name}' profile of {old}: another stack with this prefix? \
                     give each its own --profile-name)"
                );
            }
            println!();
        }
        Err(e) => eprintln!("could not write the CLI profile '{name}': {e}"),
    }
}

/// Where the demo's component logs go: `target/strato-demo.log` in the workspace (next to the build), else
/// the temporary directory.
fn demo_log_file() -> anyhow::Result<(PathBuf, std::fs::File)> {
    let dir = strato_devstack::stack::workspace_root().join("target");
    let dir = if dir.is_dir() { dir } else { std::env::temp_dir() };
    let path = dir.join("strato-demo.log");
    let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    Ok((path, file))
}

/// Text logs to stderr (or to `file`, without colour), and spans to the stack's X-Ray daemon.
fn init_tracing(file: Option<&std::fs::File>) -> anyhow::Result<()> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| "info,aws_config=warn,aws_smithy_runtime=warn,hyper=warn".into())
    };
    let text = match file {
        Some(f) => {
            let f = f.try_clone().context("the demo's log file")?;
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .with_filter(filter())
                .boxed()
        }
        None => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter())
            .boxed(),
    };
    // The stack's X-Ray daemon: GET /traces/{operation_id}/xray serves what it received.
    let xray = strato_devstack::xray::collector()
        .and_then(|c| strato_telemetry::xray::XrayLayer::new(c.addr(), "devstack"))
        .map(|l| l.with_filter(strato_telemetry::xray::filter()));
    tracing_subscriber::registry().with(text).with(xray).init();
    Ok(())
}

/// How to try the token clouds' stand-ins by hand on this stack, or why they are not there.
fn other_clouds_banner(
    stack: &Devstack,
    profile: &str,
    clouds: Result<&[&strato_devstack::demo_cloud::TokenCloud], &String>,
) {
    let clouds = match clouds {
        Ok(c) => c,
        Err(why) => {
            println!("Other clouds' stand-ins: not here ({why})\n");
            return;
        }
    };
    println!(
        "Other clouds' stand-ins (the null provider plays the cloud; the state goes to a bucket of yours on moto):"
    );
    for c in clouds {
        println!(
            "  {}@1.0.0: the emulated {} API accepts the token {}",
            c.template, c.provider, c.token
        );
    }
    if let Some(c) = clouds.first() {
        let p = c.provider;
        println!(
            "  e.g.  aws --endpoint-url {} s3api create-bucket --bucket my-state",
            stack.endpoints.aws
        );
        println!(
            "        printf '%s\\n%s\\n' {} {} | strato --profile {profile} cloud-tokens set {p} --storage-access-key-id {}",
            c.token, c.secret, c.key_id
        );
        println!(
            "        strato --profile {profile} clusters create my-{p} -t {} --provider {p} --region {} --target-state-bucket my-state --target-region {} --wait",
            c.template, c.region, c.region
        );
    }
    println!();
}

fn banner(stack: &Devstack) {
    let e = &stack.endpoints;
    println!();
    println!("Strato devstack is up");
    println!("  HTTP API        {}", e.http_api);
    match &e.websocket {
        Some(ws) => println!("  WebSocket API   {ws}"),
        None => println!("  WebSocket API   (not available in this build)"),
    }
    println!("  AWS (moto)      {}", e.aws);
    println!("  resource prefix {}", stack.env.names.prefix());
    println!(
        "  templates       {}",
        if stack.published.is_empty() {
            "none published".to_owned()
        } else {
            stack
                .published
                .iter()
                .map(|(n, v)| format!("{n}@{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    println!();
    let console = e.http_api.clone() + "/";
    match stack.console_served() {
        true => println!(
            "Web console (logs in as tenant 'demo'):\n  {console}#token={}\nAs the platform operator (tenants, every tenant's clusters):\n  {console}#token={}\n",
            stack.token("demo"),
            stack.operator_token()
        ),
        false => println!("Web console: not built (cd console && npm ci && npm run build), then restart\n"),
    }
    println!("Dev token for tenant 'demo' (valid 12 h):");
    println!("  {}", stack.token("demo"));
    println!();
    println!(
        "Tokens are HS256 JWTs signed with STRATO_JWT_SECRET={}",
        stack.jwt_secret()
    );
    println!("Mint one for another tenant with:");
    println!(
        "  STRATO_JWT_SECRET={} strato-devstack token <tenant>",
        stack.jwt_secret()
    );
    println!();
    println!(
        "Try: curl -H \"Authorization: Bearer $TOKEN\" {}/v1/templates",
        e.http_api
    );
    println!("Ctrl-C stops everything.");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The demo's terminal is the tour; its components log to a file unless -v.
    let log_file = match &cli.command {
        Command::Demo { verbose: false } => Some(demo_log_file()?),
        _ => None,
    };
    init_tracing(log_file.as_ref().map(|(_, f)| f))?;
    if let Some((path, _)) = &log_file {
        println!(
            "Component logs (functions, runners, emulators): {}\n",
            path.display()
        );
    }
    match cli.command {
        Command::OperatorToken { hours } => {
            let secret = cli
                .opts
                .jwt_secret
                .context("STRATO_JWT_SECRET (or --jwt-secret) must be the running stack's secret")?;
            let token = strato_devstack::auth::mint_operator(
                secret.as_bytes(),
                "dev-operator",
                Duration::from_secs(hours * 3600),
            );
            println!("{token}");
            Ok(())
        }
        Command::Token { tenant, hours, scope } => {
            let secret = cli
                .opts
                .jwt_secret
                .context("STRATO_JWT_SECRET (or --jwt-secret) must be the running stack's secret")?;
            let token = strato_devstack::auth::mint_scoped(
                secret.as_bytes(),
                &cli.opts.tenant_claim,
                &tenant,
                &format!("dev-{tenant}"),
                Duration::from_secs(hours * 3600),
                &scope,
            );
            println!("{token}");
            Ok(())
        }
        Command::Publish { api: Some(api), .. } => publish_through_api(&cli.opts, &api).await,
        Command::Publish { .. } => publish(&cli.opts).await,
        Command::Up {
            env_file,
            profile_name,
        } => {
            let mut config = config(&cli.opts)?;
            ensure_runner(&config, cli.opts.runner.is_some())?;
            // DigitalOcean's and Linode's stand-ins, for a tenant to try by hand (the banner says how).
            let token_clouds = [
                &strato_devstack::demo_cloud::DIGITALOCEAN,
                &strato_devstack::demo_cloud::LINODE,
            ];
            let others = strato_devstack::demo_cloud::prepare(&mut config, &token_clouds).await;
            let stack = Devstack::start(config, Vec::new())
                .await
                .context("starting devstack")?;
            banner(&stack);
            let name =
                strato_devstack::cli_profile::profile_name(stack.env.names.prefix(), profile_name.as_deref());
            other_clouds_banner(&stack, &name, others.as_ref().map(|_| &token_clouds[..]));
            write_cli_profile(&stack, &name);
            if let Some(path) = &env_file {
                write_env_file(path, &stack)?;
                println!(
                    "The api function's environment is in {} (cargo lambda watch --env-file {0})",
                    path.display()
                );
            }
            wait_for_stop().await;
            println!("\n{}", strato_devstack::metrics::store().summary(24));
            eprintln!("stopping: runners get SIGTERM, then moto stops…");
            stack.shutdown(Duration::from_secs(10)).await;
            Ok(())
        }
        Command::Demo { .. } => {
            let mut config = config(&cli.opts)?;
            ensure_runner(&config, cli.opts.runner.is_some())?;
            // The step on another cloud: DigitalOcean's stand-in, where this machine's engine can keep its
            // state in an S3-compatible bucket; the emulated cloud's endpoints live as long as the stack.
            let cloud = &strato_devstack::demo_cloud::DIGITALOCEAN;
            let (other_cloud, _clouds) =
                match strato_devstack::demo_cloud::prepare(&mut config, &[cloud]).await {
                    Ok(clouds) => (Ok(cloud), Some(clouds)),
                    Err(why) => (Err(why), None),
                };
            let stack = Devstack::start(config, Vec::new())
                .await
                .context("starting devstack")?;
            let options = strato_devstack::client::DemoOptions {
                quiet: std::env::var_os("STRATO_DEMO_QUIET").is_some(),
                other_cloud: Some(other_cloud),
            };
            let result = strato_devstack::client::demo(&stack, options).await;
            stack.shutdown(Duration::from_secs(10)).await;
            result.context("demo")
        }
    }
}
