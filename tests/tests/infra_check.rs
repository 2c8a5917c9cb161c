//! Static checks of `infra/` with the modern engine (Terraform >= 1.5 and the AWS provider >= 5 from the
//! machine's filesystem mirror): `fmt -check -recursive`, and `init -backend=false` + `validate` of the
//! example root with no warning at all (deprecations included). The consistency checks between infra/ and
//! the code run on the applied deployment, in infra_apply.rs (infra_support/checks.rs).

// The consistency checks of the module are used by infra_apply.rs.
#[allow(dead_code)]
mod infra_support;

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
