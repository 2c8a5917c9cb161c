//! The cloud side of preparing a run on AWS ([`Cloud`]): the template bundle from the templates bucket,
//! role sessions and the credential check from STS, the state's lock table in DynamoDB and its bucket in
//! S3 (a customer's created if missing).

use std::path::Path;
use std::time::Duration;

use aws_config::SdkConfig;
use strato_aws::aws::AwsClients;
use strato_aws::resources::Names;
use strato_aws::state_lock::HeldLock;
use strato_aws::store::StoredTemplate;
use strato_domain::template::Template;

use crate::RunnerError;
use crate::clouds::storage::StorageAccess;
use crate::clouds::{CloudCheck, CloudEndpoints, PreflightError};
use crate::credentials::{self, EngineCredentials};
use crate::ports::{Cloud, StateBackend};
use crate::trust::{AssumeFailure, SdkSts, Sts};
use strato_domain::model::ListedStateVersion;

/// STS, S3 and DynamoDB with the runner's own credentials (and the sessions it assumes).
#[derive(Clone)]
pub struct AwsCloud {
    pub aws: AwsClients,
    pub names: Names,
    /// STS for role sessions and the preflight (`STRATO_STS_ENDPOINT`, else the provider endpoint).
    pub sts_endpoint: Option<String>,
    /// The emulator endpoint a customer's state bucket is created at (`STRATO_PROVIDER_ENDPOINT`).
    pub provider_endpoint: Option<String>,
    /// Bounds every STS call and each other cloud's preflight (`STRATO_PREFLIGHT_TIMEOUT_SECS`).
    pub timeout: Duration,
    /// The other clouds' identity endpoints (`STRATO_ENDPOINT_*`).
    pub endpoints: CloudEndpoints,
}

impl AwsCloud {
    fn base(&self) -> &SdkConfig {
        &self.aws.config
    }

    /// Built per use: most runs are AWS-only and never load the system's roots for it.
    fn http(&self) -> Result<reqwest::Client, PreflightError> {
        crate::clouds::http::client().map_err(|e| PreflightError {
            what: format!("the HTTPS client could not start: {e}"),
            fix: "retry the operation; report it if it persists".into(),
        })
    }
}

impl Cloud for AwsCloud {
    type State = AwsState;

    async fn fetch_bundle(&self, stored: &StoredTemplate, dest: &Path) -> Result<Template, RunnerError> {
        Ok(
            strato_aws::bundles::fetch(&self.aws, &self.names, &stored.bundle_key, &stored.sha256, dest)
                .await?,
        )
    }

    async fn assume_own_role(
        &self,
        role_arn: &str,
        region: &str,
        policy: &str,
        session: &str,
    ) -> Result<EngineCredentials, String> {
        credentials::assume_role(
            self.base(),
            self.sts_endpoint.as_deref(),
            region,
            role_arn,
            None,
            Some(policy),
            session,
            self.timeout,
        )
        .await
    }

    async fn assume_target_role(
        &self,
        role_arn: &str,
        region: &str,
        session: &str,
        external_id: Option<&str>,
    ) -> Result<EngineCredentials, AssumeFailure> {
        let sts = SdkSts {
            base: self.base(),
            endpoint: self.sts_endpoint.as_deref(),
            region,
            role_arn,
            session_name: session,
            timeout: self.timeout,
        };
        sts.assume(external_id).await
    }

    async fn assume_web_identity(
        &self,
        role_arn: &str,
        region: &str,
        session: &str,
        token: &str,
    ) -> Result<EngineCredentials, String> {
        credentials::assume_web_identity(
            self.base(),
            self.sts_endpoint.as_deref(),
            region,
            role_arn,
            session,
            token,
            self.timeout,
        )
        .await
    }

    async fn preflight(&self, region: &str, creds: &EngineCredentials) -> Result<String, String> {
        credentials::preflight(
            self.base(),
            self.sts_endpoint.as_deref(),
            region,
            Some(creds),
            self.timeout,
        )
        .await
    }

