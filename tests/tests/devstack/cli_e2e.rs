//! The `strato` binary against devstack, as a tenant types it: login, the variable schema, a refused
//! create (exit code and every field), a create with `--wait`, live logs that survive a forced WebSocket
//! drop without gaps or duplicates, `-o json` for scripts, another tenant's cluster not found.

use crate::devstack_support;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Runs `strato ARGS` with its own config directory and nothing inherited from the caller's STRATO_*.
async fn strato(config: &Path, env: &[(&str, &str)], stdin: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(devstack_support::strato_bin());
    cmd.args(args).env("STRATO_CONFIG_DIR", config);
    for k in [
        "STRATO_TOKEN",
        "STRATO_PROFILE",
        "STRATO_ENDPOINT",
        "STRATO_WS_ENDPOINT",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("strato starts");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.unwrap();
    }
    drop(input);
    child.wait_with_output().await.expect("strato runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts a preview's output: its `counts`, a resource (`mark`, `address`) marked as it changes, its monthly
/// `cost`; the output.
fn previewed(o: &Output, counts: &str, (mark, address): (&str, &str), cost: &str) -> String {
    let out = text(&o.stdout);
    assert!(out.contains(&format!("Preview: {counts}")), "{}", show(o));
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with(mark) && l.contains(address)),
        "{address}, marked {mark:?}: {}",
        show(o)
    );
    assert!(out.contains(&format!("Monthly cost: {cost}")), "{}", show(o));
    out
}

fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// A TCP relay to `upstream` that cuts its first connection once `cut_after` bytes came back from the
/// server (mid-stream, after the handshake), and relays every later connection whole: a dropped WebSocket.
async fn dropping_proxy(
    upstream: std::net::SocketAddr,
    cut_after: usize,
) -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cut = Arc::new(AtomicBool::new(false));
    let cut2 = cut.clone();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else {
                continue;
            };
            let limit = if std::mem::take(&mut first) {
                Some(cut_after)
            } else {
                None
            };
            let cut = cut2.clone();
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move { tokio::io::copy(&mut cr, &mut sw).await });
                let mut buf = vec![0u8; 1024];
                let mut relayed = 0usize;
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    relayed += n;
                    if limit.is_some_and(|l| relayed >= l) {
                        cut.store(true, Ordering::SeqCst);
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    (addr, cut)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_drives_a_cluster_through_its_life_with_the_strato_cli() {
    let stack = devstack_support::start(devstack_support::config("cli").await).await;
    let cfg = tempfile::tempdir().unwrap();
    let cfg = cfg.path();
    let http = stack.endpoints.http_api.clone();
    let ws = stack.endpoints.websocket.clone().expect("WebSocket API");
    let alice = stack.token("tenant-a");

    // login: the token on stdin, checked against the API, kept 0600.
    let o = strato(
        cfg,
        &[],
        Some(&alice),
        &["login", "--endpoint", &http, "--ws-endpoint", &ws],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    let o = strato(cfg, &[], None, &["profiles"]).await;
    assert!(text(&o.stdout).contains(&http), "{}", show(&o));
    let bad = strato(
        cfg,
        &[],
        Some("not-a-token"),
        &["login", "--profile", "x", "--endpoint", &http],
    )
    .await;
    assert_eq!(
        bad.status.code(),
        Some(3),
        "a wrong token is refused at login: {}",
        show(&bad)
    );

    // The variable schema as a table.
    let o = strato(cfg, &[], None, &["templates", "show", "aws-eks-basic"]).await;
    assert!(
        o.status.success() && text(&o.stdout).contains("node_count"),
        "{}",
        show(&o)
    );

    // A cloud token: read from stdin (never a flag), listed without its value.
    const DO_TOKEN: &str = "dop_v1_clie2e0123456789abcdef0123456789ab";
    let o = strato(cfg, &[], Some(DO_TOKEN), &["cloud-tokens", "set", "digitalocean"]).await;
    assert!(o.status.success(), "{}", show(&o));
    let o = strato(cfg, &[], None, &["cloud-tokens", "list"]).await;
    assert!(
        o.status.success() && text(&o.stdout).contains("digitalocean"),
        "{}",
        show(&o)
    );
    assert!(!show(&o).contains(DO_TOKEN), "{}", show(&o));

    // A refused create: exit 6 and every field named, with what is allowed; nothing created.
    let o = strato(
        cfg,
        &[],
        None,
        &[
            "clusters",
            "create",
            "Bad_Name",
            "-t",
            "aws-eks-basic",
            "--var",
            "node_count=500",
            "--region",
            "mars-1",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(6), "{}", show(&o));
    let err = text(&o.stderr);
    for field in [
        "name:",
        "variables.node_count:",
        "region:",
        "allowed:",
        "request id:",
    ] {
        assert!(err.contains(field), "{field} missing: {}", show(&o));
    }

    // A create with --wait: the live log, the state changes, a summary; exit 0 on success.
    let o = strato(
        cfg,
        &[],
        None,
        &[
            "clusters",
            "create",
            "cli-demo",
            "-t",
            // 1.1.0 runs no cluster agent (the newest, 1.2.0, waits for one: devstack_agent's test).
            "aws-eks-basic@1.1.0",
            "--var",
            "node_count=2",
            "--wait",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains("create succeeded") && out.contains("ACTIVE"),
        "{}",
        show(&o)
    );
    let waited_lines: Vec<&str> = out.lines().filter(|l| l.contains(" │ ")).collect();
    assert!(
        waited_lines.iter().any(|l| l.contains("Apply complete!")),
        "{}",
        show(&o)
    );

    // -o json parses; the cluster and its create are there.
    let o = strato(cfg, &[], None, &["clusters", "list", "-o", "json"]).await;
    let list: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    let cluster = list["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cli-demo")
        .expect("the cluster is listed")
        .clone();
    let id = cluster["id"].as_str().unwrap().to_owned();
    assert_eq!(cluster["state"], "ACTIVE");
    let o = strato(cfg, &[], None, &["operations", "list", &id, "-o", "json"]).await;
    let ops: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    let create_op = ops["operations"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(cluster["last_operation"]["id"], create_op.as_str(), "{cluster}");
    assert_eq!(cluster["last_operation"]["status"], "succeeded", "{cluster}");
    // The table names it too.
    let o = strato(cfg, &[], None, &["clusters", "list"]).await;
    let row = text(&o.stdout)
        .lines()
        .find(|l| l.contains("cli-demo"))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no row: {}", show(&o)));
    assert!(
        row.contains(&format!("create succeeded ({create_op})")),
        "{}",
        show(&o)
    );

    connect(cfg, &id).await;

    // The create's log again (the archive): exactly the lines --wait printed, in the same order.
    let o = strato(cfg, &[], None, &["logs", &create_op, "-f", "-o", "json"]).await;
    assert!(o.status.success(), "{}", show(&o));
    let archived: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(archived.len(), waited_lines.len(), "{}", show(&o));
    for (a, w) in archived.iter().zip(&waited_lines) {
        assert!(w.ends_with(a["text"].as_str().unwrap()), "{w:?} vs {a}");
    }

    // Another tenant: the same id is not found (exit 4), and the cluster is untouched.
    let bob = stack.token("tenant-b");
    let o = strato(cfg, &[("STRATO_TOKEN", &bob)], None, &["clusters", "get", &id]).await;
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    let o = strato(
        cfg,
        &[("STRATO_TOKEN", &bob)],
        None,
        &["clusters", "delete", &id, "--yes"],
    )
    .await;
    assert_eq!(o.status.code(), Some(4), "{}", show(&o));
    let o = strato(cfg, &[("STRATO_TOKEN", &bob)], None, &["logs", &create_op]).await;
    assert_eq!(o.status.code(), Some(4), "another tenant's log: {}", show(&o));

    // A viewer of the same tenant reads but cannot delete (exit 3, the missing scope named).
    let viewer = stack.token_scoped("tenant-a", "clusters:read");
    let o = strato(cfg, &[("STRATO_TOKEN", &viewer)], None, &["clusters", "get", &id]).await;
    assert!(o.status.success(), "{}", show(&o));
    let o = strato(
        cfg,
        &[("STRATO_TOKEN", &viewer)],
        None,
        &["clusters", "delete", &id, "--yes"],
    )
    .await;
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("'clusters:write' is missing"),
        "{}",
        show(&o)
    );

    // Preview an update: the changes by address and the cost difference shown, exit 0, nothing applied.
    let get = |cfg: &Path, id: &str| {
        let (cfg, id) = (cfg.to_owned(), id.to_owned());
        async move {
            let o = strato(&cfg, &[], None, &["clusters", "get", &id, "-o", "json"]).await;
            serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)))
        }
    };
    let before = get(cfg, &id).await;
    let preview = |args: &'static [&'static str]| {
        let cfg = cfg.to_owned();
        async move {
            let mut all = vec!["clusters", "update", "cli-demo"];
            all.extend_from_slice(args);
            all.push("--plan-only");
            let o = strato(&cfg, &[], None, &all).await;
            assert!(o.status.success(), "{}", show(&o));
            assert!(text(&o.stdout).contains("plan succeeded"), "{}", show(&o));
            assert!(text(&o.stdout).contains("Nothing was applied"), "{}", show(&o));
            o
        }
    };
    // One more node: the node group changes, and costs one t3.medium (0.0416 USD/h x 730 h) and its 20 GB
    // gp3 disk (1.60 USD) more a month. (Only previewed: a node group update never ends against moto.)
    let o = preview(&["--set", "node_count=3"]).await;
    let out = previewed(
        &o,
        "0 to add, 1 to change, 0 to destroy, 0 to replace",
        ("~ ", "aws_eks_node_group.default"),
        "+$31.97/month",
    );
    assert!(out.contains("Policies: 0 denied"), "{}", show(&o));
    let after = get(cfg, &id).await;
    for key in ["variables", "outputs", "state", "template", "drift"] {
        assert_eq!(after[key], before[key], "the preview changed the cluster's {key}");
    }
    let preview_op = after["last_operation"]["id"].as_str().unwrap().to_owned();
    let o = strato(cfg, &[], None, &["operations", "get", &preview_op, "-o", "json"]).await;
    let op: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (op["kind"].as_str(), op["status"].as_str()),
        (Some("plan"), Some("succeeded")),
        "{op}"
    );
    assert_eq!(op["spec"]["variables"]["node_count"], 3, "{op}");
    assert_eq!(op["preview"]["cost"]["difference"], "+$31.97/month", "{op}");
    assert_eq!(op["preview"]["applied"], false, "{op}");
    // An admin network: one security-group rule to add, at no cost. Previewed, then applied.
    let o = preview(&["--var", "admin_cidrs=203.0.113.0/24"]).await;
    previewed(
        &o,
        "1 to add, 0 to change, 0 to destroy, 0 to replace",
        ("+ ", "aws_security_group_rule"),
        "$0.00/month",
    );
    let after = get(cfg, &id).await;
    assert_eq!(after["variables"], before["variables"], "nothing applied");
    let o = strato(
        cfg,
        &[],
        None,
        &[
            "clusters",
            "update",
            "cli-demo",
            "--var",
            "admin_cidrs=203.0.113.0/24",
            "--wait",
            "--quiet",
        ],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    let applied = get(cfg, &id).await;
    assert_eq!(
        applied["variables"]["admin_cidrs"],
        serde_json::json!(["203.0.113.0/24"]),
        "{applied}"
    );
    assert_eq!(applied["variables"]["node_count"], 2, "{applied}");
    assert_eq!(applied["state"], "ACTIVE", "{applied}");

    // Delete, and follow its live log through a connection that is cut mid-stream.
    let o = strato(
        cfg,
        &[],
        None,
        &["clusters", "delete", &id, "--yes", "-o", "json"],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    let accepted: Value = serde_json::from_slice(&o.stdout).unwrap();
    let delete_op = accepted["operation"]["id"].as_str().unwrap().to_owned();
    let ws_addr = stack.endpoints.websocket.as_deref().unwrap();
    let upstream = ws_addr
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (proxy, cut) = dropping_proxy(upstream, 3000).await;
    let via_proxy = ws.replacen(&upstream.to_string(), &proxy.to_string(), 1);
    let o = strato(
        cfg,
        &[("STRATO_WS_ENDPOINT", &via_proxy)],
        None,
        &["logs", &delete_op, "-f", "-o", "json"],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    assert!(cut.load(Ordering::SeqCst), "the first connection was cut");
    assert!(text(&o.stderr).contains("reconnecting from line"), "{}", show(&o));
    let seqs: Vec<u64> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap())
        .collect();
    assert!(!seqs.is_empty());
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate, in order"
    );
    let o = strato(cfg, &[], None, &["operations", "get", &delete_op, "-o", "json"]).await;
    let op: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(op["status"], "succeeded", "{op}");

    // The audit log (an admin's read): the create and the delete, the viewer's refused delete, the runner
    // starts Strato made on its own; another tenant's log has none of it; a viewer may not read it.
    let o = strato(cfg, &[], None, &["audit", "--cluster", &id, "-o", "json"]).await;
    assert!(o.status.success(), "{}", show(&o));
    let log: Value = serde_json::from_slice(&o.stdout).unwrap();
    let entries = log["entries"].as_array().unwrap();
    let has = |action: &str, actor: &str, status: Option<u64>| {
        entries.iter().any(|e| {
            e["action"] == action
                && e["actor"] == actor
                && status.is_none_or(|s| e["status"] == s)
                && e["cluster_id"] == id.as_str()
        })
    };
    assert!(has("cluster.create", "dev-tenant-a", Some(202)), "{log}");
    assert!(
        has("cluster.delete", "dev-tenant-a", Some(403)),
        "the viewer's: {log}"
    );
    assert!(has("cluster.delete", "dev-tenant-a", Some(202)), "{log}");
    assert!(has("operation.dispatch", "strato:dispatcher", None), "{log}");
    let o = strato(cfg, &[], None, &["audit", "--since", "1h"]).await;
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stdout).contains("REQUEST ID") && text(&o.stdout).contains("refused 403"),
        "{}",
        show(&o)
    );
    let o = strato(cfg, &[("STRATO_TOKEN", &bob)], None, &["audit", "-o", "json"]).await;
    let theirs: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        theirs["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["actor"] == "dev-tenant-b"),
        "only tenant-b's own (refused) calls: {theirs}"
    );
    let o = strato(cfg, &[("STRATO_TOKEN", &viewer)], None, &["audit"]).await;
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));

    stack.shutdown(std::time::Duration::from_secs(5)).await;
}

