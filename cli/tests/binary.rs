//! The `strato` binary itself, without a server: help that teaches, exit codes for usage errors, completions.
//! (Being an integration test of this crate also makes `cargo test --workspace` build the binary that the
//! end-to-end tests in `tests/tests/devstack/cli_e2e.rs` run.)

use std::process::Command;

fn strato(args: &[&str]) -> std::process::Output {
    let config = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_strato"))
        .args(args)
        .env("STRATO_CONFIG_DIR", config.path())
        .env_remove("STRATO_ENDPOINT")
        .env_remove("STRATO_PROFILE")
        .env_remove("STRATO_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn help_lists_the_verbs_and_the_exit_codes() {
    let o = strato(&["--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "clusters",
        "logs",
        "watch",
        "estimate",
        "state-versions",
        "webhook",
        "Exit codes",
        "8 the operation",
    ] {
        assert!(help.contains(needle), "{needle:?} missing from --help:\n{help}");
    }
}

#[test]
fn usage_errors_exit_2_and_say_what_to_do() {
    let o = strato(&["clusters", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("strato login --endpoint"));
    let o = strato(&["--profile", "nope", "clusters", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no profile 'nope'"));
    let o = strato(&["clusters", "frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_unreachable_endpoint_is_a_server_error_not_a_crash() {
    let o = strato(&[
        "--endpoint",
        "http://127.0.0.1:9",
        "--token",
        "t",
        "templates",
        "list",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn completions_are_generated() {
    let o = strato(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("strato"));
}
