//! Checks a kubeconfig's exec plugin the way EKS's authenticator reads what it makes: an ExecCredential
//! whose token is `k8s-aws-v1.` + base64url of a presigned STS `GetCallerIdentity` URL, signed (SigV4, in
//! the query) with the `x-k8s-aws-id` header naming the cluster. The signature is recomputed with the AWS
//! SDK's own signer from the same credentials, time and cluster name (`strato_aws::eks_token::verify`, which
//! the runner's tests use too): it matches only if the token was signed for that cluster.

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

/// The token, checked as EKS would for `cluster` in `region` signed with these keys
/// ([`strato_aws::eks_token::verify`]: the runner's tokens are checked by the same code).
pub fn check(token: &str, cluster: &str, region: &str, access_key: &str, secret_key: &str) {
    let keys = strato_aws::eks_token::SigningKeys {
        access_key_id: access_key,
        secret_access_key: secret_key,
        session_token: None,
    };
    if let Err(e) = strato_aws::eks_token::verify(token, cluster, region, &keys) {
        panic!("the token is not a valid EKS token for {cluster}: {e}");
    }
    let other = format!("{cluster}x");
    assert!(
        strato_aws::eks_token::verify(token, &other, region, &keys).is_err(),
        "a token for {cluster} is refused for {other}"
    );
}
