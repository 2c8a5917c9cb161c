//! strato-runner: runs one operation (named by the container overrides) and exits 0 only after its final
//! event was sent.

use strato_aws::aws::AwsClients;
use strato_aws::calls::recorder::{CALL_LOG_ENV, CallRecorder};
use strato_runner::{Clients, Config, run_operation};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // Metrics as EMF lines on stdout (the logs are on stderr), every 30 s and at the end (docs/metrics.md).
    let emf = strato_aws::emf::Emf::install_flushing_every(std::time::Duration::from_secs(30));
    // Before anything secret is in memory: nothing the engine runs may read this process.
    if let Err(e) = strato_runner::engine::harden_runner_process() {
        tracing::warn!(error = %e, "could not make the runner process non-dumpable");
    }
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("strato-runner: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let aws = AwsClients::from_env().await;
    // Devstack's IAM check: every AWS call the runner makes, appended to the file the variable names.
    let recorder = std::env::var_os(CALL_LOG_ENV)
        .map(|path| CallRecorder::new("runner", cfg.names.clone()).appending_to(path.into()));
    let aws = match &recorder {
        Some(r) => aws.recorded(r),
        None => aws,
    };
    let mut clients = match Clients::new(aws, &cfg).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot reach the control plane's queues");
            return std::process::ExitCode::from(3);
        }
    };
    if let Some(r) = recorder {
        clients.secrets = aws_sdk_secretsmanager::Client::from_conf(
            aws_sdk_secretsmanager::config::Builder::from(&clients.aws.config)
                .interceptor(r)
                .build(),
        );
    }
    let result = run_operation(cfg, clients).await;
    emf.flush();
    match result {
        Ok(summary) => {
            tracing::info!(event = ?summary.final_event, last_log_seq = summary.last_log_seq, "final event sent");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(error = %e, "no final event sent");
            std::process::ExitCode::from(1)
        }
    }
}
