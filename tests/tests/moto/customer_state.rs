//! A state in a customer's own AWS bucket, as a run lists and restores it (`strato_runner::clouds::storage`,
//! the `restore-state` operation's copy) against moto: every version listed newest first with the current
//! one marked; a restore copies the chosen version back and sets Terraform's digest in the customer's lock
//! table to the restored bytes; a version that is not there changes nothing and the error holds no
//! credential.

use md5::{Digest, Md5};
use strato_aws::store::Store;
use strato_runner::clouds::CloudEndpoints;
use strato_runner::clouds::storage::{self, S3Access, StorageAccess};
use strato_runner::credentials::EngineCredentials;
use strato_testbed::TestEnv;

const OLD: &str = r#"{"version":4,"serial":7}"#;
const NEW: &str = r#"{"version":4,"serial":8,"broken":true}"#;
const SECRET: &str = "customer-secret-key/0123456789";
const LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

struct Bed {
    env: TestEnv,
    access: StorageAccess,
    bucket: String,
    table: String,
    key: String,
}

/// OLD then NEW (current) in the bucket, Terraform's digest of NEW in the lock table.
async fn bed() -> Bed {
    let env = TestEnv::new().await;
    let bucket = env.names.bucket("state");
    let table = env.names.table("tf-locks");
    let prefix = format!(
        "tenants/acme/clusters/{}/",
        strato_domain::ids::ClusterId::generate()
    );
    let key = format!("{prefix}main.tfstate");
    for body in [OLD, NEW] {
        env.aws
            .s3
            .put_object()
            .bucket(&bucket)
            .key(&key)
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .unwrap();
    }
    Store::new(env.aws.dynamodb.clone(), &env.names)
        .set_state_digest(&bucket, &key, &md5_hex(NEW.as_bytes()))
        .await
        .unwrap();
    let access = StorageAccess::S3(S3Access {
        endpoint: None,
        path_style: true,
        region: env.region.clone(),
        bucket: bucket.clone(),
        prefix,
        creds: EngineCredentials {
            access_key_id: "AKIACUSTOMER".into(),
            secret_access_key: SECRET.to_owned().into(),
            session_token: None,
        },
        lock_table: Some(table.clone()),
    });
    Bed {
        env,
        access,
        bucket,
        table,
        key,
    }
}

impl Bed {
    async fn current(&self) -> String {
        self.env.object_text(&self.bucket, &self.key).await
    }

    async fn digest(&self) -> String {
        self.env.state_digest(&self.table, &self.bucket, &self.key).await
    }

    async fn list(&self) -> Vec<strato_domain::model::ListedStateVersion> {
        let http = reqwest::Client::new();
        storage::list(
            &http,
            &CloudEndpoints::default(),
            &self.env.aws.config,
            &self.access,
            LIMIT,
        )
        .await
        .unwrap()
    }

    async fn restore(&self, version: &str) -> Result<String, strato_runner::clouds::PreflightError> {
        let http = reqwest::Client::new();
        storage::restore(
            &http,
            &CloudEndpoints::default(),
            &self.env.aws.config,
            &self.access,
            &self.key,
            version,
            LIMIT,
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_customers_bucket_is_listed_and_an_older_version_restored_with_terraforms_digest() {
    let b = bed().await;
    let listed = b.list().await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed[0].is_latest && !listed[1].is_latest,
        "newest first: {listed:?}"
    );
    assert_eq!(listed[1].size, OLD.len() as i64);
    let old = listed[1].version_id.clone();

    let new_version = b.restore(&old).await.unwrap();
    assert!(!new_version.is_empty());
    assert_eq!(b.current().await, OLD);
    assert_eq!(
        b.digest().await,
        md5_hex(OLD.as_bytes()),
        "Terraform's digest is the restored bytes'"
    );
    let after = b.list().await;
    assert_eq!(after.len(), 3);
    assert_eq!(after[0].version_id, new_version);
    assert!(after[0].is_latest);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_that_is_not_there_changes_nothing_and_the_error_holds_no_credential() {
    let b = bed().await;
    let e = b.restore("no-such-version").await.unwrap_err();
    assert!(e.what.contains("GetObject"), "{e:?}");
    assert!(!format!("{e:?}").contains(SECRET), "{e:?}");
    assert_eq!(b.current().await, NEW);
    assert_eq!(b.digest().await, md5_hex(NEW.as_bytes()));
}
