//! Where each cloud's identity endpoints are: the real ones, or (tests, devstack) an emulator's.

use strato_aws::env::Env;

/// Base URLs (scheme and host, no trailing slash) of the endpoints the preflight calls. Each defaults to the
/// cloud's public endpoint and is overridden by `STRATO_ENDPOINT_<NAME>` (`GCP_STS`, `GCP_IAM_CREDENTIALS`,
/// `AZURE_LOGIN`, `AZURE_MANAGEMENT`, `DIGITALOCEAN`, `LINODE`), read with the runner's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudEndpoints {
    /// Google's Security Token Service (`POST /v1/token`).
    pub gcp_sts: String,
    /// Google's IAM Service Account Credentials API (`generateAccessToken`).
    pub gcp_iam_credentials: String,
    /// Microsoft Entra ID's token endpoint host (`POST /<tenant>/oauth2/v2.0/token`).
    pub azure_login: String,
    /// Azure Resource Manager (`GET /subscriptions/<id>`).
    pub azure_management: String,
    /// DigitalOcean's API (`GET /v2/account`).
    pub digitalocean: String,
    /// Linode's API (`GET /v4/profile`).
    pub linode: String,
}

impl Default for CloudEndpoints {
    fn default() -> Self {
        Self {
            gcp_sts: "https://sts.googleapis.com".into(),
            gcp_iam_credentials: "https://iamcredentials.googleapis.com".into(),
            azure_login: "https://login.microsoftonline.com".into(),
            azure_management: "https://management.azure.com".into(),
            digitalocean: "https://api.digitalocean.com".into(),
            linode: "https://api.linode.com".into(),
        }
    }
}

impl CloudEndpoints {
    /// Every endpoint at one base URL: an emulator answering all of them (their paths do not overlap).
    pub fn all_at(base: &str) -> Self {
        let b = base.trim_end_matches('/').to_owned();
        Self {
            gcp_sts: b.clone(),
            gcp_iam_credentials: b.clone(),
            azure_login: b.clone(),
            azure_management: b.clone(),
            digitalocean: b.clone(),
            linode: b,
        }
    }

    /// The defaults, each overridden by its `STRATO_ENDPOINT_<NAME>` when set.
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Self {
        let d = Self::default();
        let get = |var: &'static str, default: String| {
            env.optional(var)
                .map(|v| v.trim_end_matches('/').to_owned())
                .unwrap_or(default)
        };
        Self {
            gcp_sts: get("STRATO_ENDPOINT_GCP_STS", d.gcp_sts),
            gcp_iam_credentials: get("STRATO_ENDPOINT_GCP_IAM_CREDENTIALS", d.gcp_iam_credentials),
            azure_login: get("STRATO_ENDPOINT_AZURE_LOGIN", d.azure_login),
            azure_management: get("STRATO_ENDPOINT_AZURE_MANAGEMENT", d.azure_management),
            digitalocean: get("STRATO_ENDPOINT_DIGITALOCEAN", d.digitalocean),
            linode: get("STRATO_ENDPOINT_LINODE", d.linode),
        }
    }
}
