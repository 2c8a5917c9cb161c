//! `strato-agent run | probe | version`: the agent's loop, its liveness check, its version.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context;

fn main() -> ExitCode {
    let command = std::env::args().nth(1).unwrap_or_else(|| "run".into());
    match command.as_str() {
        "version" => {
            println!("strato-agent {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "probe" => {
            let file = std::env::var("STRATO_AGENT_ALIVE_FILE")
                .unwrap_or_else(|_| strato_agent::probe::DEFAULT_FILE.into());
            match strato_agent::probe::check(file.as_ref(), strato_agent::probe::MAX_AGE, SystemTime::now()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
        "run" => match run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("strato-agent: {e:#}");
                ExitCode::FAILURE
            }
        },
        other => {
            eprintln!("strato-agent: unknown command {other:?}; use `run`, `probe` or `version`");
            ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    // kube-rs and reqwest both use rustls on aws-lc-rs; one process-wide provider.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let settings = strato_agent::run::Settings::from_env(|k| std::env::var(k).ok())?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let kube = kube::Client::try_default()
            .await
            .context("connecting to the cluster's API (in-cluster config)")?;
        strato_agent::run::run(settings, kube).await?;
        Ok(())
    })
}
