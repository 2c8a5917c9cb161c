//! Assuming a tenant's target role safely (the confused deputy): the role is assumed with the external id
//! Strato issued the tenant, and a role that can also be assumed *without* it, or with an id nobody was
//! issued (a trust policy with `StringLike "*"`), is refused — its trust policy would let any Strato tenant
//! who learns its ARN provision into it. Failures never say whether the role
//! exists: "no such role" and "not allowed" read the same.
//!
//! The decision ([`assume_checked`]) is written against the small [`Sts`] port, so it is tested on a fake;
//! [`SdkSts`] is the AWS one. moto's STS does not evaluate trust policies (every AssumeRole succeeds), so
//! devstack turns the probe off with `STRATO_UNSAFE_SKIP_EXTERNAL_ID_PROBE` (see `Config`).

use std::future::Future;
use std::time::Duration;

use aws_config::SdkConfig;

use crate::credentials::EngineCredentials;

/// Why an AssumeRole did not give credentials, as far as anyone is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssumeFailure {
    /// No answer within the timeout.
    Timeout,
    /// Refused, for whatever reason (no such role, not trusted, wrong external id): deliberately not told apart.
    Refused,
}

/// `sts:AssumeRole` of one role, with or without an external id.
pub trait Sts: Sync {
    fn assume(
        &self,
        external_id: Option<&str>,
    ) -> impl Future<Output = Result<EngineCredentials, AssumeFailure>> + Send;
}

/// The one message for a role that could not be assumed with the tenant's external id.
pub fn refused(role_arn: &str) -> String {
    format!(
        "could not assume role {role_arn} with your external id: the role does not exist, or its trust policy \
         does not allow Strato's principal with your external id; GET /v1/tenant/target-access shows the \
         external id and the trust policy the role needs"
    )
}

/// Assumes the role with `external_id`; with `probe`, then tries without it and with a random id no tenant
/// was issued, and refuses the role if either works too. The error is the user's message (credentials
/// category).
pub async fn assume_checked(
    sts: &impl Sts,
    role_arn: &str,
    external_id: &str,
    probe: bool,
    timeout: Duration,
) -> Result<EngineCredentials, String> {
    let creds = match sts.assume(Some(external_id)).await {
        Ok(c) => c,
        Err(AssumeFailure::Timeout) => {
            return Err(format!(
                "assuming role {role_arn} did not answer within {}s",
                timeout.as_secs()
            ));
        }
        Err(AssumeFailure::Refused) => return Err(refused(role_arn)),
    };
    if !probe {
        return Ok(creds);
    }
    // Without any id, then with one nobody was issued: a trust policy that matches the id by pattern
    // (`StringLike "*"`, `"strato-*"`) passes the first probe and not the second.
    let stranger = format!("strato-probe-{}", uuid::Uuid::new_v4().simple());
    for (probe_id, how) in [
        (None, "without your external id"),
        (Some(stranger.as_str()), "with an external id that is not yours"),
    ] {
        match sts.assume(probe_id).await {
            Ok(_) => {
                return Err(format!(
                    "role {role_arn} can be assumed {how}: its trust policy does not require exactly your id, \
                     so another Strato tenant who knows the role's ARN could use it. Use the condition \
                     {{\"StringEquals\": {{\"sts:ExternalId\": \"<your external id>\"}}}} (not StringLike or a \
                     pattern) in the statement that trusts Strato (GET /v1/tenant/target-access shows the id and \
                     the whole policy), then retry"
                ));
            }
            Err(AssumeFailure::Refused) => {}
            Err(AssumeFailure::Timeout) => {
                return Err(format!(
                    "checking that role {role_arn} requires your external id did not answer within {}s; retry",
                    timeout.as_secs()
                ));
            }
        }
    }
    Ok(creds)
}

/// [`Sts`] on AWS STS (the runner's own credentials).
pub struct SdkSts<'a> {
    pub base: &'a SdkConfig,
    pub endpoint: Option<&'a str>,
    pub region: &'a str,
    pub role_arn: &'a str,
    pub session_name: &'a str,
    pub timeout: Duration,
}

