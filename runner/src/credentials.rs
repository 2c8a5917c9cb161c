//! Target-account credentials: assume the cluster's role with STS (external id), hand the temporary
//! credentials to the engine only through a shared credentials file its environment names (never through
//! the configuration it records in a saved plan), and check them first (preflight) with a short timeout —
//! some providers hang forever on bad credentials.

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sts::config::{Credentials, SharedCredentialsProvider};
use secrecy::{ExposeSecret, SecretString};

/// The profile of the run's credentials file the providers use (`AWS_PROFILE`).
pub const ENGINE_PROFILE: &str = "strato-engine";
/// The profile of the run's credentials file the S3 backend uses (its block's `profile`).
pub const STATE_PROFILE: &str = "strato-state";

/// Temporary credentials for the engine (the secret parts never printed).
#[derive(Debug, Clone)]
pub struct EngineCredentials {
    pub access_key_id: String,
    pub secret_access_key: SecretString,
    pub session_token: Option<SecretString>,
}

impl EngineCredentials {
    /// This session as a `[profile]` section of a shared credentials file (the format both engine
    /// generations' AWS SDKs read).
    pub fn profile_section(&self, profile: &str) -> String {
        let mut s = format!(
            "[{profile}]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            self.access_key_id,
            self.secret_access_key.expose_secret()
        );
        if let Some(t) = &self.session_token {
            s.push_str(&format!("aws_session_token = {}\n", t.expose_secret()));
        }
        s
    }

    /// For SDK clients of the runner's own that act with these credentials.
    pub fn provider(&self) -> SharedCredentialsProvider {
        SharedCredentialsProvider::new(Credentials::new(
            self.access_key_id.clone(),
            self.secret_access_key.expose_secret().to_owned(),
            self.session_token.as_ref().map(|t| t.expose_secret().to_owned()),
            None,
            "strato-run-session",
        ))
    }
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

/// Assumes `role_arn` (with `external_id` for a target account; with a session `policy` narrowing the role
/// for the deployment's own roles). Errors are messages for the user (credentials category).
#[allow(clippy::too_many_arguments)] // one call's parameters, each named at the three call sites
pub async fn assume_role(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    role_arn: &str,
    external_id: Option<&str>,
    policy: Option<&str>,
    session_name: &str,
    timeout: Duration,
) -> Result<EngineCredentials, String> {
    let client = sts_client(base, endpoint, region, timeout, None);
    let call = client
        .assume_role()
        .role_arn(role_arn)
        .set_external_id(external_id.map(str::to_owned))
        .set_policy(policy.map(str::to_owned))
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
                match external_id {
                    Some(id) => reason.replace(id, "(external id)"),
                    None => reason,
                }
            ));
        }
        Ok(Ok(out)) => out,
    };
    session_of(out.credentials(), role_arn)
}

/// The session an STS call returned, as the engine's credentials.
fn session_of(
    c: Option<&aws_sdk_sts::types::Credentials>,
    role_arn: &str,
) -> Result<EngineCredentials, String> {
    let c = c.ok_or_else(|| format!("assuming role {role_arn} returned no credentials"))?;
    Ok(EngineCredentials {
        access_key_id: c.access_key_id().to_owned(),
        secret_access_key: c.secret_access_key().into(),
        session_token: Some(c.session_token().into()),
    })
}

/// Assumes `role_arn` with a run identity token (`sts:AssumeRoleWithWebIdentity`, an unsigned call: the
/// token is the proof). Errors are messages for the user, never carrying the token.
pub async fn assume_web_identity(
    base: &SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    role_arn: &str,
    session_name: &str,
    token: &str,
    timeout: Duration,
) -> Result<EngineCredentials, String> {
    let client = sts_client(base, endpoint, region, timeout, None);
    let call = client
        .assume_role_with_web_identity()
        .role_arn(role_arn)
        .role_session_name(session_name)
        .web_identity_token(token)
        .duration_seconds(3600)
        .send();
    let out = match tokio::time::timeout(timeout, call).await {
        Err(_) => {
            return Err(format!(
                "assuming role {role_arn} with the run's identity token did not answer within {}s",
                timeout.as_secs()
            ));
        }
        Ok(Err(e)) => {
            let reason = strato_aws::Error::aws("AssumeRoleWithWebIdentity", e)
                .to_string()
                .replace(token, "(identity token)");
            return Err(format!(
                "assuming role {role_arn} with the run's identity token failed: {reason}"
            ));
        }
        Ok(Ok(out)) => out,
    };
    session_of(out.credentials(), role_arn)
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
