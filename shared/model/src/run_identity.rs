//! A run's identity as the model records it: the audiences each cloud expects of a run's token, and the
//! sealed tokens kept on the operation. Minting, sealing and opening them are the domain's
//! (`strato_domain::identity`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::envelope::Envelope;

/// The audience AWS STS expects in a web identity token (the OIDC provider's client id).
pub const AUD_AWS: &str = "sts.amazonaws.com";
/// The audience Azure AD expects for a federated credential.
pub const AUD_AZURE: &str = "api://AzureADTokenExchange";

/// The audience of a GCP workload identity pool provider
/// (`projects/<n>/locations/global/workloadIdentityPools/<p>/providers/<x>`).
pub fn gcp_audience(provider: &str) -> String {
    format!("//iam.googleapis.com/{provider}")
}

/// The KMS encryption context's `purpose` of a run's identity tokens.
pub const PURPOSE_RUN_IDENTITY: &str = "run-identity";

/// A run's tokens as the operation record keeps them: one per stage, sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTokens {
    /// The audience every token was minted for (the target's cloud).
    pub aud: String,
    /// When the tokens stop being valid (unix seconds): a stage that starts later cannot federate.
    pub expires_at: i64,
    /// Stage name → sealed token.
    pub stages: BTreeMap<String, Envelope>,
}
