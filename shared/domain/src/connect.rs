//! How a tenant reaches the Kubernetes cluster a template made. A template's `[connect]` section names the
//! outputs that carry the API endpoint and its certificate authority; the kubeconfig built from them
//! authenticates with short-lived tokens an exec plugin makes on the tenant's machine (EKS: `aws eks
//! get-token`, a presigned STS `GetCallerIdentity`), so no credential is stored, sent or shown by Strato.

use serde::{Deserialize, Serialize};

/// Which kind of cluster a template makes, and so how a client authenticates to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectKind {
    /// Amazon EKS: IAM identities, tokens from `aws eks get-token`.
    Eks,
}

impl ConnectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectKind::Eks => "eks",
        }
    }
}

/// The manifest's `[connect]` section: the outputs that make a kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectSpec {
    pub kind: ConnectKind,
    /// The output holding the Kubernetes API's URL (`https://…`).
    pub endpoint: String,
    /// The output holding the API's certificate authority, base64 of its PEM (EKS's `certificate_authority`).
    pub certificate_authority: String,
}

/// The name of a cluster's cloud resources (the EKS cluster, its IAM roles). Cloud names are unique per
/// account and region, not per tenant: two tenants' "prod" must not collide, so the name carries the end of
/// the cluster id. The runner gives it to the modules as the managed `cluster_name` variable.
pub fn cloud_cluster_name(name: &str, cluster_id: &str) -> String {
    format!("{name}-{}", &cluster_id[cluster_id.len().saturating_sub(8)..])
}

/// What a kubeconfig for an EKS cluster is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EksAccess {
    /// The kubeconfig's context (and its cluster and user entries).
    pub context: String,
    /// The EKS cluster's name, which the token is signed for.
    pub cluster_name: String,
    pub region: String,
    pub endpoint: String,
    /// Base64 of the CA's PEM, as EKS gives it.
    pub certificate_authority: String,
    /// The role `aws eks get-token` assumes to sign the token; `None`: the caller's own AWS identity.
    pub role_arn: Option<String>,
    /// The AWS CLI profile the exec plugin runs with; `None`: the environment's.
    pub aws_profile: Option<String>,
}

/// Why a cluster's outputs make no kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreachable {
    /// The output is not there (yet): the cluster stage has not applied.
    Missing(String),
    /// The output is there but is not what `[connect]` says it is (a defect of the template).
    Malformed { output: String, reason: &'static str },
}

/// The API endpoint and CA (base64 of its PEM) in a cluster's outputs, as the template's `[connect]` names them.
pub fn endpoint_and_ca(
    spec: &ConnectSpec,
    outputs: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<(String, String), Unreachable> {
    let text = |name: &str| match outputs.get(name) {
        None | Some(serde_json::Value::Null) => Err(Unreachable::Missing(name.to_owned())),
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Unreachable::Malformed {
            output: name.to_owned(),
            reason: "is not a string",
        }),
    };
    let endpoint = text(&spec.endpoint)?;
    let is_url = endpoint
        .strip_prefix("https://")
        .is_some_and(|host| !host.is_empty() && !host.chars().any(char::is_whitespace));
    if !is_url {
        return Err(Unreachable::Malformed {
            output: spec.endpoint.clone(),
            reason: "is not an https:// URL",
        });
    }
    let ca = text(&spec.certificate_authority)?;
    // kubectl base64-decodes the CA and reads the PEM when it connects; a raw PEM or anything else that is
    // not base64 is a template defect to name now. (The PEM itself is left to kubectl: emulated clusters
    // give random bytes.)
    use base64::Engine as _;
    if ca.trim().is_empty()
        || base64::engine::general_purpose::STANDARD
            .decode(ca.trim())
            .is_err()
    {
        return Err(Unreachable::Malformed {
            output: spec.certificate_authority.clone(),
            reason: "is not base64 (of the CA's PEM)",
        });
    }
    Ok((endpoint, ca.trim().to_owned()))
}

