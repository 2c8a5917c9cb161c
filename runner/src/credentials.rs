//! Target-account credentials: assume the cluster's role with STS (external id), hand the temporary
//! credentials to the engine only through its environment, and check them first (preflight) with a short
//! timeout — some providers hang forever on bad credentials.

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sts::config::Credentials;
use secrecy::{ExposeSecret, SecretString};

/// Temporary credentials for the engine's environment (the secret parts never printed).
#[derive(Debug, Clone)]
pub struct EngineCredentials {
    pub access_key_id: String,
    pub secret_access_key: SecretString,
    pub session_token: Option<SecretString>,
}

impl EngineCredentials {
    /// The environment variables the engine (provider and S3 backend) reads.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("AWS_ACCESS_KEY_ID".to_owned(), self.access_key_id.clone()),
            (
                "AWS_SECRET_ACCESS_KEY".to_owned(),
                self.secret_access_key.expose_secret().to_owned(),
            ),
        ];
        if let Some(t) = &self.session_token {
            v.push(("AWS_SESSION_TOKEN".to_owned(), t.expose_secret().to_owned()));
        }
        v
    }

    /// Variables removed from the inherited environment so the runner's own identity cannot leak into the
    /// engine alongside the target account's.
    pub const INHERITED: &'static [&'static str] = &[
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ];
}

pub(crate) fn sts_client(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    timeout: Duration,
    creds: Option<&EngineCredentials>,
) -> aws_sdk_sts::Client {
    let mut b = aws_sdk_sts::config::Builder::from(base)
        .region(Region::new(region.to_owned()))
        .timeout_config(
            aws_config::timeout::TimeoutConfig::builder()
                .operation_timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(3)))
                .build(),
        )
        // A dead endpoint must fail within the timeout, not after the SDK's retries.
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(2));
    if let Some(ep) = endpoint {
        b = b.endpoint_url(ep);
    }
    if let Some(c) = creds {
        b = b.credentials_provider(Credentials::new(
            c.access_key_id.clone(),
            c.secret_access_key.expose_secret().to_owned(),
            c.session_token.as_ref().map(|t| t.expose_secret().to_owned()),
            None,
            "strato-target-account",
        ));
    }
    aws_sdk_sts::Client::from_conf(b.build())
}

/// Assumes `role_arn` with `external_id`. Errors are messages for the user (credentials category).
pub async fn assume_role(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    role_arn: &str,
    external_id: &str,
    session_name: &str,
    timeout: Duration,
) -> Result<EngineCredentials, String> {
    let client = sts_client(base, endpoint, region, timeout, None);
    let call = client
        .assume_role()
        .role_arn(role_arn)
        .external_id(external_id)
        .role_session_name(session_name)
        .duration_seconds(3600)
        .send();
    let out = match tokio::time::timeout(timeout, call).await {
        Err(_) => {
            return Err(format!(
                "assuming role {role_arn} did not answer within {}s",
                timeout.as_secs()
            ));
        }
        Ok(Err(e)) => {
            // The message reaches the user and the logs; the external id (the customer's secret) must not,
            // whatever the service echoed back.
            let reason = strato_aws::Error::aws("AssumeRole", e).to_string();
            return Err(format!(
                "assuming role {role_arn} failed: {}",
                reason.replace(external_id, "(external id)")
            ));
        }
        Ok(Ok(out)) => out,
    };
    let c = out
        .credentials()
        .ok_or_else(|| format!("assuming role {role_arn} returned no credentials"))?;
    Ok(EngineCredentials {
        access_key_id: c.access_key_id().to_owned(),
        secret_access_key: c.secret_access_key().into(),
        session_token: Some(c.session_token().into()),
    })
}

/// sts:GetCallerIdentity with the engine's credentials (or the runner's own when `None`), bounded by
/// `timeout`. Returns the account id.
pub async fn preflight(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    creds: Option<&EngineCredentials>,
    timeout: Duration,
) -> Result<String, String> {
    let client = sts_client(base, endpoint, region, timeout, creds);
    match tokio::time::timeout(timeout, client.get_caller_identity().send()).await {
        Err(_) => Err(format!(
            "the credential check (sts:GetCallerIdentity) did not answer within {}s",
            timeout.as_secs()
        )),
        Ok(Err(e)) => Err(format!(
            "the credential check (sts:GetCallerIdentity) failed: {}",
            strato_aws::Error::aws("GetCallerIdentity", e)
        )),
        Ok(Ok(out)) => Ok(out.account().unwrap_or_default().to_owned()),
    }
}

/// The SDK config the runner's own clients use, with the default behaviour version (for tests).
pub async fn default_base() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}
