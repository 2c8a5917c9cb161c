use super::*;
use crate::fakes::FakeSinks;
use crate::logs::Redactor;
use crate::outcome::StopReason;
use strato_domain::ids::OperationId;
use tokio::sync::watch;

/// `sh -c script` as the engine, its lines going to a hub on the fakes.
async fn run_sh(
    script: &str,
    capture: bool,
    grace: Duration,
    stop_after: Option<(Duration, StopReason)>,
) -> (Outcome, Vec<strato_domain::messages::LogLine>, Duration) {
    let (out, lines, took) = try_run_sh(script, capture, grace, stop_after).await;
    (out.unwrap(), lines, took)
}

async fn try_run_sh(
    script: &str,
    capture: bool,
    grace: Duration,
    stop_after: Option<(Duration, StopReason)>,
) -> (
    std::io::Result<Outcome>,
    Vec<strato_domain::messages::LogLine>,
    Duration,
) {
    let sinks = FakeSinks::default();
    let op = OperationId::generate();
    let (hub, tasks) = LogHub::start(op.clone(), sinks.clone(), Redactor::default());
    hub.redactor.add("s3cret-value");
    let engine = ProcessEngine {
        bin: "sh".into(),
        env: Vec::new(),
        grace,
    };
    let (tx, mut rx) = watch::channel(None);
    if let Some((after, reason)) = stop_after {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            tx.send_replace(Some(reason));
        });
    }
    let began = std::time::Instant::now();
    let args = ["-c".to_owned(), script.to_owned()];
    let out = engine
        .run(&std::env::temp_dir(), &args, "apply", capture, &hub, &mut rx)
        .await;
    let took = began.elapsed();
    drop(hub);
    tasks.finish(&sinks, &op).await.unwrap();
    (out, sinks.archived_lines(), took)
}

#[tokio::test]
async fn user_lines_are_logged_and_redacted_debug_lines_kept_apart_and_captured_stdout_not_logged() {
    let script = "echo 'plan: 1 to add (s3cret-value)'; echo '[DEBUG] provider request s3cret-value' >&2; \
                  echo '  body continues' >&2; echo 'Error: boom' >&2; exit 1";
    let (out, lines, _) = run_sh(script, false, Duration::from_secs(5), None).await;
    assert_eq!(out.code, Some(1));
    assert!(out.stopped.is_none());
    let texts: Vec<(&LogStream, &str)> = lines.iter().map(|l| (&l.stream, l.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            (&LogStream::Stdout, "plan: 1 to add ((sensitive value))"),
            (&LogStream::Stderr, "Error: boom")
        ]
    );
    assert!(out.user_text.contains("Error: boom") && !out.user_text.contains("s3cret"));
    let debug = String::from_utf8(out.debug).unwrap();
    assert!(
        debug.contains("[DEBUG] provider request (sensitive value)"),
        "{debug}"
    );
    assert!(
        debug.contains("body continues"),
        "a debug line's continuation stays with it"
    );

    let (out, lines, _) = run_sh("echo '{\"a\": 1}'", true, Duration::from_secs(5), None).await;
    assert_eq!(out.stdout.trim(), "{\"a\": 1}");
    assert!(lines.is_empty(), "captured output is not logged");
}

#[tokio::test]
async fn a_line_without_end_is_cut_and_the_debug_trace_keeps_a_bounded_tail() {
    // 1 MiB with no newline, a normal line, then a 12 MiB debug trace of 1000-byte lines.
    let script = "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo after; \
                  echo '[DEBUG] trace begins' >&2; \
                  head -c 12582912 /dev/zero | tr '\\0' y | fold -w 1000 >&2; echo '[DEBUG] the end' >&2";
    let (out, lines, _) = run_sh(script, false, Duration::from_secs(5), None).await;
    assert_eq!(out.code, Some(0));
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts.len(), 2, "the long line and `after`");
    assert!(
        texts[0].len() < LINE_MAX + 100
            && texts[0].ends_with(&format!("[strato: line cut at {LINE_MAX} bytes]")),
        "{} bytes: …{}",
        texts[0].len(),
        &texts[0][texts[0].len().saturating_sub(60)..]
    );
    assert_eq!(texts[1], "after", "the line after a cut one is whole");
    assert!(out.user_text.len() <= USER_TEXT_MAX + LINE_MAX);
    let debug = String::from_utf8(out.debug).unwrap();
    assert!(debug.len() <= DEBUG_MAX + 200, "{} bytes kept", debug.len());
    assert!(debug.starts_with("[strato: the first "), "{}", &debug[..80]);
    assert!(debug.ends_with("[DEBUG] the end\n"), "the tail is kept");
}

