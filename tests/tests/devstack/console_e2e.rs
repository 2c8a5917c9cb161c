//! The web console (`console/`) in the README's test command: its build (type-checked against the API's
//! OpenAPI spec), its unit tests (Vitest), and the browser end-to-end run (`console/e2e/run.mjs`: Debian's
//! Chromium driven by playwright-core) against a devstack serving the freshly built console.
//!
//! Node and npm must be on the machine (they are on every machine of this kind); `npm ci` installs the
//! locked packages. Chromium is a Debian package `.ci/run` installs; without it the browser run prints a
//! loud `SKIPPED` line and the build and unit tests still run.

use crate::devstack_support;

use std::path::PathBuf;
use std::process::Command;

fn console_dir() -> PathBuf {
    devstack_support::workspace().join("console")
}

fn npm(args: &[&str]) {
    let dir = console_dir();
    let out = Command::new("npm")
        .args(args)
        .current_dir(&dir)
        .env("CI", "1")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "npm {args:?} in {}: {e} (Node 20 + npm are needed)",
                dir.display()
            )
        });
    assert!(
        out.status.success(),
        "npm {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `npm ci` and the build once per test run. Under nextest every test is its own process, so a lock file
/// serializes them across processes and a stamp naming the run (NEXTEST_RUN_ID) keeps a second process from
/// rebuilding `dist/` under a devstack that is serving it; under `cargo test` the `Once` does that.
fn installed() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = console_dir();
        let lock = std::fs::File::create(dir.join(".build.lock")).expect("console/.build.lock");
        lock.lock().expect("lock console/.build.lock");
        let run = std::env::var("NEXTEST_RUN_ID").ok();
        let stamp = dir.join("dist/.built-by-run");
        let built = run.as_deref().is_some_and(|r| {
            dir.join("dist/index.html").is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == r)
        });
        if !built {
            if !dir.join("node_modules/.package-lock.json").is_file() {
                npm(&["ci", "--no-audit", "--no-fund"]);
            }
            npm(&["run", "build"]);
            if let Some(r) = run {
                std::fs::write(&stamp, r).expect("console/dist/.built-by-run");
            }
        }
        // The lock is released when `lock` drops, after the build is complete.
    });
}

