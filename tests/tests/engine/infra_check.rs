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