#[tokio::test]
async fn captured_output_over_its_cap_fails_the_command_saying_so() {
    let script = format!(
        "head -c {} /dev/zero | tr '\\0' z; echo done >&2",
        CAPTURE_MAX + 1024
    );
    let (out, _, _) = try_run_sh(&script, true, Duration::from_secs(5), None).await;
    let e = match out {
        Ok(o) => panic!(
            "a capture over its cap is an error, not {} bytes kept",
            o.stdout.len()
        ),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("over the 32 MiB"), "{e}");
}

#[tokio::test]
async fn a_stop_interrupts_the_engine_which_ends_gracefully() {
    // Terraform on SIGINT: stops, writes its state, releases its lock, exits.
    let script = "trap 'echo interrupted; exit 3' INT; echo started; while true; do sleep 0.05; done";
    let stop = (Duration::from_millis(300), StopReason::Cancelled);
    let (out, lines, took) = run_sh(script, false, Duration::from_secs(30), Some(stop)).await;
    assert_eq!(out.stopped, Some(StopReason::Cancelled));
    assert_eq!(out.code, Some(3), "it ended on its own, not killed");
    assert!(out.user_text.contains("interrupted"));
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(lines.iter().any(|l| {
        l.stream == LogStream::Strato
            && l.text
                .starts_with("stopping the engine (Cancelled): interrupt sent, waiting up to 30s")
    }));
}

#[tokio::test]
async fn an_engine_that_ignores_the_interrupt_is_killed_after_the_grace_period() {
    let script = "trap '' INT; while true; do sleep 0.05; done";
    let stop = (Duration::from_millis(100), StopReason::TimedOut);
    let (out, lines, took) = run_sh(script, false, Duration::from_millis(300), Some(stop)).await;
    assert_eq!(out.stopped, Some(StopReason::TimedOut));
    assert_eq!(out.code, None, "killed by a signal");
    assert!(
        took >= Duration::from_millis(400),
        "the grace period was given: {took:?}"
    );
    assert!(lines.iter().any(|l| {
        l.text
            .contains("did not stop within the grace period; killing it")
    }));
}

#[tokio::test]
async fn a_stop_that_already_fired_runs_nothing() {
    let engine = ProcessEngine {
        bin: "/nonexistent/engine".into(),
        env: Vec::new(),
        grace: Duration::from_secs(1),
    };
    let sinks = FakeSinks::default();
    let (hub, _tasks) = LogHub::start(OperationId::generate(), sinks, Redactor::default());
    let (_tx, mut rx) = watch::channel(Some(StopReason::Terminated));
    let out = engine
        .run(&std::env::temp_dir(), &[], "plan", false, &hub, &mut rx)
        .await
        .expect("nothing was spawned");
    assert_eq!(out.stopped, Some(StopReason::Terminated));
    assert_eq!(out.code, None);
}

#[test]
fn the_runner_process_is_made_non_dumpable() {
    harden_runner_process().unwrap();
    assert!(!nix::sys::prctl::get_dumpable().unwrap());
}

#[tokio::test]
async fn the_engine_inherits_no_credentials_secrets_or_strato_settings() {
    // `cargo test` gives this process CARGO_* variables; the child must not see them, nor anything else
    // outside the allowlist, only its own environment and the basics.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let engine = ProcessEngine {
        bin: "env".into(),
        env: vec![("AWS_ACCESS_KEY_ID".into(), "ASIA-ENGINE-SESSION".into())],
        grace: Duration::from_secs(1),
    };
    let out = engine.command(&std::env::temp_dir(), &[]).output().await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(names.contains(&"PATH"), "{text}");
    assert!(text.contains("AWS_ACCESS_KEY_ID=ASIA-ENGINE-SESSION"), "{text}");
    // The engine's GC target: the runner's default, or the task's own GOGC passed through.
    let gogc = std::env::var("GOGC").unwrap_or_else(|_| ENGINE_GOGC.to_owned());
    assert!(text.lines().any(|l| l == format!("GOGC={gogc}")), "{text}");
    let own = [
        "AWS_ACCESS_KEY_ID",
        "CHECKPOINT_DISABLE",
        "TF_IN_AUTOMATION",
        "TF_INPUT",
    ];
    let leaked: Vec<&&str> = names
        .iter()
        .filter(|n| !inherited(n) && !own.contains(n))
        .collect();
    assert!(leaked.is_empty(), "inherited beyond the allowlist: {leaked:?}");
    for secret in [
        "STRATO_RUN_PROOF",
        "STRATO_AGENT_TOKEN_SECRET",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
    ] {
        assert!(!inherited(secret), "{secret}");
    }
}