#[test]
fn the_console_builds_against_the_api_spec_and_its_unit_tests_pass() {
    installed();
    npm(&["test"]);
    assert!(console_dir().join("dist/index.html").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_creates_watches_and_deletes_a_cluster_in_the_browser() {
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find_map(|c| which(c)) else {
        eprintln!(
            "SKIPPED console_e2e::browser: no chromium on PATH (apt-get install chromium chromium-driver)"
        );
        return;
    };
    tokio::task::spawn_blocking(installed).await.unwrap();
    let mut config = strato_devstack::DevstackConfig {
        console_dir: Some(console_dir().join("dist")),
        ..devstack_support::config("console").await
    };
    // Approving a plan applies the saved plan, which the bed's 0.15.0-rc2 cannot: the approval steps need
    // the modern engine.
    let modern = strato_testbed::modern_engine_or_skip("console_e2e::browser approval steps");
    if let Some(m) = modern {
        config.engine = Some(strato_testbed::TestEngine::modern(m));
    }
    let stack = devstack_support::start(config).await;
    assert!(stack.console_served(), "devstack serves the built console");
    // Screenshots (each page, and the dashboard, create form, cluster and operation pages at 1366 and 1920 px
    // wide) go under target/, never into the source tree.
    let artifacts = devstack_support::workspace().join("target/console-screenshots");
    std::fs::create_dir_all(&artifacts).expect("target/console-screenshots");
    let mut node = tokio::process::Command::new("node");
    node.arg("e2e/run.mjs")
        .current_dir(console_dir())
        .env("E2E_ARTIFACTS", &artifacts)
        .env("CONSOLE_URL", format!("{}/", stack.endpoints.http_api))
        .env("TOKEN_A", stack.token("console-a"))
        .env("TOKEN_B", stack.token("console-b"))
        .env("TOKEN_OPERATOR", stack.operator_token())
        .env("CHROMIUM", &chromium);
    if modern.is_some() {
        // Another principal of tenant A who may only approve (A's own token is its requester's).
        let approver = stack.env.auth.mint_scoped(
            "console-a",
            "console-approver",
            std::time::Duration::from_secs(3600),
            "operations:approve",
        );
        node.env("TOKEN_APPROVER", approver);
    }
    let out = node.output().await.expect("node runs the browser test");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    stack.shutdown(std::time::Duration::from_secs(5)).await;
    assert!(
        out.status.success(),
        "the browser run failed:\n{stdout}\n{stderr}"
    );
    println!("{stdout}\nscreenshots: {}", artifacts.display());
}

/// The rollout page in the browser against the console's mock server (`e2e/mock-server.mjs`), which starts
/// with tenant A's rollout paused by a failed cluster: the fleet summary, each cluster's plan with its
/// replaced addresses and why it paused; "Resume without the failed" completes it with that cluster
/// skipped; axe on both pages. The same rollout, for real, is `devstack_fleet`'s (API and CLI): a real
/// paused rollout here would cost the browser test a fleet of Terraform runs.
#[test]
fn the_console_shows_a_paused_rollout_and_resumes_it_in_the_browser() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "SKIPPED console_e2e::rollout: no chromium on PATH (apt-get install chromium chromium-driver)"
        );
        return;
    };
    installed();
    let tokens = Command::new("node")
        .arg("e2e/mock-tokens.mjs")
        .current_dir(console_dir())
        .output()
        .expect("node prints the mock's tokens");
    assert!(tokens.status.success(), "{tokens:?}");
    let tokens = String::from_utf8_lossy(&tokens.stdout).into_owned();
    let env: Vec<(&str, &str)> = tokens.lines().filter_map(|l| l.split_once('=')).collect();
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    };
    let (http, ws) = (free(), free());
    let mut mock = Command::new("node")
        .args(["e2e/mock-server.mjs", &http.to_string(), &ws.to_string()])
        .current_dir(console_dir())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("node runs the mock server");
    let url = format!("http://127.0.0.1:{http}/");
    let up = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", http)).is_ok()
    });
    let artifacts = devstack_support::workspace().join("target/console-screenshots");
    let out = up.then(|| {
        Command::new("node")
            .arg("e2e/run.mjs")
            .current_dir(console_dir())
            .envs(env.iter().copied())
            .env("E2E_ONLY", "rollout")
            .env("E2E_ARTIFACTS", &artifacts)
            .env("CONSOLE_URL", &url)
            .env("CHROMIUM", &chromium)
            .output()
            .expect("node runs the browser test")
    });
    let _ = mock.kill();
    let _ = mock.wait();
    let out = out.unwrap_or_else(|| panic!("the mock server did not listen on {url}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("e2e passed (the rollout page only)"), "{stdout}");
}

/// OIDC authorization code + PKCE (how the console signs in on AWS) in the browser, against the script's own
/// mock identity provider and API (no devstack): the verifier matches the challenge, state round-trips,
/// the API sees exactly the issued token, nothing is left in browser storage, failures end on the sign-in
/// page with a readable error.
#[test]
fn the_console_signs_in_with_oidc_and_pkce_in_the_browser() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "SKIPPED console_e2e::oidc: no chromium on PATH (apt-get install chromium chromium-driver)"
        );
        return;
    };
    installed();
    let out = Command::new("node")
        .arg("e2e/oidc.mjs")
        .current_dir(console_dir())
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs the OIDC browser test");
    assert!(
        out.status.success(),
        "the OIDC browser run failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|c| which(c))
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(cmd))
        .find(|p| p.is_file())
}
