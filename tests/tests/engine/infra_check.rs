//! Static checks of `infra/` with the modern engine (Terraform >= 1.5 and the AWS provider >= 5 from the
//! machine's filesystem mirror): `fmt -check -recursive`, and `init -backend=false` + `validate` of the
//! example root with no warning at all (deprecations included). The consistency checks between infra/ and
//! the code run on the applied deployment, in infra_apply.rs (infra_support/checks.rs).

// The consistency checks of the module are used by infra_apply.rs.
use crate::infra_support;

use infra_support::{infra_copy, tf};

#[test]
fn infra_validates_with_the_modern_engine() {
    let Some(engine) = strato_testbed::modern_engine_or_skip("infra_validates_with_the_modern_engine") else {
        return;
    };
    let dir = infra_copy();
    tf(
        engine,
        dir.path(),
        &["fmt", "-check", "-recursive", "-diff", "-no-color"],
        &[],
        &[0],
    );
    let example = dir.path().join("example");
    let init = tf(
        engine,
        &example,
        &["init", "-backend=false", "-input=false", "-no-color"],
        &[],
        &[0],
    );
    let out = tf(engine, &example, &["validate", "-no-color"], &[], &[0]);
    let text = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    let (init, validate) = (text(&init), text(&out));
    assert!(validate.contains("The configuration is valid"), "{validate}");
    assert!(
        !validate.contains("Warning"),
        "validate warns (deprecations?):\n{validate}"
    );
    // init's one expected note: a mirror-only install computes the lock file's checksums for this platform
    // alone (no lock file is committed: users install from the registry on their own platforms).
    let init_warnings: Vec<&str> = init.lines().filter(|l| l.contains("Warning")).collect();
    assert!(
        init_warnings
            .iter()
            .all(|l| l.contains("Incomplete lock file information for providers")),
        "init warns:\n{init}"
    );
    assert!(
        init.contains(&engine.provider_version),
        "the mirror's provider was installed:\n{init}"
    );
}

/// The console module on a plan (infra_support/console.rs: why not applied), with a placeholder dist: its
/// bucket, files, console.json, headers policy, OAC origin, /v1/* behaviour and SPA function; and a dist
/// without index.html refused at plan time.
#[test]
fn console_module_plans_its_cdn_contract() {
    let Some(engine) = strato_testbed::modern_engine_or_skip("console_module_plans_its_cdn_contract") else {
        return;
    };
    let dir = infra_copy();
    let root = dir.path().join("console_plan");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("main.tf"), infra_support::console::root()).unwrap();
    let dist = dir.path().join("dist");
    infra_support::console::placeholder_dist(&dist);
    // No AWS call is made: dummy credentials, no endpoint, and nothing outside this machine.
    let env = [("AWS_EC2_METADATA_DISABLED", "true")];
    tf(
        engine,
        &root,
        &["init", "-backend=false", "-input=false", "-no-color"],
        &env,
        &[0],
    );
    let dist_var = format!("-var=dist_dir={}", dist.display());
    tf(
        engine,
        &root,
        &[
            "plan",
            "-input=false",
            "-no-color",
            &dist_var,
            "-out=console.plan",
        ],
        &env,
        &[0],
    );
    let show = tf(engine, &root, &["show", "-json", "console.plan"], &env, &[0]);
    let plan: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    infra_support::console::check_plan(&plan, &infra_support::console::FIXED);

    // With the operator's certificate and web ACL: their names, SNI, TLS 1.2 as the viewers' minimum, the ACL.
    const CERT: &str = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-0123456789ab";
    const ACL: &str = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/strato/0f1e2d3c";
    tf(
        engine,
        &root,
        &[
            "plan",
            "-input=false",
            "-no-color",
            &dist_var,
            &format!("-var=certificate_arn={CERT}"),
            "-var=aliases=[\"console.example.com\"]",
            &format!("-var=waf_web_acl_arn={ACL}"),
            "-out=console-tls.plan",
        ],
        &env,
        &[0],
    );
    let show = tf(engine, &root, &["show", "-json", "console-tls.plan"], &env, &[0]);
    let plan: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let cdn = infra_support::State::from_module(&plan["planned_values"]["root_module"]);
    let cdn = cdn
        .all("aws_cloudfront_distribution")
        .next()
        .expect("the distribution");
    let cert = cdn.block("viewer_certificate");
    assert_eq!(cert["minimum_protocol_version"], "TLSv1.2_2021", "{cert}");
    assert_eq!(cert["ssl_support_method"], "sni-only", "{cert}");
    assert_eq!(cert["acm_certificate_arn"], CERT);
    assert_eq!(cert["cloudfront_default_certificate"], false);
    assert_eq!(cdn.values["aliases"], serde_json::json!(["console.example.com"]));
    assert_eq!(cdn.s("web_acl_id"), ACL);

    let empty = dir.path().join("no-build");
    std::fs::create_dir_all(&empty).unwrap();
    let refused = tf(
        engine,
        &root,
        &[
            "plan",
            "-input=false",
            "-no-color",
            &format!("-var=dist_dir={}", empty.display()),
        ],
        &env,
        &[1],
    );
    // Diagnostics are wrapped at 78 columns: compare with whitespace collapsed.
    let text = String::from_utf8_lossy(&refused.stderr);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("build the console first (cd console && npm ci && npm run build)"),
        "a dist without index.html is refused with the way to build it:\n{text}"
    );
}