impl Sts for SdkSts<'_> {
    async fn assume(&self, external_id: Option<&str>) -> Result<EngineCredentials, AssumeFailure> {
        let client =
            crate::credentials::sts_client(self.base, self.endpoint, self.region, self.timeout, None);
        let call = client
            .assume_role()
            .role_arn(self.role_arn)
            .set_external_id(external_id.map(str::to_owned))
            .role_session_name(self.session_name)
            .duration_seconds(3600)
            .send();
        let out = match tokio::time::timeout(self.timeout, call).await {
            Err(_) => return Err(AssumeFailure::Timeout),
            Ok(Err(e)) => {
                // Kept for operators (the external id is not in it: STS does not echo it); the tenant sees
                // only the generic message.
                tracing::info!(error = %strato_aws::Error::aws("AssumeRole", e), "target role refused");
                return Err(AssumeFailure::Refused);
            }
            Ok(Ok(out)) => out,
        };
        let c = out.credentials().ok_or(AssumeFailure::Refused)?;
        Ok(EngineCredentials {
            access_key_id: c.access_key_id().to_owned(),
            secret_access_key: c.secret_access_key().into(),
            session_token: Some(c.session_token().into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A role as STS would judge it: whether it exists, which external id its trust requires (if any), and
    /// whether it matches the id by a `StringLike "*"` pattern (any id, but one must be given).
    struct FakeSts {
        exists: bool,
        requires: Option<&'static str>,
        any_id: bool,
        calls: Mutex<Vec<Option<String>>>,
    }

    impl FakeSts {
        fn new(exists: bool, requires: Option<&'static str>) -> Self {
            Self {
                exists,
                requires,
                any_id: false,
                calls: Mutex::new(Vec::new()),
            }
        }
    }

    impl Sts for FakeSts {
        async fn assume(&self, external_id: Option<&str>) -> Result<EngineCredentials, AssumeFailure> {
            self.calls.lock().unwrap().push(external_id.map(str::to_owned));
            let matches = if self.any_id {
                external_id.is_some()
            } else {
                self.requires.is_none_or(|r| Some(r) == external_id)
            };
            let trusted = self.exists && matches;
            if !trusted {
                return Err(AssumeFailure::Refused);
            }
            Ok(EngineCredentials {
                access_key_id: "AKIA".into(),
                secret_access_key: "s".to_owned().into(),
                session_token: None,
            })
        }
    }

    const ROLE: &str = "arn:aws:iam::123456789012:role/strato";
    const T: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_role_that_requires_the_id_is_assumed_and_probed() {
        let sts = FakeSts::new(true, Some("strato-abc"));
        assert!(assume_checked(&sts, ROLE, "strato-abc", true, T).await.is_ok());
        let calls = sts.calls.lock().unwrap().clone();
        assert_eq!(calls[..2], [Some("strato-abc".to_owned()), None]);
        let stranger = calls[2].as_deref().expect("the third probe gives an id");
        assert!(
            stranger.starts_with("strato-probe-") && stranger != "strato-abc",
            "{calls:?}"
        );
        assert_eq!(calls.len(), 3);
    }

    #[tokio::test]
    async fn a_role_that_takes_any_external_id_is_refused_with_the_fix() {
        // `"StringLike": {"sts:ExternalId": "*"}`: refused without an id, so the first probe passes.
        let sts = FakeSts {
            any_id: true,
            ..FakeSts::new(true, None)
        };
        let e = assume_checked(&sts, ROLE, "strato-abc", true, T)
            .await
            .unwrap_err();
        assert!(e.contains("with an external id that is not yours"), "{e}");
        assert!(e.contains("StringEquals") && e.contains("not StringLike"), "{e}");
        assert!(
            !e.contains("strato-abc"),
            "the id itself is not in the message: {e}"
        );
        // Two random probes differ: the id is not guessable from one run to the next.
        let first = sts.calls.lock().unwrap()[2].clone();
        let _ = assume_checked(&sts, ROLE, "strato-abc", true, T).await;
        assert_ne!(first, sts.calls.lock().unwrap()[5]);
    }

    #[tokio::test]
    async fn a_role_that_does_not_require_the_id_is_refused_with_the_fix() {
        let sts = FakeSts::new(true, None);
        let e = assume_checked(&sts, ROLE, "strato-abc", true, T)
            .await
            .unwrap_err();
        assert!(e.contains("without your external id"), "{e}");
        assert!(e.contains("sts:ExternalId"), "{e}");
        assert!(e.contains("GET /v1/tenant/target-access"), "{e}");
        assert!(
            !e.contains("strato-abc"),
            "the id itself is not in the message: {e}"
        );
        // With the probe off (devstack: moto's STS trusts everyone) the same role is used.
        assert!(assume_checked(&sts, ROLE, "strato-abc", false, T).await.is_ok());
    }

    #[tokio::test]
    async fn no_such_role_and_not_allowed_read_the_same() {
        let missing = assume_checked(&FakeSts::new(false, None), ROLE, "strato-abc", true, T).await;
        let wrong_id = assume_checked(&FakeSts::new(true, Some("other")), ROLE, "strato-abc", true, T).await;
        assert_eq!(missing.clone().unwrap_err(), wrong_id.unwrap_err());
        assert_eq!(missing.unwrap_err(), refused(ROLE));
    }
}
