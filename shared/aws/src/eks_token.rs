//! EKS bearer tokens, as `aws eks get-token` and EKS's authenticator know them: `k8s-aws-v1.` + base64url
//! (no padding) of a presigned STS `GetCallerIdentity` URL, signed (SigV4, in the query, for 60 s) with
//! the `x-k8s-aws-id` header naming the cluster. EKS accepts one for 15 minutes after its `X-Amz-Date`.
//!
//! [`mint`] makes one from a session's keys (the runner, installing the cluster agent); [`verify`] recomputes
//! its signature with the same signer from the keys, time and cluster name (the tests' stand-ins for EKS):
//! it matches only for the cluster the token was signed for.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use aws_sigv4::http_request::{SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign};
use aws_sigv4::sign::v4;
use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};

/// What every EKS token starts with.
pub const PREFIX: &str = "k8s-aws-v1.";
/// The header naming the cluster the token is for (signed).
pub const CLUSTER_HEADER: &str = "x-k8s-aws-id";
/// How long the presigned URL says it is valid; EKS itself accepts a token for 15 minutes.
pub const PRESIGN_SECS: u64 = 60;

/// The AWS session a token is signed with.
pub struct SigningKeys<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    pub session_token: Option<&'a str>,
}

fn sts_url(region: &str) -> String {
    format!("https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15")
}

/// The query parameters SigV4 adds to the presigned URL, signed at `at`.
fn signed_params(
    keys: &SigningKeys<'_>,
    region: &str,
    cluster: &str,
    at: SystemTime,
) -> Result<Vec<(&'static str, Cow<'static, str>)>, String> {
    let identity = aws_credential_types::Credentials::new(
        keys.access_key_id,
        keys.secret_access_key,
        keys.session_token.map(str::to_owned),
        None,
        "strato-eks-token",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(PRESIGN_SECS));
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(at)
        .settings(settings)
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let url = sts_url(region);
    let request = SignableRequest::new(
        "GET",
        &url,
        [(CLUSTER_HEADER, cluster)].into_iter(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| format!("signable request: {e}"))?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| format!("signing: {e}"))?
        .into_parts();
    Ok(instructions.into_parts().1)
}

/// A token for EKS cluster `cluster` in `region`, signed with `keys` at `at`.
pub fn mint(keys: &SigningKeys<'_>, region: &str, cluster: &str, at: SystemTime) -> Result<String, String> {
    let mut url = url::Url::parse(&sts_url(region)).map_err(|e| format!("STS URL: {e}"))?;
    for (k, v) in signed_params(keys, region, cluster, at)? {
        url.query_pairs_mut().append_pair(k, &v);
    }
    Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(url.as_str())))
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The access key id it was signed with.
    pub access_key_id: String,
    /// When it was signed.
    pub signed_at: SystemTime,
}

/// Checks `token` as EKS would for cluster `cluster` in `region` signed with `keys` (the session token,
/// if any, must be the one signed): its envelope, the presigned URL's host, action, algorithm, expiry,
/// credential scope and signed headers, and the signature recomputed. The error says what is wrong.
pub fn verify(token: &str, cluster: &str, region: &str, keys: &SigningKeys<'_>) -> Result<Verified, String> {
    let encoded = token
        .strip_prefix(PREFIX)
        .ok_or_else(|| format!("not an EKS token (no {PREFIX} prefix)"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(encoded)
        .or_else(|_| URL_SAFE.decode(encoded))
        .map_err(|e| format!("not base64url: {e}"))?;
    let url = String::from_utf8(bytes).map_err(|_| "not a URL (not UTF-8)".to_owned())?;
    let parsed = url::Url::parse(&url).map_err(|e| format!("not a URL: {e}"))?;
    let expect = |ok: bool, what: &str| if ok { Ok(()) } else { Err(format!("{what}: {url}")) };
    expect(parsed.scheme() == "https", "not https")?;
    expect(
        parsed.host_str() == Some(format!("sts.{region}.amazonaws.com").as_str()),
        "not the cluster's regional STS",
    )?;
    let q: BTreeMap<String, String> = parsed.query_pairs().into_owned().collect();
    let get = |k: &str| q.get(k).map(String::as_str).unwrap_or("");
    expect(get("Action") == "GetCallerIdentity", "not GetCallerIdentity")?;
    expect(get("Version") == "2011-06-15", "not STS version 2011-06-15")?;
    expect(get("X-Amz-Algorithm") == "AWS4-HMAC-SHA256", "not SigV4")?;
    expect(
        get("X-Amz-Expires") == PRESIGN_SECS.to_string(),
        "EKS accepts tokens presigned for 60 s",
    )?;
    expect(
        get("X-Amz-Credential").starts_with(&format!("{}/", keys.access_key_id))
            && get("X-Amz-Credential").ends_with(&format!("/{region}/sts/aws4_request")),
        "not signed with this key for STS in this region",
    )?;
    expect(
        get("X-Amz-SignedHeaders").split(';').any(|h| h == CLUSTER_HEADER),
        "the cluster name is not signed",
    )?;
    let date = time::PrimitiveDateTime::parse(
        get("X-Amz-Date"),
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
    .map_err(|e| format!("X-Amz-Date: {e}: {url}"))?
    .assume_utc();
    let signed_at: SystemTime = date.into();
    let resigned = signed_params(keys, region, cluster, signed_at)?;
    let signature = resigned
        .iter()
        .find(|(k, _)| *k == "X-Amz-Signature")
        .map(|(_, v)| v.as_ref())
        .unwrap_or_default();
    expect(
        signature == get("X-Amz-Signature"),
        &format!("the signature is not the one for cluster {cluster}"),
    )?;
    Ok(Verified {
        access_key_id: keys.access_key_id.to_owned(),
        signed_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: SigningKeys<'static> = SigningKeys {
        access_key_id: "AKIDEXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        session_token: Some("session/token+x"),
    };

    #[test]
    fn a_minted_token_verifies_only_for_its_cluster_region_and_keys() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let token = mint(&KEYS, "eu-west-1", "prod-1a2b3c4d", at).unwrap();
        assert!(token.starts_with(PREFIX) && !token.ends_with('='), "{token}");
        let ok = verify(&token, "prod-1a2b3c4d", "eu-west-1", &KEYS).unwrap();
        assert_eq!(ok.signed_at, at);
        let e = verify(&token, "prod-1a2b3c4e", "eu-west-1", &KEYS).unwrap_err();
        assert!(e.contains("not the one for cluster prod-1a2b3c4e"), "{e}");
        let e = verify(&token, "prod-1a2b3c4d", "us-east-1", &KEYS).unwrap_err();
        assert!(e.contains("regional STS"), "{e}");
        let other = SigningKeys {
            secret_access_key: "another",
            ..KEYS
        };
        assert!(verify(&token, "prod-1a2b3c4d", "eu-west-1", &other).is_err());
        let e = verify("Bearer abc", "prod-1a2b3c4d", "eu-west-1", &KEYS).unwrap_err();
        assert!(e.contains("not an EKS token"), "{e}");
        // The session token travels in the signed URL, as STS requires of a temporary session.
        let url = String::from_utf8(URL_SAFE_NO_PAD.decode(&token[PREFIX.len()..]).unwrap()).unwrap();
        assert!(url.contains("X-Amz-Security-Token=session%2Ftoken%2Bx"), "{url}");
        assert!(url.contains("X-Amz-Expires=60"), "{url}");
    }
}