/// checkov (pinned, in the test bed: `strato_testbed::checkov`) on infra/: no failed check, no parsing
/// error, and every check it skips is skipped on purpose — an inline `#checkov:skip=<id>:<reason>` with its
/// reason, and the check named in infra/README.md (Checkov), so a new finding fails here until it is fixed
/// or explained in both places.
#[test]
fn checkov_finds_nothing_unexplained_in_infra() {
    let checkov = strato_testbed::checkov().unwrap_or_else(|e| panic!("{e}"));
    let dir = infra_copy();
    let out = std::process::Command::new(&checkov)
        .args(["--directory", ".", "--framework", "terraform", "--output", "json"])
        // Offline and quiet: no download of external checks or guidelines, no telemetry.
        .arg("--skip-download")
        .current_dir(dir.path())
        .env("BC_SKIP_MAPPING", "TRUE")
        .env("CHECKOV_RUN_SCA_PACKAGE_SCAN_V2", "false")
        .output()
        .expect("running checkov");
    // 0: nothing failed, 1: something failed (reported below); anything else is checkov's own error.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "checkov failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("checkov's JSON: {e}\n{}", String::from_utf8_lossy(&out.stdout)));
    // One framework gives one object; several a list.
    let report = report.as_array().map_or(&report, |a| &a[0]);
    let summary = &report["summary"];
    assert_eq!(summary["checkov_version"], strato_testbed::CHECKOV_VERSION);
    assert_eq!(summary["parsing_errors"], 0, "{summary}");
    assert!(
        summary["resource_count"].as_u64().unwrap_or(0) > 100
            && summary["passed"].as_u64().unwrap_or(0) > 100,
        "checkov scanned the deployment: {summary}"
    );
    let results = &report["results"];
    let failed: Vec<String> = results["failed_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            format!(
                "{} {} ({}{:?}): {}",
                f["check_id"], f["resource"], f["file_path"], f["file_line_range"], f["check_name"]
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "checkov findings to fix, or to skip with a reason (#checkov:skip=<id>:<why>) and name in infra/README.md:\n{}",
        failed.join("\n")
    );
    let readme = std::fs::read_to_string(infra_support::infra_dir().join("README.md")).unwrap();
    let mut unexplained = Vec::new();
    for s in results["skipped_checks"].as_array().into_iter().flatten() {
        let id = s["check_id"].as_str().unwrap_or_default();
        let why = s["check_result"]["suppress_comment"].as_str().unwrap_or_default();
        if why.trim().len() < 20 || !readme.contains(&format!("`{id}`")) {
            unexplained.push(format!("{id} on {}: {why:?}", s["resource"]));
        }
    }
    assert!(
        unexplained.is_empty(),
        "skipped without a reason or not named in infra/README.md:\n{}",
        unexplained.join("\n")
    );
}
