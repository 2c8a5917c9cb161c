use super::*;
use crate::model::{CloudProvider, TemplateRef};
use crate::template::sample::eks;
use serde_json::json;

fn spec(vars: Value) -> ClusterSpec {
    ClusterSpec {
        name: "prod-eu".parse().unwrap(),
        template: TemplateRef {
            name: "aws-eks-basic".into(),
            version: "1.2.0".into(),
        },
        provider: CloudProvider::Aws,
        region: "eu-west-1".into(),
        variables: serde_json::from_value(vars).unwrap(),
        target: None,
    }
}

fn problems(vars: Value) -> Vec<FieldError> {
    validate(&spec(vars), &eks(), Catalogs::builtin()).unwrap_err()
}

fn fields(errs: &[FieldError]) -> Vec<&str> {
    errs.iter().map(|e| e.field.as_str()).collect()
}

#[test]
fn valid_spec_gets_defaults_and_provider_defaults() {
    let v = validate(
        &spec(json!({"owner_email": "ops@example.com", "node_count": 3})),
        &eks(),
        Catalogs::builtin(),
    )
    .unwrap();
    assert_eq!(v.variables()["node_count"], 3);
    assert_eq!(
        v.variables()["node_instance_type"],
        "t3.medium",
        "provider default wins over variable default"
    );
    assert_eq!(v.variables()["kubernetes_version"], "1.30");
    assert!(
        !v.variables().contains_key("cluster_name"),
        "managed variables are rendered, not defaulted"
    );
    assert!(
        !v.variables().contains_key("db_password"),
        "optional without default stays unset"
    );
    assert!(v.is_sensitive("db_password"));
    assert!(v.managed().contains("cluster_name"));
}

#[test]
fn every_problem_is_reported_at_once_and_deterministically() {
    let vars = json!({
        "node_count": 0, "kubernetes_version": "1.20", "node_instance_type": "t9.mega",
        "vpc_cidr": "192.168.0.0/16", "spot": "yes", "ghost": 1, "cluster_name": "x",
        "admin_cidrs": ["10.0.0.0/8", 5], "tags": {"env": "prod", "bad key": "x", "n": 1}
    });
    let errs = problems(vars.clone());
    assert_eq!(
        fields(&errs),
        [
            "variables.admin_cidrs[1]",
            "variables.cluster_name",
            "variables.ghost",
            "variables.kubernetes_version",
            "variables.node_count",
            "variables.node_instance_type",
            "variables.owner_email",
            "variables.spot",
            "variables.tags.bad key",
            "variables.tags.n",
            "variables.vpc_cidr",
        ]
    );
    assert_eq!(problems(vars), errs, "same spec, same answer");
    let by = |f: &str| errs.iter().find(|e| e.field == f).unwrap();
    assert!(by("variables.node_count").allowed.contains("1 to 50"));
    assert!(by("variables.kubernetes_version").allowed.contains("'1.31'"));
    assert!(by("variables.node_instance_type").allowed.contains("t3.medium"));
    assert!(by("variables.ghost").allowed.contains("node_count"));
    assert!(
        !by("variables.ghost").allowed.contains("cluster_name"),
        "managed vars are not offered"
    );
    assert!(by("variables.cluster_name").problem.contains("set by Strato"));
    assert!(by("variables.owner_email").problem.contains("required"));
    assert!(
        by("variables.spot").problem.contains("a string") && by("variables.spot").allowed.contains("bool")
    );
    assert!(by("variables.vpc_cidr").problem.contains("pattern"));
}

#[test]
fn template_provider_and_region_are_checked() {
    let mut s = spec(json!({"owner_email": "a@b"}));
    s.region = "mars-1".into();
    s.provider = CloudProvider::Gcp;
    s.template.version = "9.9.9".into();
    let errs = validate(&s, &eks(), Catalogs::builtin()).unwrap_err();
    assert_eq!(fields(&errs), ["provider", "region", "template"]);
    assert!(
        errs[1].allowed.contains("us-central1"),
        "region list is the spec provider's"
    );
    assert_eq!(errs[0].allowed, "aws");
}

#[test]
fn numbers_integers_and_ranges() {
    let base = || json!({"owner_email": "a@b"});
    let with = |k: &str, v: Value| {
        let mut b = base();
        b[k] = v;
        b
    };
    assert_eq!(
        fields(&problems(with("node_count", json!(2.5)))),
        ["variables.node_count"]
    );
    assert!(
        problems(with("node_count", json!(2.5)))[0]
            .problem
            .contains("whole number")
    );
    assert_eq!(
        fields(&problems(with("node_count", json!(51)))),
        ["variables.node_count"]
    );
    assert!(
        validate(&spec(with("node_count", json!(50))), &eks(), Catalogs::builtin()).is_err(),
        "> max_nodes"
    );
    assert!(
        validate(&spec(with("disk_ratio", json!(1))), &eks(), Catalogs::builtin()).is_ok(),
        "integer is a number"
    );
    assert_eq!(
        fields(&problems(with("disk_ratio", json!(0.05)))),
        ["variables.disk_ratio"]
    );
    assert_eq!(
        fields(&problems(with("node_count", json!("3")))),
        ["variables.node_count"]
    );
    assert_eq!(
        fields(&problems(with("node_count", Value::Null))),
        ["variables.node_count"]
    );
}