/// Connect: `clusters kubeconfig NAME --merge` writes the user's kubeconfig file with the cluster's endpoint
/// and CA and an exec plugin (`aws eks get-token`) that, run as kubectl runs it, signs an EKS token for this
/// cluster. kubectl reads the file back, when it is on the machine; the AWS CLI makes the token, when it is.
async fn connect(cfg: &Path, id: &str) {
    let o = strato(cfg, &[], None, &["clusters", "get", "cli-demo", "-o", "json"]).await;
    let cluster: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    let region = cluster["region"].as_str().unwrap().to_owned();
    let kube = cfg.join("kube").join("config");
    let o = strato(
        cfg,
        &[],
        None,
        &[
            "clusters",
            "kubeconfig",
            "cli-demo",
            "--merge",
            "--kubeconfig",
            kube.to_str().unwrap(),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", show(&o));
    assert!(text(&o.stderr).contains("strato-cli-demo"), "{}", show(&o));
    let doc: Value = serde_norway::from_str(&std::fs::read_to_string(&kube).unwrap()).unwrap();
    assert_eq!(doc["current-context"], "strato-cli-demo", "{doc}");
    let outputs = &cluster["outputs"];
    assert_eq!(
        doc["clusters"][0]["cluster"]["server"], outputs["cluster_endpoint"],
        "{doc}"
    );
    assert_eq!(
        doc["clusters"][0]["cluster"]["certificate-authority-data"], outputs["cluster_ca_certificate"],
        "{doc}"
    );
    let exec = &doc["users"][0]["user"]["exec"];
    let cloud_name = format!("cli-demo-{}", &id[id.len() - 8..]);
    let args: Vec<String> = exec["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(exec["command"], "aws", "{doc}");
    assert!(
        args.windows(2)
            .any(|w| w[0] == "--cluster-name" && w[1] == cloud_name),
        "{args:?}"
    );
    let on_path = |bin: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join(bin).is_file())
    };
    if on_path("kubectl") {
        let o = tokio::process::Command::new("kubectl")
            .args([
                "--kubeconfig",
                kube.to_str().unwrap(),
                "config",
                "view",
                "--minify",
                "-o",
                "json",
            ])
            .output()
            .await
            .unwrap();
        assert!(o.status.success(), "{}", show(&o));
        let view: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            view["current-context"], "strato-cli-demo",
            "kubectl reads it: {view}"
        );
        assert_eq!(view["users"][0]["user"]["exec"]["args"], exec["args"]);
    } else {
        eprintln!("SKIPPED (loudly): kubectl is not on PATH; the kubeconfig was not read back by kubectl");
    }
    if !on_path(exec["command"].as_str().unwrap()) {
        eprintln!(
            "SKIPPED (loudly): the AWS CLI is not on PATH; the exec plugin's EKS token was not made or checked"
        );
        return;
    }
    // As kubectl runs it: the user's AWS identity from the environment, nothing from files.
    let (key, secret) = ("AKIASTRATOE2ETEST001", "c3RyYXRvLWUyZS1zZWNyZXQta2V5LW5vdC1yZWFs");
    let mut cmd = tokio::process::Command::new("aws");
    cmd.args(&args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    let o = cmd
        .env("AWS_ACCESS_KEY_ID", key)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_CONFIG_FILE", cfg.join("no-aws-config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", cfg.join("no-aws-credentials"))
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let credential: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    let token = devstack_support::eks_token::token_of(&credential);
    devstack_support::eks_token::check(&token, &cloud_name, &region, key, secret);
}
