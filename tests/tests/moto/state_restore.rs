//! A state restore (`S3StateArchive::restore_state_version`, used by `POST …/state-versions/{v}/restore`)
//! against moto: it records Terraform's digest of the restored bytes, and a failure at any step leaves the
//! current state and its digest agreeing (issue 16, finding 1: the digest write refused after the copy left
//! a stale digest and every later init/plan failing its checksum).

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use md5::{Digest, Md5};
use strato_aws::Error;
use strato_aws::ports::{S3StateArchive, state_prefix};
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::ports::{StateArchive, StateVersion};
use strato_testbed::TestEnv;

const OLD: &str = r#"{"version":4,"serial":7}"#;
const NEW: &str = r#"{"version":4,"serial":8,"broken":true}"#;

struct Bed {
    env: TestEnv,
    store: Store,
    bucket: String,
    key: String,
    old: StateVersion,
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

/// Two versions of a state (OLD, then NEW current) with Terraform's digest of NEW recorded.
async fn bed() -> Bed {
    let env = TestEnv::new().await;
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);
    let bucket = env.names.bucket("state");
    let tenant: TenantId = "acme".parse().unwrap();
    let cluster = ClusterId::generate();
    let key = format!("{}main.tfstate", state_prefix(&tenant, &cluster));
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
    store
        .set_state_digest(&bucket, &key, &md5_hex(NEW.as_bytes()))
        .await
        .unwrap();
    let archive = S3StateArchive {
        s3: &env.aws.s3,
        store: &store,
        bucket: &bucket,
    };
    let old = archive
        .state_versions(&tenant, &cluster)
        .await
        .unwrap()
        .into_iter()
        .find(|v| !v.is_latest)
        .unwrap();
    Bed {
        env,
        store,
        bucket,
        key,
        old,
    }
}

impl Bed {
    async fn current(&self) -> String {
        self.env.object_text(&self.bucket, &self.key).await
    }

    /// The digest item Terraform reads (`<bucket>/<key>-md5`).
    async fn digest(&self) -> String {
        self.env
            .state_digest(&self.env.names.table("tf-locks"), &self.bucket, &self.key)
            .await
    }

    async fn assert_consistent(&self, expected_state: &str) {
        let current = self.current().await;
        assert_eq!(current, expected_state);
        assert_eq!(
            self.digest().await,
            md5_hex(current.as_bytes()),
            "the digest is the current state's"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restore_records_the_digest_of_the_restored_bytes() {
    let b = bed().await;
    let archive = S3StateArchive {
        s3: &b.env.aws.s3,
        store: &b.store,
        bucket: &b.bucket,
    };
    let restored = archive.restore_state_version(&b.old).await.unwrap();
    assert!(!restored.new_version.is_empty());
    b.assert_consistent(OLD).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_digest_write_leaves_the_state_and_its_digest_as_they_were() {
    let b = bed().await;
    // The digest goes to a table that does not exist: PutItem is refused, as IAM refused it in AWS.
    let refused = Store::new(b.env.aws.dynamodb.clone(), &Names::new("no-such-stack").unwrap());
    let archive = S3StateArchive {
        s3: &b.env.aws.s3,
        store: &refused,
        bucket: &b.bucket,
    };
    let err = Error::from(archive.restore_state_version(&b.old).await.unwrap_err());
    assert!(
        matches!(err, Error::StateRestore { unchanged: true, .. }),
        "{err}"
    );
    b.assert_consistent(NEW).await;
}

/// Fails every CopyObject before it is sent.
#[derive(Debug)]
struct RefuseCopy;

impl Intercept for RefuseCopy {
    fn name(&self) -> &'static str {
        "refuse-copy"
    }

    fn read_before_serialization(
        &self,
        _ctx: &BeforeSerializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        match cfg.load::<Metadata>() {
            Some(m) if m.name() == "CopyObject" => Err("AccessDenied (test)".into()),
            _ => Ok(()),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_copy_puts_the_previous_digest_back() {
    let b = bed().await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&b.env.aws.config)
            .force_path_style(true)
            .interceptor(RefuseCopy)
            .build(),
    );
    let archive = S3StateArchive {
        s3: &s3,
        store: &b.store,
        bucket: &b.bucket,
    };
    let err = Error::from(archive.restore_state_version(&b.old).await.unwrap_err());
    assert!(
        matches!(err, Error::StateRestore { unchanged: true, .. }),
        "{err}"
    );
    b.assert_consistent(NEW).await;
}
