//! The README's main command as a user runs it: `strato-devstack demo`'s terminal is the tour (steps, live
//! Terraform lines, states, estimate, outputs, drift, summary, and the `strato` command for each step),
//! and the components' logs go to the file it names — inline only with `-v`.

use std::process::Command;

#[test]
fn the_demo_terminal_shows_the_tour_and_the_components_log_to_a_file() {
    let moto = strato_testbed::shared_moto().endpoint.clone();
    let bin = strato_devstack::stack::sibling_binary("strato-devstack");
    assert!(
        bin.exists(),
        "{} is missing: cargo build -p strato-devstack",
        bin.display()
    );
    let work = tempfile::tempdir().unwrap();
    let prefix = strato_testbed::unique_prefix("demo");
    let out = Command::new(&bin)
        .arg("demo")
        // On the process's moto under a prefix of its own, on free ports: other tests run beside it.
        .args([
            "--aws-endpoint",
            &moto,
            "--http",
            "127.0.0.1:0",
            "--ws",
            "127.0.0.1:0",
        ])
        .args(["--prefix", &prefix])
        // The runner this run built: named, the demo uses it as it is instead of `cargo build -p
        // strato-runner`, a build of its own features that cost minutes of CPU inside the test.
        .arg("--runner")
        .arg(strato_devstack::stack::default_runner_path())
        // The engine as every devstack test runs it: the bed's Terraform 0.15 with provider 3.39 (a user
        // picks an engine the same way). Left to choose, the demo takes the machine's modern engine, whose
        // provider 5 loads its whole schema on every command: about 3x the CPU for the same tour, and the
        // runner's engine tier already runs this template's life on the modern engine.
        .env("STRATO_TERRAFORM", &strato_testbed::TestEngine::tf015().terraform)
        .env("STRATO_CONFIG_DIR", work.path())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );

    for needle in [
        "▶ 1/6 create",
        "Apply complete!",
        "◆ cluster ACTIVE, operation succeeded",
        "cost estimate (before apply)",
        "kubeconfig: context strato-demo → https://",
        // On Terraform 0.15 the other cloud's step says why it cannot run (its state's lock file needs
        // 1.10); the devstack clouds test takes the same step's code through DigitalOcean's life.
        "▶ 5/6 another cloud: SKIPPED — ",
        "1.10",
        "▶ 6/6 summary",
    ] {
        assert!(
            stdout.contains(needle),
            "{needle:?} is not in the tour:\n{stdout}"
        );
    }
    // The commands by hand use the profile `strato-devstack up` writes for a stack of this prefix.
    for cmd in [
        "clusters create demo -t aws-eks-basic",
        "clusters kubeconfig demo --merge",
        "clusters drift-check",
        "clusters delete",
    ] {
        let needle = format!("$ strato --profile {prefix} {cmd}");
        assert!(
            stdout.contains(&needle),
            "{needle:?} is not in the tour:\n{stdout}"
        );
    }
    // No component's log line on the terminal: tracing's level column, the runners' targets.
    for line in stdout.lines().chain(stderr.lines()) {
        let component = [
            " INFO ",
            " WARN ",
            " ERROR ",
            " DEBUG ",
            "strato_devstack::",
            "runner:",
        ]
        .iter()
        .any(|m| line.contains(m));
        assert!(!component, "a component's log line on the terminal: {line}");
    }
    assert!(!stdout.contains('\x1b'), "NO_COLOR: no escape codes");

    // …they are in the file the tour names.
    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Component logs (functions, runners, emulators): "))
        .expect("the log file is named");
    let log = std::fs::read_to_string(path.trim()).expect("the log file exists");
    assert!(
        log.contains(" INFO ") && log.contains("runner"),
        "{} lines",
        log.lines().count()
    );
    assert!(!log.contains('\x1b'), "a log file has no colour codes");
}
