//! The built binary under a task stop: SIGTERM mid-apply interrupts Terraform gracefully, so no state lock
//! is left behind, the state keeps what was created, and a final event is still sent (exit 0).

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use strato_domain::ErrorCategory;
use support::{Bed, Job, the_failure, wait_for_log, wait_for_step};

use strato_testbed::TestEngine;

strato_testbed::engine_matrix!(async sigterm_mid_apply_leaves_no_state_lock);
strato_testbed::engine_matrix!(async sigterm_during_cleanup_stops_the_destroy_gracefully_and_reports);

/// The built runner for `job`, against the bed's moto, its stderr kept for the failure message.
fn spawn_runner(bed: &Bed, job: &Job) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_strato-runner"));
    cmd.envs(bed.runner_env(job, &bed.env.endpoint))
        .env("AWS_ENDPOINT_URL", &bed.env.endpoint)
        .env("AWS_REGION", &bed.env.region)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd.spawn().unwrap()
}

/// Sends SIGTERM (as ECS's StopTask does) and waits up to `grace` for the exit; its status and stderr.
async fn terminate(child: &mut tokio::process::Child, grace: Duration) -> (std::process::ExitStatus, String) {
    use tokio::io::AsyncReadExt;
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(grace, child.wait())
        .await
        .expect("the runner exits within the grace period")
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    (status, stderr)
}

async fn sigterm_mid_apply_leaves_no_state_lock(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec("runner-net", "sigterm", json!({"slow_seconds": 300}));
    let (cluster, job) = bed.create(spec).await;
    let mut child = spawn_runner(&bed, &job);
    let mut events = Vec::new();
    wait_for_step(&bed, &mut events, "apply").await;
    wait_for_log(&bed, &job, "(local-exec): Executing").await;
    // Terraform holds the state lock now.
    assert_eq!(bed.held_locks().await.len(), 1, "the apply holds the lock");

    let (status, stderr) = terminate(&mut child, Duration::from_secs(120)).await;
    assert!(
        status.success(),
        "exit 0 after the final event: {status:?}\n{stderr}"
    );

    events.extend(bed.events().await);
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::Transient, "{error:?}");
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
    assert_eq!(error.step, "apply");
    assert!(bed.held_locks().await.is_empty(), "state lock released");
    // The state was written: what was created is recorded, so a retry or delete can handle it.
    let types = bed.state_types(&cluster, "main").await;
    assert!(types.contains(&"aws_vpc".to_owned()), "{types:?}");
    let (lines, complete) = bed.archived_log(&job).await;
    assert_eq!(complete, Some(lines.len() as u64));
    assert!(lines.iter().any(|l| l.text.contains("Interrupt received")));
}

/// Issue 15 defect 5: a task stop (SIGTERM) while a failed create is being cleaned up interrupts the destroy
/// gracefully (no state lock left) and the run still sends its final event and exits 0. Before, the SIGTERM
/// listener was gone by then: the signal was swallowed and ECS's SIGKILL ended Terraform mid-destroy.
async fn sigterm_during_cleanup_stops_the_destroy_gracefully_and_reports(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec(
        "runner-net",
        "sigterm-cleanup",
        json!({"subnet_cidrs": ["10.99.1.0/24"], "slow_destroy_seconds": 300}),
    );
    let (_cluster, job) = bed.create(spec).await;
    let mut child = spawn_runner(&bed, &job);
    let mut events = Vec::new();
    wait_for_step(&bed, &mut events, "cleanup").await;
    wait_for_log(&bed, &job, "(local-exec): Executing").await;
    assert_eq!(bed.held_locks().await.len(), 1, "the destroy holds the lock");

    let (status, stderr) = terminate(&mut child, Duration::from_secs(90)).await;
    assert!(
        status.success(),
        "exit 0 after the final event: {status:?}\n{stderr}"
    );
    events.extend(bed.events().await);
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
    assert!(bed.held_locks().await.is_empty(), "state lock released");
    let (lines, complete) = bed.archived_log(&job).await;
    assert_eq!(complete, Some(lines.len() as u64));
    assert!(
        lines
            .iter()
            .any(|l| l.text.contains("stopping the engine (Terminated)"))
    );
}
