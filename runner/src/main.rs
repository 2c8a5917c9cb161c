//! strato-runner: runs one operation (named by the container overrides) and exits 0 only after its final
//! event was sent.

use strato_aws::aws::AwsClients;
use strato_calls::recorder::{CALL_LOG_ENV, CallRecorder};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::ENV_OPERATION_ID;
use strato_domain::telemetry::{self, ENV_CLUSTER_ID, ENV_TENANT_ID, ENV_TRACEPARENT, Traceparent, fields};
use strato_runner::{Clients, Config, aws, run_with};
use tracing::Instrument;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    strato_telemetry::init_runner_subscriber();
    // The run's root span, from the environment before anything else, so every line carries the operation
    // (the tenant and cluster are recorded once the operation is read) and the trace the dispatcher started.
    let parent = std::env::var(ENV_TRACEPARENT)
        .ok()
        .and_then(|v| v.parse::<Traceparent>().ok());
    let me = Traceparent::child_or_root(parent.as_ref());
    let span = telemetry::span("run", &me, parent.as_ref());
    // Only well-formed ids: these are for the log fields, and the operation record decides everything else.
    let ids: [(&str, &str, IdCheck); 3] = [
        (ENV_OPERATION_ID, fields::OPERATION_ID, valid::<OperationId>),
        (ENV_TENANT_ID, fields::TENANT_ID, valid::<TenantId>),
        (ENV_CLUSTER_ID, fields::CLUSTER_ID, valid::<ClusterId>),
    ];
    for (var, field, ok) in ids {
        if let Some(v) = std::env::var(var).ok().filter(|v| ok(v)) {
            telemetry::record(&span, field, &v);
        }
    }
    run(me).instrument(span).await
}

/// Whether an environment value is a well-formed id of some kind.
type IdCheck = fn(&str) -> bool;

fn valid<T: std::str::FromStr>(v: &str) -> bool {
    v.parse::<T>().is_ok()
}

async fn run(me: Traceparent) -> std::process::ExitCode {
    // Metrics as EMF lines on stdout (the logs are on stderr), every 30 s and at the end (docs/metrics.md).
    let emf = strato_telemetry::emf::Emf::install_flushing_every(std::time::Duration::from_secs(30));
    // Before anything secret is in memory: nothing the engine runs may read this process.
    if let Err(e) = strato_runner::engine::harden_runner_process() {
        tracing::warn!(error = %e, "could not make the runner process non-dumpable");
    }
    let cfg = match Config::from_env() {
        Ok(c) => Config {
            traceparent: Some(me),
            ..c
        },
        Err(e) => {
            eprintln!("strato-runner: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // The last resort against a wedged run: the process ends shortly after the hard deadline whatever it
    // is doing (`run_with` itself returns at the deadline while the runtime still schedules).
    strato_runner::liveness::exit_after(cfg.hard_deadline() + strato_runner::liveness::WATCHDOG_AFTER);
    let aws = AwsClients::from_env().await;
    // Devstack's IAM check: every AWS call the runner makes, appended to the file the variable names.
    let recorder = std::env::var_os(CALL_LOG_ENV)
        .map(|path| CallRecorder::new("runner", cfg.names.clone()).appending_to(path.into()));
    let aws = match &recorder {
        Some(r) => aws.intercepted(r),
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
    // The run on its AWS adapters, the engine process and the task's SIGTERM.
    let ports = aws::adapters(&cfg, clients);
    let result = run_with(cfg, ports).await;
    emf.flush();
    match result {
        Ok(summary) => {
            let ev = &summary.final_event;
            let error = match ev {
                strato_domain::messages::RunnerEvent::Failed { error, .. } => Some(error),
                _ => None,
            };
            // The event's kind and its error's category, never its payload (outputs, drift lists).
            tracing::info!(
                event = ev.kind(),
                error_category = error.map(|e| tracing::field::debug(e.category)),
                error_step = error.map(|e| e.step.as_str()),
                last_log_seq = summary.last_log_seq,
                "final event sent"
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e @ strato_runner::RunnerError::HardDeadline(_)) => {
            tracing::error!(error = %e, "no final event sent");
            // Not a return through the runtime's shutdown, which waits for blocking work that may be wedged.
            std::process::exit(strato_runner::liveness::EXIT_HARD_DEADLINE);
        }
        Err(e) => {
            tracing::error!(error = %e, "no final event sent");
            std::process::ExitCode::from(1)
        }
    }
}
