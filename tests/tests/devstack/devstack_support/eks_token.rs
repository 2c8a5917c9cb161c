//! Checks a kubeconfig's exec plugin the way EKS's authenticator reads what it makes: an ExecCredential
//! whose token is `k8s-aws-v1.` + base64url of a presigned STS `GetCallerIdentity` URL, signed (SigV4, in
//! the query) with the `x-k8s-aws-id` header naming the cluster. The signature is recomputed here with the
//! AWS SDK's own signer from the same credentials, time and cluster name: it matches only if the token was
//! signed for that cluster (and not for another name).

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign};
use aws_sigv4::sign::v4;
use serde_json::Value;

/// The token an ExecCredential (the exec plugin's stdout) carries, after checking its envelope.
pub fn token_of(exec_credential: &Value) -> String {
    assert_eq!(exec_credential["kind"], "ExecCredential", "{exec_credential}");
    assert_eq!(
        exec_credential["apiVersion"], "client.authentication.k8s.io/v1beta1",
        "{exec_credential}"
    );
    assert!(
        exec_credential["status"]["expirationTimestamp"].is_string(),
        "a short-lived token says when it expires: {exec_credential}"
    );
    exec_credential["status"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The presigned URL's query parameters, after checking what EKS requires of them.
pub fn check(token: &str, cluster: &str, region: &str, access_key: &str, secret_key: &str) {
    let encoded = token
        .strip_prefix("k8s-aws-v1.")
        .unwrap_or_else(|| panic!("not an EKS token: {token}"));
    let mut b64: String = encoded
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !b64.len().is_multiple_of(4) {
        b64.push('=');
    }
    let url = String::from_utf8(aws_smithy_types::base64::decode(&b64).expect("base64url")).expect("a URL");
    let parsed = reqwest::Url::parse(&url).expect("a URL");
    assert_eq!(parsed.scheme(), "https", "{url}");
    assert_eq!(
        parsed.host_str(),
        Some(format!("sts.{region}.amazonaws.com").as_str()),
        "the cluster's regional STS: {url}"
    );
    let q: BTreeMap<String, String> = parsed.query_pairs().into_owned().collect();
    assert_eq!(q["Action"], "GetCallerIdentity", "{url}");
    assert_eq!(q["Version"], "2011-06-15", "{url}");
    assert_eq!(q["X-Amz-Algorithm"], "AWS4-HMAC-SHA256", "{url}");
    assert_eq!(
        q["X-Amz-Expires"], "60",
        "EKS accepts tokens presigned for 60 s: {url}"
    );
    assert!(
        q["X-Amz-Credential"].starts_with(&format!("{access_key}/"))
            && q["X-Amz-Credential"].ends_with(&format!("/{region}/sts/aws4_request")),
        "{url}"
    );
    let signed: Vec<&str> = q["X-Amz-SignedHeaders"].split(';').collect();
    assert!(
        signed.contains(&"x-k8s-aws-id"),
        "the cluster name is signed: {url}"
    );

    let date = time::PrimitiveDateTime::parse(
        &q["X-Amz-Date"],
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
    .expect("X-Amz-Date")
    .assume_utc();
    let resign = |name: &str| {
        let identity =
            aws_credential_types::Credentials::new(access_key, secret_key, None, None, "e2e").into();
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(Duration::from_secs(60));
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("sts")
            .time(date.into())
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let base = format!("https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15");
        let request = SignableRequest::new(
            "GET",
            base,
            [("x-k8s-aws-id", name)].into_iter(),
            SignableBody::Bytes(&[]),
        )
        .unwrap();
        sign(request, &params).unwrap().into_parts().1
    };
    assert_eq!(
        resign(cluster),
        q["X-Amz-Signature"],
        "the signature is the one for cluster {cluster}: {url}"
    );
    assert_ne!(resign(&format!("{cluster}x")), q["X-Amz-Signature"]);
}
