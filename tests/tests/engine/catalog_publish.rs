//! Publishing the catalog: every template is packed, checked and published; bundles verify by checksum;
//! republishing unchanged content is a no-op; a changed template under the same version is refused and the
//! catalog entry stays as it was.

use crate::catalog_common;

use std::path::Path;

use catalog_common::templates_root;
use strato_aws::Error;
use strato_aws::bundles::publish_catalog;
use strato_aws::store::Store;
use strato_testbed::TestEnv;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let target = to.join(&name);
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_catalog_publishes_verifies_and_stays_immutable() {
    let env = TestEnv::new().await;
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);

    let published = publish_catalog(&env.aws, &env.names, &templates_root())
        .await
        .unwrap();
    let ids: Vec<(&str, &str)> = published
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str()))
        .collect();
    // The other clouds' templates publish like AWS's (publishing runs no engine); that their providers cannot
    // be installed here is said by their manifests (verified_offline = false), not hidden by leaving them out.
    assert_eq!(
        ids,
        [
            ("aws-eks-advanced", "1.1.0"),
            ("aws-eks-basic", "1.1.0"),
            ("aws-eks-basic", "1.2.0"),
            ("azure-aks-basic", "1.0.0"),
            ("do-doks-basic", "1.0.0"),
            ("gcp-gke-basic", "1.0.0"),
            ("linode-lke-basic", "1.0.0"),
        ]
    );

    for p in &published {
        let entry = store.get_template(&p.name, &p.version).await.unwrap().unwrap();
        assert_eq!(entry.sha256, p.sha256);
        assert_eq!(entry.bundle_key, p.bundle_key);
        // The bundle in S3 hashes to what the catalog says and unpacks to the manifest and its modules.
        let dest = tempfile::tempdir().unwrap();
        let t = strato_aws::bundles::fetch(&env.aws, &env.names, &p.bundle_key, &p.sha256, dest.path())
            .await
            .unwrap();
        assert_eq!((t.name(), t.version()), (p.name.as_str(), p.version.as_str()));
        for m in t.manifest.stages.iter().flat_map(|s| &s.modules) {
            for f in [
                "variables.tf",
                "outputs.tf",
                "main.tf",
                "README.md",
                "examples/main.tf",
            ] {
                assert!(dest.path().join("modules").join(m).join(f).is_file(), "{m}/{f}");
            }
        }
        // A wrong checksum is refused before anything is extracted.
        let wrong = "0".repeat(64);
        let other = tempfile::tempdir().unwrap();
        let err = strato_aws::bundles::fetch(&env.aws, &env.names, &p.bundle_key, &wrong, other.path())
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Domain(strato_domain::Error::Checksum { .. })),
            "{err}"
        );
        assert!(std::fs::read_dir(other.path()).unwrap().next().is_none());
    }
    let basic_modules: Vec<String> = {
        let dest = tempfile::tempdir().unwrap();
        let p = &published[1];
        strato_aws::bundles::fetch(&env.aws, &env.names, &p.bundle_key, &p.sha256, dest.path())
            .await
            .unwrap();
        let mut m: Vec<String> = std::fs::read_dir(dest.path().join("modules"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        m.sort();
        m
    };
    assert_eq!(
        basic_modules,
        ["k8s", "network"],
        "essentials is not in the basic bundle"
    );

    // Same content again: a no-op with the same hashes.
    let again = publish_catalog(&env.aws, &env.names, &templates_root())
        .await
        .unwrap();
    assert_eq!(again, published);

    // A changed module under the same version is refused; the catalog entry is unchanged.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&templates_root(), copy.path());
    let readme = copy.path().join("modules/k8s/README.md");
    let mut text = std::fs::read_to_string(&readme).unwrap();
    text.push_str("\nA changed line.\n");
    std::fs::write(&readme, text).unwrap();
    let err = publish_catalog(&env.aws, &env.names, copy.path())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(err.to_string().contains("aws-eks-advanced@1.1.0"), "{err}");
    for p in &published {
        let entry = store.get_template(&p.name, &p.version).await.unwrap().unwrap();
        assert_eq!(entry.sha256, p.sha256, "{} entry unchanged", p.name);
        assert_eq!(entry.bundle_key, p.bundle_key);
    }

    // Publishing the change as a new version works and keeps the old one.
    for (t, from, to) in [
        ("aws-eks-advanced", "1.1.0", "1.1.1"),
        ("aws-eks-basic", "1.1.0", "1.1.1"),
        ("aws-eks-basic-1.2.0", "1.2.0", "1.2.1"),
    ] {
        let path = copy.path().join("catalog").join(t).join("template.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen(
                &format!("version = \"{from}\""),
                &format!("version = \"{to}\""),
                1,
            ),
        )
        .unwrap();
    }
    let newer = publish_catalog(&env.aws, &env.names, copy.path()).await.unwrap();
    // Only the AWS templates use the changed module; the others publish again unchanged.
    let bumped: Vec<&str> = newer[..3].iter().map(|p| p.version.as_str()).collect();
    assert_eq!(bumped, ["1.1.1", "1.1.1", "1.2.1"]);
    assert_eq!(newer[3..], published[3..]);
    assert_ne!(newer[1].sha256, published[1].sha256);
    assert_ne!(newer[2].sha256, published[2].sha256);
    let versions: Vec<(String, String)> = store
        .list_templates()
        .await
        .unwrap()
        .iter()
        .map(|s| (s.template.name().to_owned(), s.template.version().to_owned()))
        .collect();
    assert_eq!(
        versions,
        [
            ("aws-eks-advanced".to_owned(), "1.1.0".to_owned()),
            ("aws-eks-advanced".to_owned(), "1.1.1".to_owned()),
            ("aws-eks-basic".to_owned(), "1.1.0".to_owned()),
            ("aws-eks-basic".to_owned(), "1.1.1".to_owned()),
            ("aws-eks-basic".to_owned(), "1.2.0".to_owned()),
            ("aws-eks-basic".to_owned(), "1.2.1".to_owned()),
            ("azure-aks-basic".to_owned(), "1.0.0".to_owned()),
            ("do-doks-basic".to_owned(), "1.0.0".to_owned()),
            ("gcp-gke-basic".to_owned(), "1.0.0".to_owned()),
            ("linode-lke-basic".to_owned(), "1.0.0".to_owned()),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_that_disagrees_with_its_modules_is_not_published() {
    let env = TestEnv::new().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/catalog-broken");
    let err = publish_catalog(&env.aws, &env.names, &root).await.unwrap_err();
    assert!(
        err.to_string().contains("schema disagrees with its modules"),
        "{err}"
    );
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);
    assert!(store.get_template("broken", "1.0.0").await.unwrap().is_none());
}
