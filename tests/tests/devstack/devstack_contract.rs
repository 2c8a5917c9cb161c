//! Contract fuzzing (issue 16): schemathesis, pinned and installed into the test bed's venv, runs against a
//! devstack from the generated spec (`functions/api/openapi.yaml`): every check except
//! `positive_data_acceptance` (see below), the spec's links for stateful sequences (create → read, change,
//! delete, operations), as two tenants one after the other. Any failure fails the test with schemathesis's
//! report (each failure with a curl line to reproduce it).
//!
//! `positive_data_acceptance` is off: it expects every schema-valid request to succeed, and the schemas
//! cannot say what only the server knows — whether a template is published, whether a provider and region
//! fit it, whether an `Idempotency-Key` was already used for another request, whether a page token was
//! issued. Those answers are 4xx problems the spec documents, which `status_code_conformance` checks.
//!
//! Bounded: a time budget per tenant (`STRATO_FUZZ_SECS`, default 60), a fixed seed (`STRATO_FUZZ_SEED`),
//! and small quotas for the fuzzed tenants, so at most a handful of (cheap, moto-backed) runner tasks start.

use crate::devstack_support;

use std::process::Command;
use std::time::Instant;

use devstack_support::{config, start, workspace};
use strato_aws::store::{Quotas, Store};

const TENANTS: [&str; 2] = ["fuzz-a", "fuzz-b"];

#[tokio::test(flavor = "multi_thread")]
async fn the_api_holds_its_contract_under_schemathesis_as_two_tenants() {
    let t0 = Instant::now();
    let st = tokio::task::spawn_blocking(strato_testbed::schemathesis)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("installing schemathesis: {e}"));
    let stack = start(config("ct").await).await;
    let store = Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names);
    // Creates that pass start real (moto-backed) runner tasks: a few per tenant at most.
    for t in TENANTS {
        let q = Quotas {
            max_clusters: 2,
            max_open_operations: 3,
            max_concurrent_operations: 1,
        };
        store.set_quotas(&t.parse().unwrap(), &q).await.unwrap();
    }
    let spec = workspace().join("functions/api/openapi.yaml");
    let budget = std::env::var("STRATO_FUZZ_SECS").unwrap_or_else(|_| "60".into());
    let seed = std::env::var("STRATO_FUZZ_SEED").unwrap_or_else(|_| "16".into());
    let report_dir = tempfile::tempdir().unwrap();
    for tenant in TENANTS {
        let auth = format!("Authorization: Bearer {}", stack.token(tenant));
        let mut cmd = Command::new(&st);
        cmd.arg("--config-file")
            .arg(workspace().join("tests/tests/devstack/schemathesis.toml"))
            .arg("run")
            .arg(&spec)
            .args(["--url", &stack.endpoints.http_api])
            .args(["--header", &auth])
            .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"])
            // One worker: with two, Hypothesis describes its strategies' lambdas by `ast.parse` on two
            // threads at once, which CPython 3.11 does not survive ("AST constructor recursion depth
            // mismatch", a runtime error of the tool on an arbitrary route; twice in full runs).
            .args(["--max-time", &budget, "--seed", &seed, "--workers", "1"])
            .args([
                // Generous: CI runs this beside other stacks on one shared moto server, where a slow answer is
                // load, not a contract breach (the API's own bounds are its SDK timeouts, tested elsewhere).
                "--request-timeout",
                "60",
                "--no-color",
                "--output-sanitize",
                "true",
            ])
            .arg("--report-dir")
            .arg(report_dir.path())
            .env("PYTHONUNBUFFERED", "1");
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .expect("schemathesis runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            // CI keeps a failing test's stdout and only the first line of its stderr: the failures' headlines
            // go to stdout, one line, before the report.
            println!(
                "[devstack_contract] {tenant} FAILED ({}): {}",
                out.status,
                failures(&stdout).replace('\n', " | ")
            );
        }
        eprintln!("[devstack_contract] {tenant}: {}", summary(&stdout));
        assert!(
            out.status.success(),
            "schemathesis found failures as {tenant}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The fuzzed creates stayed within the quotas: no pile of Terraform runs left behind.
    for t in TENANTS {
        let (clusters, _) = store
            .list_clusters(&t.parse().unwrap(), None, 100, None)
            .await
            .unwrap();
        assert!(clusters.len() <= 2, "{t}: {} clusters", clusters.len());
        eprintln!("[devstack_contract] {t}: {} clusters created", clusters.len());
    }
    eprintln!("[devstack_contract] done in {:?}", t0.elapsed());
}

/// The counts schemathesis prints at the end ("N generated, M found ..."), for the log.
fn summary(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| l.contains("generated") || l.contains("passed") || l.contains("failed"))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The headline of each failure and error schemathesis reports: the operations' section lines and the
/// summary's counted kinds, without the bodies and curl lines, short.
fn failures(stdout: &str) -> String {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("___")
                || l.contains('\u{274c}')
                || l.contains('\u{1f6ab}')
                || l.contains("error")
                || l.contains("Error")
        })
        .map(|l| l.chars().take(160).collect::<String>())
        .take(30)
        .collect::<Vec<_>>()
        .join("\n")
}