#[test]
fn cross_field_rules() {
    let errs = problems(json!({"owner_email": "a@b", "min_nodes": 4, "max_nodes": 3, "node_count": 3}));
    assert_eq!(fields(&errs), ["variables.max_nodes"]);
    assert!(
        errs[0].problem.contains("max_nodes (3) must be >= min_nodes (4)"),
        "{}",
        errs[0].problem
    );
    // Rule against a default: node_count 6 > default max_nodes 5, custom message used.
    let errs = problems(json!({"owner_email": "a@b", "node_count": 6}));
    assert_eq!(errs[0].problem, "node_count cannot exceed max_nodes");
    assert_eq!(errs[0].allowed, "node_count <= max_nodes");
    // A mistyped operand is reported once, not as a rule failure too.
    let errs = problems(json!({"owner_email": "a@b", "max_nodes": "many"}));
    assert_eq!(fields(&errs), ["variables.max_nodes"]);
}

#[test]
fn strings_are_length_limited_and_sensitive_values_are_not_echoed() {
    let errs = problems(json!({"owner_email": format!("{}@x", "a".repeat(200))}));
    assert!(errs[0].problem.contains("202 characters") && errs[0].allowed.contains("128"));
    let huge = "p".repeat(1_000_000);
    let errs = problems(json!({"owner_email": "a@b", "db_password": huge, "tags": {"k": "v".repeat(300)}}));
    assert_eq!(fields(&errs), ["variables.db_password", "variables.tags.k"]);
    assert!(
        errs.iter().all(|e| e.problem.len() < 200),
        "huge values are not echoed"
    );
    let errs = problems(json!({"owner_email": "a@b", "db_password": "hunter2", "node_count": "hunter3"}));
    assert!(!format!("{errs:?}").contains("hunter2"));
    assert!(
        problems(json!({"owner_email": "a@b\u{0007}"}))[0]
            .problem
            .contains("control")
    );
}

#[test]
fn zone_catalog_values() {
    let manifest = crate::template::sample::EKS_MANIFEST.replace(
        "[variables.spot]",
        "[variables.zones]\ntype = \"list(string)\"\ncatalog = \"zone\"\ndefault = []\n\n[variables.spot]",
    );
    let t = Template::from_toml(&manifest).unwrap();
    let ok = spec(json!({"owner_email": "a@b", "zones": ["eu-west-1a", "eu-west-1b"]}));
    assert!(validate(&ok, &t, Catalogs::builtin()).is_ok());
    let bad = spec(json!({"owner_email": "a@b", "zones": ["eu-west-1a", "moon-1z"]}));
    let errs = validate(&bad, &t, Catalogs::builtin()).unwrap_err();
    assert_eq!(fields(&errs), ["variables.zones[1]"]);
    assert!(errs[0].allowed.contains("us-east-1a"));
}

#[test]
fn collections_are_bounded() {
    let many: Vec<String> = (0..150).map(|i| format!("10.0.{i}.0/24")).collect();
    let errs = problems(json!({"owner_email": "a@b", "admin_cidrs": many}));
    assert_eq!(fields(&errs), ["variables.admin_cidrs"]);
    assert!(errs[0].allowed.contains("100"));
}

#[test]
fn hostile_strings_that_fit_the_schema_are_accepted_verbatim() {
    // Rendering is JSON-only, so these are data, not code. They must survive unchanged.
    let hostile = json!({"owner_email": "a@b", "tags": {"x": "\"${file(\"/etc/passwd\")}\"\n}\nresource", "u": "ünï©ødé ✓"}});
    let v = validate(&spec(hostile.clone()), &eks(), Catalogs::builtin()).unwrap();
    assert_eq!(v.variables()["tags"], hostile["tags"]);
}