impl EksAccess {
    /// The exec plugin's command line after `aws`, as `aws eks update-kubeconfig` writes it.
    pub fn exec_args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "--region",
            &self.region,
            "eks",
            "get-token",
            "--cluster-name",
            &self.cluster_name,
            "--output",
            "json",
        ]
        .map(str::to_owned)
        .into();
        if let Some(role) = &self.role_arn {
            args.extend(["--role-arn".to_owned(), role.clone()]);
        }
        args
    }

    /// The kubeconfig, as YAML. Every scalar is written as a JSON string, which YAML reads as the same
    /// double-quoted string: a fixed document with no YAML library in the API's build (and no value, however
    /// odd, can break out of its field).
    pub fn kubeconfig_yaml(&self) -> String {
        let q = |s: &str| serde_json::Value::from(s).to_string();
        let name = q(&self.context);
        let mut out = String::new();
        out.push_str("apiVersion: v1\nkind: Config\n");
        out.push_str(&format!(
            "clusters:\n- name: {name}\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n",
            q(&self.endpoint),
            q(&self.certificate_authority)
        ));
        out.push_str(&format!(
            "contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n"
        ));
        out.push_str(&format!("current-context: {name}\npreferences: {{}}\n"));
        out.push_str(&format!(
            "users:\n- name: {name}\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n      args:\n"
        ));
        for a in self.exec_args() {
            out.push_str(&format!("      - {}\n", q(&a)));
        }
        if let Some(profile) = &self.aws_profile {
            out.push_str(&format!(
                "      env:\n      - name: AWS_PROFILE\n        value: {}\n",
                q(profile)
            ));
        }
        out.push_str("      interactiveMode: IfAvailable\n      provideClusterInfo: false\n");
        out
    }

    /// The command a terminal user runs for a token by hand (what the exec plugin runs).
    pub fn token_command(&self) -> String {
        let mut cmd = String::new();
        if let Some(p) = &self.aws_profile {
            cmd.push_str(&format!("AWS_PROFILE={p} "));
        }
        cmd.push_str("aws ");
        cmd.push_str(&self.exec_args().join(" "));
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn spec() -> ConnectSpec {
        ConnectSpec {
            kind: ConnectKind::Eks,
            endpoint: "cluster_endpoint".into(),
            certificate_authority: "cluster_ca_certificate".into(),
        }
    }

    fn ca() -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(CA_PEM)
    }

    fn access(role: Option<&str>, profile: Option<&str>) -> EksAccess {
        EksAccess {
            context: "strato-demo".into(),
            cluster_name: "demo-1a2b3c4d".into(),
            region: "eu-west-1".into(),
            endpoint: "https://ABC.gr7.eu-west-1.eks.amazonaws.com".into(),
            certificate_authority: ca(),
            role_arn: role.map(Into::into),
            aws_profile: profile.map(Into::into),
        }
    }

    #[test]
    fn the_cloud_name_carries_the_end_of_the_id() {
        assert_eq!(cloud_cluster_name("prod", "c-0123456789abcdef"), "prod-89abcdef");
        assert_eq!(cloud_cluster_name("prod", "abc"), "prod-abc");
    }

    #[test]
    fn outputs_make_the_endpoint_and_ca_or_say_which_is_wrong() {
        let mut outputs = std::collections::BTreeMap::new();
        assert_eq!(
            endpoint_and_ca(&spec(), &outputs),
            Err(Unreachable::Missing("cluster_endpoint".into()))
        );
        outputs.insert("cluster_endpoint".into(), json!("http://plain.example"));
        outputs.insert("cluster_ca_certificate".into(), json!(ca()));
        assert!(matches!(
            endpoint_and_ca(&spec(), &outputs),
            Err(Unreachable::Malformed { output, .. }) if output == "cluster_endpoint"
        ));
        outputs.insert("cluster_endpoint".into(), json!("https://x.example"));
        outputs.insert("cluster_ca_certificate".into(), json!("not base64!"));
        assert!(matches!(
            endpoint_and_ca(&spec(), &outputs),
            Err(Unreachable::Malformed { output, .. }) if output == "cluster_ca_certificate"
        ));
        outputs.insert("cluster_ca_certificate".into(), json!(ca()));
        assert_eq!(
            endpoint_and_ca(&spec(), &outputs),
            Ok(("https://x.example".into(), ca()))
        );
    }

    #[test]
    fn the_exec_plugin_is_aws_eks_get_token_for_the_cluster_and_role() {
        assert_eq!(
            access(None, None).exec_args(),
            [
                "--region",
                "eu-west-1",
                "eks",
                "get-token",
                "--cluster-name",
                "demo-1a2b3c4d",
                "--output",
                "json"
            ]
        );
        let with_role = access(Some("arn:aws:iam::123456789012:role/ops"), Some("work"));
        assert_eq!(
            with_role.exec_args()[8..],
            ["--role-arn", "arn:aws:iam::123456789012:role/ops"]
        );
        assert_eq!(
            with_role.token_command(),
            "AWS_PROFILE=work aws --region eu-west-1 eks get-token --cluster-name demo-1a2b3c4d \
             --output json --role-arn arn:aws:iam::123456789012:role/ops"
        );
    }

    #[test]
    fn the_kubeconfig_is_yaml_a_kubeconfig_reader_understands() {
        let text = access(Some("arn:aws:iam::123456789012:role/ops"), Some("work")).kubeconfig_yaml();
        let doc: serde_json::Value = serde_norway::from_str(&text).expect("YAML");
        assert_eq!(doc["current-context"], "strato-demo");
        assert_eq!(doc["clusters"][0]["name"], "strato-demo");
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "https://ABC.gr7.eu-west-1.eks.amazonaws.com"
        );
        assert_eq!(doc["clusters"][0]["cluster"]["certificate-authority-data"], ca());
        assert_eq!(doc["contexts"][0]["context"]["user"], "strato-demo");
        let exec = &doc["users"][0]["user"]["exec"];
        assert_eq!(exec["apiVersion"], "client.authentication.k8s.io/v1beta1");
        assert_eq!(exec["command"], "aws");
        assert_eq!(exec["args"][5], "demo-1a2b3c4d");
        assert_eq!(exec["args"][9], "arn:aws:iam::123456789012:role/ops");
        assert_eq!(exec["env"][0], json!({"name": "AWS_PROFILE", "value": "work"}));
        // No value can break out of its field: quotes, newlines and YAML's own syntax stay text.
        let mut odd = access(None, None);
        odd.context = "a\"b\n- name: x: {y}".into();
        let doc: serde_json::Value = serde_norway::from_str(&odd.kubeconfig_yaml()).unwrap();
        assert_eq!(doc["current-context"], "a\"b\n- name: x: {y}");
        assert_eq!(doc["users"][0]["user"]["exec"].get("env"), None);
    }
}