    async fn cloud_preflight(&self, check: CloudCheck<'_>) -> Result<String, PreflightError> {
        // Built per check: most runs are AWS-only and never load the system's roots for it.
        let http = crate::clouds::http::client().map_err(|e| PreflightError {
            what: format!("the {} credential check could not start: {e}", check.cloud()),
            fix: "retry the operation; report it if it persists".into(),
        })?;
        crate::clouds::preflight::check(&http, &self.endpoints, check, self.timeout).await
    }

    async fn list_state_versions(
        &self,
        access: &StorageAccess,
    ) -> Result<Vec<ListedStateVersion>, PreflightError> {
        let http = self.http()?;
        crate::clouds::storage::list(&http, &self.endpoints, self.base(), access, self.timeout).await
    }

    async fn restore_state_version(
        &self,
        access: &StorageAccess,
        key: &str,
        version: &str,
    ) -> Result<String, PreflightError> {
        let http = self.http()?;
        crate::clouds::storage::restore(
            &http,
            &self.endpoints,
            self.base(),
            access,
            key,
            version,
            self.timeout,
        )
        .await
    }

    fn home_region(&self) -> Option<String> {
        self.base().region().map(|r| r.to_string())
    }

    fn platform_state(&self, creds: &EngineCredentials) -> AwsState {
        let base = self.base();
        AwsState {
            ddb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(base)
                    .credentials_provider(creds.provider())
                    .build(),
            ),
            s3: Some(aws_sdk_s3::Client::from_conf(
                aws_sdk_s3::config::Builder::from(base)
                    .force_path_style(base.endpoint_url().is_some())
                    .credentials_provider(creds.provider())
                    .build(),
            )),
        }
    }

    async fn customer_state(
        &self,
        region: &str,
        creds: &EngineCredentials,
        bucket: &str,
        lock_table: &str,
    ) -> Result<AwsState, String> {
        let ddb = ensure_customer_state(
            self.base(),
            self.provider_endpoint.as_deref(),
            region,
            creds,
            bucket,
            lock_table,
        )
        .await?;
        Ok(AwsState { ddb, s3: None })
    }
}

/// A run's state on AWS: its lock table through the state's credentials, and for the platform's bucket S3
/// through the run's state session.
pub struct AwsState {
    ddb: aws_sdk_dynamodb::Client,
    /// `None` for a customer's bucket, which is never retired.
    s3: Option<aws_sdk_s3::Client>,
}

impl StateBackend for AwsState {
    async fn held_locks(&self, table: &str, lock_ids: &[String]) -> Result<Vec<HeldLock>, RunnerError> {
        Ok(crate::state_lock::held(&self.ddb, table, lock_ids).await?)
    }

    async fn release_locks(&self, table: &str, locks: Vec<HeldLock>) -> Result<Vec<HeldLock>, RunnerError> {
        Ok(crate::state_lock::release(&self.ddb, table, locks).await?)
    }

    async fn retire(&self, bucket: &str, key: &str) -> Result<(), RunnerError> {
        let Some(s3) = &self.s3 else {
            return Err(RunnerError::Config(format!(
                "{bucket} is a customer's state bucket; only the platform's state is retired"
            )));
        };
        s3.delete_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| strato_aws::Error::aws("DeleteObject", e))?;
        Ok(())
    }
}

/// The customer's state bucket (versioned, encrypted) and lock table, created with the target account's
/// credentials if missing.
async fn ensure_customer_state(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    creds: &EngineCredentials,
    bucket: &str,
    lock_table: &str,
) -> Result<aws_sdk_dynamodb::Client, String> {
    let mut b = base
        .to_builder()
        .region(aws_config::Region::new(region.to_owned()))
        .credentials_provider(creds.provider());
    if let Some(ep) = endpoint {
        b = b.endpoint_url(ep);
    }
    let aws = AwsClients::from_config(b.build());
    strato_aws::resources::create_bucket(&aws, bucket, true)
        .await
        .map_err(|e| format!("customer state bucket {bucket}: {e}"))?;
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let res = aws
        .dynamodb
        .create_table()
        .table_name(lock_table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("LockID")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("LockID")
                .key_type(KeyType::Hash)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .send()
        .await;
    match res {
        Ok(_) => Ok(aws.dynamodb),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            Ok(aws.dynamodb)
        }
        Err(e) => Err(format!(
            "customer lock table {lock_table}: {}",
            strato_aws::Error::aws("CreateTable", e)
        )),
    }
}