#[test]
fn a_format_is_checked_by_parsing_what_the_pattern_lets_through() {
    // `10.999.0.0/16` matches the pattern and failed at plan 20 s later; with `format = "cidr"` it is a
    // field error before anything is written, with the fix in words.
    let manifest = crate::template::sample::EKS_MANIFEST.replace(
        "pattern = '10\\.\\d{1,3}\\.0\\.0/16'",
        "pattern = '10\\.\\d{1,3}\\.0\\.0/16'\nformat = \"cidr\"",
    );
    assert_ne!(manifest, crate::template::sample::EKS_MANIFEST);
    let t = Template::from_toml(&manifest).unwrap();
    let ok = spec(json!({"owner_email": "a@b", "vpc_cidr": "10.42.0.0/16"}));
    assert!(validate(&ok, &t, Catalogs::builtin()).is_ok());
    let bad = spec(json!({"owner_email": "a@b", "vpc_cidr": "10.999.0.0/16"}));
    assert!(
        validate(&bad, &eks(), Catalogs::builtin()).is_ok(),
        "the pattern alone lets it through"
    );
    let errs = validate(&bad, &t, Catalogs::builtin()).unwrap_err();
    assert_eq!(fields(&errs), ["variables.vpc_cidr"]);
    assert!(errs[0].problem.contains("'10.999.0.0/16'"), "{errs:?}");
    assert!(errs[0].allowed.contains("CIDR notation"), "{errs:?}");
    // A format on a number is a broken manifest, refused when the template is read.
    let broken = crate::template::sample::EKS_MANIFEST.replace(
        "[variables.spot]",
        "[variables.size]\ntype = \"integer\"\nformat = \"ip\"\ndefault = 1\n\n[variables.spot]",
    );
    assert!(
        Template::from_toml(&broken)
            .unwrap_err()
            .to_string()
            .contains("format")
    );
}

/// A template for one cloud other than AWS, shaped like the catalog's (size and version from the catalog).
fn aks() -> Template {
    Template::from_toml(
        r#"
        name = "azure-aks-basic"
        version = "1.0.0"
        description = "x"
        providers = ["azure"]
        stages = [{ name = "cluster", modules = ["azure-aks"] }]
        [variables.cluster_name]
        type = "string"
        managed = true
        [variables.node_size]
        type = "string"
        catalog = "instance_type"
        default = "Standard_D2s_v5"
        [variables.kubernetes_version]
        type = "string"
        catalog = "kubernetes_version"
        default = "1.30"
        "#,
    )
    .unwrap()
}

fn aks_spec(region: &str, vars: Value) -> ClusterSpec {
    let mut s = spec(vars);
    s.template = TemplateRef {
        name: "azure-aks-basic".into(),
        version: "1.0.0".into(),
    };
    s.provider = CloudProvider::Azure;
    s.region = region.into();
    s
}

#[test]
fn a_size_region_or_version_of_another_cloud_names_its_cloud_and_the_nearest() {
    let errs = validate(
        &aks_spec(
            "us-east-1",
            json!({"node_size": "e2-standard-4", "kubernetes_version": "1.32"}),
        ),
        &aks(),
        Catalogs::builtin(),
    )
    .unwrap_err();
    assert_eq!(
        fields(&errs),
        ["region", "variables.kubernetes_version", "variables.node_size"]
    );
    assert!(
        errs[0]
            .problem
            .starts_with("'us-east-1' is an aws region, not an azure region; nearest azure region: "),
        "{errs:?}"
    );
    assert!(errs[0].allowed.contains("eastus"), "allowed stays the list");
    assert_eq!(
        errs[1].problem,
        "'1.32' is a Kubernetes version of aws, gcp, digitalocean, linode, not an azure Kubernetes version; \
         nearest azure Kubernetes version: 1.31"
    );
    assert_eq!(errs[1].allowed, "1.29, 1.30, 1.31");
    assert_eq!(
        errs[2].problem,
        "'e2-standard-4' is a gcp machine type, not an azure size; nearest azure size: Standard_D4s_v5 (4 vCPU, \
         16 GiB)"
    );
    assert!(errs[2].allowed.contains("Standard_B2s"));
}

#[test]
fn catalog_values_of_the_requested_cloud_pass() {
    let v = validate(
        &aks_spec(
            "westeurope",
            json!({"node_size": "Standard_D4s_v5", "kubernetes_version": "1.29"}),
        ),
        &aks(),
        Catalogs::builtin(),
    )
    .unwrap();
    assert_eq!(v.variables()["kubernetes_version"], "1.29");
}

#[test]
fn a_default_outside_the_catalog_is_refused_when_the_template_is_read() {
    let text = r#"
        name = "x"
        version = "1.0.0"
        description = "x"
        providers = ["linode"]
        stages = [{ name = "cluster", modules = ["linode-lke"] }]
        [variables.kubernetes_version]
        type = "string"
        catalog = "kubernetes_version"
        default = "1.29"
    "#;
    let err = Template::from_toml(text).unwrap_err().to_string();
    assert!(
        err.contains("default of 'kubernetes_version' for linode"),
        "{err}"
    );
}
