use super::*;
use serde_json::json;
use strato_domain::model::{ClusterSpec, TargetAccount};

const MANIFEST: &str = r#"
name = "eks"
version = "1.1.0"
providers = ["aws"]
stages = [{ name = "cluster", modules = ["k8s"] }]
[variables.cluster_name]
type = "string"
managed = true
[connect]
kind = "eks"
endpoint = "cluster_endpoint"
certificate_authority = "cluster_ca_certificate"
"#;

/// Base64 of a PEM certificate, as EKS gives its CA.
fn ca() -> String {
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=".into()
}

fn template(text: &str) -> Template {
    Template::from_toml(text).expect("manifest")
}

fn cluster(state: ClusterState, target: Option<&str>) -> Cluster {
    let spec: ClusterSpec = serde_json::from_value(json!({
        "name": "demo",
        "template": {"name": "eks", "version": "1.1.0"},
        "provider": "aws",
        "region": "eu-west-1",
    }))
    .unwrap();
    let spec = ClusterSpec {
        target: target.map(|r| {
            TargetAccount {
                role_arn: r.into(),
                ..Default::default()
            }
            .into()
        }),
        ..spec
    };
    let mut c = Cluster::new(
        "acme".parse().unwrap(),
        "cl-0192aabbccddeeff0011223344556677".parse().unwrap(),
        spec,
        strato_domain::ts::now(),
    )
    .in_state(state);
    c.outputs
        .insert("cluster_endpoint".into(), json!("https://abc.eks.example"));
    c.outputs.insert("cluster_ca_certificate".into(), json!(ca()));
    c
}

fn asked(role: Option<Option<&str>>) -> Asked {
    Asked {
        role: role.map(|r| r.map(Into::into)),
        aws_profile: None,
        context: None,
    }
}

fn conflict(r: Result<KubeconfigView, ApiError>) -> String {
    match r {
        Err(ApiError::Conflict(detail)) => detail,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn an_active_cluster_gets_a_kubeconfig_for_its_eks_cluster() {
    let t = template(MANIFEST);
    let v = decide(&cluster(ClusterState::Active, None), Some(&t), asked(None)).unwrap();
    assert_eq!(v.context, "strato-demo");
    assert_eq!(v.kind, "eks");
    // The name the runner gives the modules (the end of the cluster id keeps tenants' names apart).
    assert_eq!(v.cluster_name, "demo-44556677");
    assert_eq!(v.endpoint, "https://abc.eks.example");
    assert_eq!(v.role_arn, None);
    assert!(v.note.unwrap().contains("Strato's own AWS account"));
    assert!(v.kubeconfig.contains(&ca()), "{}", v.kubeconfig);
    assert_eq!(
        v.token_command,
        "aws --region eu-west-1 eks get-token --cluster-name demo-44556677 --output json"
    );
}

#[test]
fn a_target_account_cluster_signs_as_its_role_unless_asked_otherwise() {
    let t = template(MANIFEST);
    let role = "arn:aws:iam::123456789012:role/strato-target";
    let c = cluster(ClusterState::Active, Some(role));
    let v = decide(&c, Some(&t), asked(None)).unwrap();
    assert_eq!(v.role_arn.as_deref(), Some(role));
    assert!(v.token_command.ends_with(&format!("--role-arn {role}")));
    assert!(v.note.unwrap().contains("trust policy"));
    let own = decide(&c, Some(&t), asked(Some(None))).unwrap();
    assert_eq!(own.role_arn, None);
    let other = "arn:aws:iam::123456789012:role/ops";
    let v = decide(&c, Some(&t), asked(Some(Some(other)))).unwrap();
    assert_eq!(v.role_arn.as_deref(), Some(other));
    assert!(v.note.unwrap().contains("access entry"));
}

#[test]
fn no_kubeconfig_says_why_and_what_to_do() {
    let t = template(MANIFEST);
    let gone = conflict(decide(
        &cluster(ClusterState::Deleted, None),
        Some(&t),
        asked(None),
    ));
    assert!(gone.contains("DELETED"), "{gone}");
    let mut young = cluster(ClusterState::Provisioning, None);
    young.outputs.clear();
    let d = conflict(decide(&young, Some(&t), asked(None)));
    assert!(
        d.contains("no 'cluster_endpoint' output yet") && d.contains("ACTIVE"),
        "{d}"
    );
    let silent = template(&MANIFEST.replace(
        "[connect]\nkind = \"eks\"\nendpoint = \"cluster_endpoint\"\ncertificate_authority = \"cluster_ca_certificate\"\n",
        "",
    ));
    let d = conflict(decide(
        &cluster(ClusterState::Active, None),
        Some(&silent),
        asked(None),
    ));
    assert!(d.contains("eks@1.1.0") && d.contains("[connect]"), "{d}");
    let d = conflict(decide(&cluster(ClusterState::Active, None), None, asked(None)));
    assert!(d.contains("[connect]"), "{d}");
    let mut odd = cluster(ClusterState::Active, None);
    odd.outputs
        .insert("cluster_ca_certificate".into(), json!("not a certificate"));
    let d = conflict(decide(&odd, Some(&t), asked(None)));
    assert!(
        d.contains("cluster_ca_certificate") && d.contains("maintainers"),
        "{d}"
    );
}

#[test]
fn bad_query_parameters_are_named() {
    let q = KubeconfigQuery {
        role_arn: Some("arn:aws:iam::1:user/x".into()),
        aws_profile: Some("a b".into()),
        context: Some(String::new()),
    };
    let Err(ApiError::BadRequest { errors, .. }) = read_query(&q) else {
        panic!("expected a bad request");
    };
    let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["role_arn", "aws_profile", "context"]);
    let ok = read_query(&KubeconfigQuery {
        role_arn: Some("none".into()),
        aws_profile: Some("work".into()),
        context: Some("me@prod".into()),
    })
    .ok()
    .unwrap();
    assert_eq!(ok.role, Some(None));
}
