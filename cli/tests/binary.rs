//! The `strato` binary itself, without a server (or with a stub of a few lines): help that teaches, exit
//! codes for usage errors, completions, what a decision on a plan sends.
//! (Being an integration test of this crate also makes `cargo test --workspace` build the binary that the
//! end-to-end tests in `tests/tests/devstack/cli_e2e.rs` run.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
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

/// `strato` against the API at `endpoint` with token `t`, then `args`.
fn strato_at(endpoint: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--endpoint", endpoint, "--token", "t"];
    all.extend_from_slice(args);
    strato(&all)
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
    let o = strato_at("http://127.0.0.1:9", &["templates", "list"]);
    assert_eq!(o.status.code(), Some(7), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_delete_without_a_terminal_or_yes_is_refused_before_any_request() {
    // Port 9 answers nothing: a request would be exit 7; the refusal comes first, with its own code.
    let o = strato_at("http://127.0.0.1:9", &["clusters", "delete", "cl-1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(10), "{err}");
    assert!(err.contains("--yes"), "the refusal names the way out: {err}");
    // --yes skips the question: the request is made (to a URL that cannot be, so it fails at once, exit 7).
    let o = strato_at("http://no such host", &["clusters", "delete", "cl-1", "-y"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(7), "{err}");
    assert!(
        err.contains("DELETE http://no such host/v1/clusters/cl-1"),
        "{err}"
    );
}

#[test]
fn completions_are_generated() {
    let o = strato(&["completions", "bash"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("strato"));
}

/// One request a stub server received: method, path, JSON body.
type Seen = (String, String, serde_json::Value);

/// A stub API on a free port answering `answer(method, path)` (status, JSON) to each request, one request per
/// connection; what it received comes back through the join handle after `n` requests.
fn stub(
    n: usize,
    answer: fn(&str, &str) -> (u16, serde_json::Value),
) -> (String, std::thread::JoinHandle<Vec<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for stream in listener.incoming().take(n) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut parts = line.split_whitespace();
            let (method, path) = (parts.next().unwrap().to_owned(), parts.next().unwrap().to_owned());
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = header.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let (status, reply) = answer(&method, &path);
            let text = reply.to_string();
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            )
            .unwrap();
            let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            seen.push((method, path, body));
        }
        seen
    });
    (url, handle)
}

const OP: &str = "op-0193f1c2a7b57d1a8e3b5c7d9f0a1b2c";

/// An operation whose second round waits for an approver.
fn awaiting(method: &str, path: &str) -> (u16, serde_json::Value) {
    let op = serde_json::json!({
        "id": OP, "kind": "update", "status": "awaiting_approval", "cluster_id": "cl-0193f1c2a7b47c3e9d2f4a6b8c0d1e2f",
        "approval": {
            "stage": "cluster", "round": 2, "plan_sha256": "cd".repeat(32),
            "summary": {"add": 0, "change": 1, "destroy": 0},
            "changes": [{"address": "aws_eks_node_group.this", "actions": ["update"]}],
            "requested_at": "2026-11-25T12:00:00Z", "expires_at": "2026-11-28T12:00:00Z", "decision": null
        }
    });
    match (method, path.ends_with("/approve")) {
        ("GET", false) => (200, op),
        ("POST", true) => (202, op),
        _ => (
            404,
            serde_json::json!({"type": "urn:strato:problem:not-found", "title": "Not found", "status": 404, "detail": path}),
        ),
    }
}

#[test]
fn an_approval_names_the_plan_it_showed() {
    let (url, server) = stub(2, awaiting);
    let o = strato_at(&url, &["operations", "approve", OP, "--comment", "lgtm"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The plan it approves is shown first: its round, stage and checksum.
    assert!(
        stdout.contains("round 2 of stage cluster") && stdout.contains(&"cd".repeat(32)),
        "{stdout}"
    );
    let seen = server.join().unwrap();
    let (method, path, body) = seen.last().unwrap();
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", &*format!("/v1/operations/{OP}/approve"))
    );
    assert_eq!(
        body,
        &serde_json::json!({"comment": "lgtm", "plan_sha256": "cd".repeat(32), "round": 2, "stage": "cluster"})
    );
}

/// An operation whose every server-written text carries terminal control sequences: an OSC title and
/// clipboard write, C1 CSI, a hyperlink, a carriage return that would rewrite the verdict.
fn hostile(method: &str, path: &str) -> (u16, serde_json::Value) {
    let op = serde_json::json!({
        "id": OP, "kind": "update", "status": "failed", "cluster_id": "cl-0193f1c2a7b47c3e9d2f4a6b8c0d1e2f",
        "current_step": "apply\u{9b}2J", "wait_reason": "\x1b]0;pwned\x07quota",
        "error": {"what": "boom\x1b]52;c;ZXZpbA==\x1b\\", "step": "apply", "fix": "\x1b[2Jretry"},
        "notes": ["\x1b]8;;https://evil.example\x1b\\note\x1b]8;;\x1b\\"],
        "approval": {
            "stage": "cluster", "round": 1, "plan_sha256": "cd".repeat(32),
            "summary": {"add": 0, "change": 1, "destroy": 0},
            "changes": [{"address": "aws_eks_node_group.this\u{9d}0;x\u{9c}", "actions": ["update"]}],
            "requested_at": "2026-11-25T12:00:00Z", "expires_at": "2026-11-28T12:00:00Z",
            "decision": {"verdict": "rejected", "by": "alice", "at": "2026-11-25T12:01:00Z",
                         "comment": "nope\rapproved \x1bP1$qm\x1b\\lgtm\x08"}
        }
    });
    match method {
        "GET" if path.ends_with(OP) => (200, op),
        _ => (
            404,
            serde_json::json!({"type": "urn:strato:problem:not-found", "title": "Not\x1b]0;t\x07 found",
                               "status": 404, "detail": "\u{9b}31mno such thing"}),
        ),
    }
}

#[test]
fn server_text_reaches_the_terminal_without_control_sequences() {
    let (url, server) = stub(2, hostile);
    let o = strato_at(&url, &["operations", "get", OP]);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let e = strato_at(&url, &["operations", "get", "op-x"]);
    let stderr = String::from_utf8_lossy(&e.stderr).into_owned();
    server.join().unwrap();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for needle in [
        "boom",
        "retry",
        "quota",
        "note",
        "nope",
        "lgtm",
        "aws_eks_node_group.this",
    ] {
        assert!(stdout.contains(needle), "{needle:?} missing from:\n{stdout}");
    }
    assert_eq!(e.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("Not found") && stderr.contains("no such thing"),
        "{stderr}"
    );
    // Not a terminal: the CLI paints nothing, so no escape at all may remain.
    for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            .collect();
        assert!(bad.is_empty(), "{what} carries {bad:?}:\n{text:?}");
    }
}

const CL: &str = "cl-0193f1c2a7b47c3e9d2f4a6b8c0d1e2f";

/// A tenant with one cluster, `demo2`: found by name, and by its id.
fn one_cluster(_method: &str, path: &str) -> (u16, serde_json::Value) {
    let cluster = serde_json::json!({
        "id": CL, "name": "demo2", "state": "ACTIVE", "region": "us-east-1",
        "template": {"name": "eks", "version": "1.0.0"}, "variables": {}, "outputs": {}
    });
    if path == "/v1/clusters?name=demo2" {
        (200, serde_json::json!({"clusters": [cluster], "next": null}))
    } else if path.starts_with("/v1/clusters?") || path == "/v1/clusters" {
        (200, serde_json::json!({"clusters": [], "next": null}))
    } else if path == format!("/v1/clusters/{CL}") {
        (200, cluster)
    } else {
        (
            404,
            serde_json::json!({"type": "urn:strato:problem:not-found", "title": "Not found", "status": 404, "detail": path}),
        )
    }
}

#[test]
fn a_cluster_is_addressed_by_its_name_too() {
    let (url, server) = stub(2, one_cluster);
    let o = strato_at(&url, &["clusters", "get", "demo2"]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let paths: Vec<String> = server.join().unwrap().into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(
        paths,
        ["/v1/clusters?name=demo2".to_owned(), format!("/v1/clusters/{CL}")]
    );
}

#[test]
fn a_name_of_no_cluster_is_not_found_and_an_empty_list_says_so() {
    let (url, server) = stub(1, one_cluster);
    let o = strato_at(&url, &["clusters", "delete", "nosuch", "--yes"]);
    assert_eq!(o.status.code(), Some(4), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no cluster named nosuch"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(server.join().unwrap().len(), 1, "nothing deleted");

    let (url, server) = stub(1, one_cluster);
    let o = strato_at(&url, &["clusters", "list", "--state", "failed"]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "no clusters in state FAILED"
    );
    server.join().unwrap();
}

fn token_stored(_method: &str, _path: &str) -> (u16, serde_json::Value) {
    let v = serde_json::json!({"provider": "digitalocean", "set_at": "2026-11-30T05:00:00Z", "set_by": "alice",
                               "storage_keys": true});
    (200, v)
}

#[test]
fn a_cloud_token_and_its_storage_secret_are_read_from_stdin_and_never_printed() {
    const TOKEN: &str = "dop_v1_0123456789abcdef0123456789abcdef";
    const SECRET: &str = "spaces/SECRET0123456789abcdef";
    let (url, server) = stub(1, token_stored);
    let config = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_strato"))
        .args([
            "--endpoint",
            &url,
            "--token",
            "t",
            "cloud-tokens",
            "set",
            "digitalocean",
        ])
        .args(["--storage-access-key-id", "DO00KEYID0123456789A"])
        .env("STRATO_CONFIG_DIR", config.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    write!(child.stdin.take().unwrap(), "{TOKEN}\n{SECRET}\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("digitalocean") && stdout.contains("set"),
        "{stdout}"
    );
    for secret in [TOKEN, SECRET] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    let seen = server.join().unwrap();
    let (method, path, body) = seen.last().unwrap();
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("PUT", "/v1/tenant/cloud-tokens/digitalocean")
    );
    assert_eq!(
        body,
        &serde_json::json!({"token": TOKEN, "storage_access_key_id": "DO00KEYID0123456789A",
                            "storage_secret_access_key": SECRET})
    );
}
