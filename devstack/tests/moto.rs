//! `strato-devstack publish`, through the real binary: the template catalog into an existing stack's table and
//! bucket (a deployed Strato; here one made on moto), idempotently, and a clear failure when the stack is not
//! there.

use std::collections::BTreeSet;

use strato_aws::store::Store;
use strato_terraform::bundle::MANIFEST_FILE;
use strato_testbed::TestEnv;

async fn publish(env: &TestEnv, prefix: &str) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_strato-devstack"))
        .args(["publish", "--direct", "--prefix", prefix])
        .env("AWS_ENDPOINT_URL", &env.endpoint)
        .env("AWS_REGION", &env.region)
        .env_remove("STRATO_TEMPLATES")
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("strato-devstack runs")
}

#[tokio::test(flavor = "multi_thread")]
async fn publish_puts_the_catalog_into_an_existing_stack() {
    let env = TestEnv::new().await;
    let catalog = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates/catalog");
    let expected: BTreeSet<String> = std::fs::read_dir(&catalog)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST_FILE).is_file())
        // A template's name is its manifest's: two versions may live side by side in two directories.
        .map(|e| {
            let text = std::fs::read_to_string(e.path().join(MANIFEST_FILE)).unwrap();
            strato_domain::template::Template::from_toml(&text)
                .unwrap()
                .name()
                .to_owned()
        })
        .collect();
    assert!(!expected.is_empty());

    let out = publish(&env, env.names.prefix()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);
    let listed: BTreeSet<String> = store
        .list_templates()
        .await
        .unwrap()
        .iter()
        .map(|t| t.template.name().to_owned())
        .collect();
    assert_eq!(listed, expected, "{stdout}");
    for name in &expected {
        assert!(stdout.contains(&format!("published {name}@")), "{stdout}");
    }

    // Again: the same content is already there, which is fine.
    let again = publish(&env, env.names.prefix()).await;
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // A stack that was never deployed: every template is reported and the command fails.
    let missing = publish(&env, "never-deployed").await;
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("NOT published"), "{stderr}");
}
