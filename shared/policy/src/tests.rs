//! Each platform policy against a passing and a failing input, and the set's mechanics.

use serde_json::{Value, json};

use super::*;

fn platform_set() -> PolicySet {
    PolicySet::with_platform(&[]).expect("the platform policies compile")
}

fn request(region: &str, node_count: i64, tags: Value) -> Value {
    RequestInput {
        action: "create".into(),
        tenant: "acme".into(),
        principal: Some("alice".into()),
        cluster: input::ClusterRef {
            id: None,
            name: "dev".into(),
        },
        template: input::TemplateRef {
            name: "aws-eks-basic".into(),
            version: "1.0.0".into(),
        },
        provider: "aws".into(),
        region: region.into(),
        variables: [
            ("node_count".to_owned(), json!(node_count)),
            ("tags".to_owned(), tags),
        ]
        .into_iter()
        .collect(),
        ..RequestInput::default()
    }
    .derive()
    .to_value()
}

fn plan(changes: Value, monthly: f64) -> Value {
    PlanInput {
        action: "create".into(),
        tenant: "acme".into(),
        plan: json!({ "format_version": "1.2", "resource_changes": changes }),
        estimate: Some(json!({ "currency": "USD", "total_monthly": monthly, "resources": [] })),
        ..PlanInput::default()
    }
    .to_value()
}

fn change(address: &str, ty: &str, after: Value) -> Value {
    json!({ "address": address, "type": ty, "change": { "actions": ["create"], "after": after } })
}

fn policies(v: &[Finding]) -> Vec<&str> {
    v.iter().map(|f| f.policy.as_str()).collect()
}

#[test]
fn a_compliant_request_passes_every_platform_policy() {
    let v = platform_set().evaluate(
        Stage::Request,
        &request("us-east-1", 3, json!({ "owner": "alice" })),
    );
    assert_eq!(v.deny, vec![]);
    assert_eq!(v.warn, vec![]);
    assert!(v.version.starts_with("sha256:"), "{}", v.version);
}

#[test]
fn a_region_outside_the_allowed_list_is_denied() {
    let v = platform_set().evaluate(Stage::Request, &request("sa-east-1", 3, json!({ "owner": "a" })));
    assert_eq!(policies(&v.deny), ["platform/regions"]);
    assert!(
        v.deny[0].message.contains("region 'sa-east-1' is not allowed"),
        "{}",
        v.deny[0]
    );
}

#[test]
fn each_cloud_has_its_own_allowed_regions() {
    let on = |provider: &str, region: &str| {
        let mut r = request(region, 3, json!({ "owner": "a" }));
        r["provider"] = json!(provider);
        platform_set().evaluate(Stage::Request, &r)
    };
    for (provider, region) in [
        ("gcp", "europe-west4"),
        ("azure", "westeurope"),
        ("digitalocean", "fra1"),
        ("linode", "eu-central"),
    ] {
        assert_eq!(on(provider, region).deny, vec![], "{provider} {region}");
    }
    // Another cloud's region is no region of this one.
    let v = on("gcp", "us-east-1");
    assert_eq!(policies(&v.deny), ["platform/regions"]);
    assert!(
        v.deny[0]
            .message
            .contains("region 'us-east-1' is not allowed for gcp")
            && v.deny[0].message.contains("us-central1"),
        "{}",
        v.deny[0]
    );
}

#[test]
fn deleting_is_never_denied_for_its_region() {
    let mut input = request("sa-east-1", 3, json!({}));
    input["action"] = json!("delete");
    let v = platform_set().evaluate(Stage::Request, &input);
    assert_eq!(v.deny, vec![]);
}

#[test]
fn node_counts_over_the_limit_are_denied_and_large_ones_warned() {
    let set = platform_set();
    let v = set.evaluate(Stage::Request, &request("us-east-1", 51, json!({ "owner": "a" })));
    assert_eq!(policies(&v.deny), ["platform/node-limits"]);
    assert!(
        v.deny[0].message.contains("node_count 51 exceeds"),
        "{}",
        v.deny[0]
    );
    let v = set.evaluate(Stage::Request, &request("us-east-1", 30, json!({ "owner": "a" })));
    assert_eq!(v.deny, vec![]);
    assert_eq!(policies(&v.warn), ["platform/node-limits"]);
}

#[test]
fn a_missing_owner_tag_is_a_warning() {
    let v = platform_set().evaluate(Stage::Request, &request("us-east-1", 2, json!({ "team": "x" })));
    assert_eq!(v.deny, vec![]);
    assert_eq!(policies(&v.warn), ["platform/tags"]);
    assert!(
        v.warn[0].message.contains("tag 'owner' is missing"),
        "{}",
        v.warn[0]
    );
}

#[test]
fn a_plan_without_public_buckets_or_big_instances_passes() {
    let changes = json!([
        change(
            "aws_s3_bucket_acl.logs",
            "aws_s3_bucket_acl",
            json!({ "acl": "private" })
        ),
        change(
            "aws_eks_node_group.main",
            "aws_eks_node_group",
            json!({ "instance_types": ["t3.medium"] })
        ),
    ]);
    let v = platform_set().evaluate(Stage::Plan, &plan(changes, 180.0));
    assert_eq!(v.deny, vec![]);
    assert_eq!(v.warn, vec![]);
}

#[test]
fn a_public_bucket_acl_or_an_open_access_block_is_denied() {
    let changes = json!([
        change(
            "aws_s3_bucket_acl.site",
            "aws_s3_bucket_acl",
            json!({ "acl": "public-read" })
        ),
        change(
            "aws_s3_bucket_public_access_block.site",
            "aws_s3_bucket_public_access_block",
            json!({ "block_public_acls": true, "block_public_policy": false, "ignore_public_acls": true, "restrict_public_buckets": true })
        ),
    ]);
    let v = platform_set().evaluate(Stage::Plan, &plan(changes, 10.0));
    assert_eq!(
        policies(&v.deny),
        ["platform/public-buckets", "platform/public-buckets"]
    );
    let text: Vec<String> = v.deny.iter().map(|f| f.message.clone()).collect();
    assert!(
        text.iter()
            .any(|m| m.contains("aws_s3_bucket_acl.site grants the public ACL 'public-read'")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|m| m.contains("turns off block_public_policy")),
        "{text:?}"
    );
}

#[test]
fn accelerated_instance_families_are_denied() {
    let changes = json!([
        change(
            "aws_eks_node_group.gpu",
            "aws_eks_node_group",
            json!({ "instance_types": ["p4d.24xlarge"] })
        ),
        change(
            "aws_instance.ok",
            "aws_instance",
            json!({ "instance_type": "m5.large" })
        ),
    ]);
    let v = platform_set().evaluate(Stage::Plan, &plan(changes, 10.0));
    assert_eq!(policies(&v.deny), ["platform/instance-families"]);
    assert!(
        v.deny[0]
            .message
            .contains("aws_eks_node_group.gpu uses instance type p4d.24xlarge"),
        "{}",
        v.deny[0]
    );
}

#[test]
fn a_deleted_resource_is_not_judged_by_its_old_instance_type() {
    let changes = json!([{ "address": "aws_instance.old", "type": "aws_instance",
        "change": { "actions": ["delete"], "after": null, "before": { "instance_type": "p5.48xlarge" } } }]);
    let v = platform_set().evaluate(Stage::Plan, &plan(changes, 0.0));
    assert_eq!(v.deny, vec![]);
}

#[test]
fn cost_over_the_limit_is_denied_and_near_it_warned() {
    let set = platform_set();
    let v = set.evaluate(Stage::Plan, &plan(json!([]), 7500.0));
    assert_eq!(policies(&v.deny), ["platform/monthly-cost"]);
    assert!(
        v.deny[0]
            .message
            .contains("7500.00 USD exceeds the limit of 5000"),
        "{}",
        v.deny[0]
    );
    let v = set.evaluate(Stage::Plan, &plan(json!([]), 2500.0));
    assert_eq!(v.deny, vec![]);
    assert_eq!(policies(&v.warn), ["platform/monthly-cost"]);
}

#[test]
fn a_plan_without_an_estimate_is_not_denied_for_cost() {
    let mut input = plan(json!([]), 0.0);
    input["estimate"] = Value::Null;
    assert_eq!(platform_set().evaluate(Stage::Plan, &input).deny, vec![]);
}

#[test]
fn request_policies_do_not_run_on_plans_and_the_other_way_round() {
    // A plan input has no region: the request policy would deny it if it ran.
    let v = platform_set().evaluate(Stage::Plan, &plan(json!([]), 0.0));
    assert_eq!(v.deny, vec![]);
}

const TENANT: &str = r#"package strato.request

deny contains msg if {
	input.action == "create"
	not input.tags["cost-center"]
	msg := "every cluster needs a cost-center tag"
}

warn contains {"msg": "big one"} if input.node_count > 4
"#;

#[test]
fn tenant_policies_add_to_the_platform_and_name_themselves() {
    let set = PolicySet::with_platform(&[Policy::tenant("cost-center", TENANT)]).unwrap();
    let v = set.evaluate(Stage::Request, &request("us-east-1", 5, json!({ "owner": "a" })));
    assert_eq!(
        v.deny,
        vec![Finding {
            policy: "tenant/cost-center".into(),
            message: "every cluster needs a cost-center tag".into()
        }]
    );
    assert_eq!(v.warn[0].message, "big one");
    assert_eq!(
        v.deny[0].to_string(),
        "tenant/cost-center: every cluster needs a cost-center tag"
    );
}

#[test]
fn the_version_changes_with_any_source_and_not_with_order() {
    let a = Policy::tenant("a", "package strato.request\n");
    let b = Policy::tenant("b", "package strato.plan\n");
    let v1 = PolicySet::compile(&[a.clone(), b.clone()]).unwrap();
    let v2 = PolicySet::compile(&[b.clone(), a.clone()]).unwrap();
    assert_eq!(v1.version(), v2.version());
    let b2 = Policy::tenant("b", "package strato.plan\n# changed\n");
    let v3 = PolicySet::compile(&[a, b2]).unwrap();
    assert_ne!(v1.version(), v3.version());
    assert_ne!(platform_set().version(), v1.version());
}

#[test]
fn check_accepts_both_packages_and_reports_the_stage() {
    assert_eq!(check(&Policy::tenant("t", TENANT)).unwrap(), Stage::Request);
    assert_eq!(
        check(&Policy::tenant(
            "p",
            "package strato.plan\ndeny contains \"x\" if false\n"
        ))
        .unwrap(),
        Stage::Plan
    );
}

#[test]
fn check_refuses_syntax_errors_other_packages_unknown_builtins_and_huge_sources() {
    let err = check(&Policy::tenant(
        "bad",
        "package strato.request\ndeny contains msg if {",
    ))
    .unwrap_err();
    assert!(matches!(err, PolicyError::Compile { .. }), "{err}");
    let err = check(&Policy::tenant("bad", "package acme.rules\n")).unwrap_err();
    assert!(
        matches!(err, PolicyError::Package { ref package, .. } if package == "acme.rules"),
        "{err}"
    );
    let err = check(&Policy::tenant(
        "bad",
        "package strato.request\ndeny contains msg if { msg := no_such_builtin(input.x) }\n",
    ))
    .unwrap_err();
    assert!(matches!(err, PolicyError::Compile { .. }), "{err}");
    let huge = format!("package strato.request\n#{}\n", "x".repeat(MAX_SOURCE_BYTES));
    assert!(matches!(
        check(&Policy::tenant("big", huge)).unwrap_err(),
        PolicyError::TooLarge { .. }
    ));
}

#[test]
fn a_policy_whose_deny_is_not_a_set_denies_instead_of_passing() {
    let set = PolicySet::compile(&[Policy::tenant("odd", "package strato.request\ndeny := true\n")]).unwrap();
    let v = set.evaluate(Stage::Request, &json!({}));
    assert_eq!(policies(&v.deny), ["tenant/odd"]);
    assert!(v.deny[0].message.contains("must be a set"), "{}", v.deny[0]);
}

#[test]
fn names_are_checked() {
    assert!(check_name("cost-center").is_ok());
    for bad in ["", "Cost", "1x", "a/b", &"a".repeat(64)] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_set_is_compiled_once_per_process_until_it_changes() {
    let tenant = |msg: &str| {
        vec![Policy::tenant(
            "cache-probe",
            format!(
                "package strato.request\n\ndeny contains \"{msg}\" if {{ input.region == \"mars-1\" }}\n"
            ),
        )]
    };
    let a = PolicySet::cached_with_platform(&tenant("first")).unwrap();
    let again = PolicySet::cached_with_platform(&tenant("first")).unwrap();
    assert!(Arc::ptr_eq(&a, &again), "the same set is not compiled twice");
    let b = PolicySet::cached_with_platform(&tenant("second")).unwrap();
    assert!(!Arc::ptr_eq(&a, &b));
    assert_ne!(a.version(), b.version());
    // Each answers with its own source.
    let input = request("mars-1", 3, json!({"owner": "x"}));
    let denied = |s: &PolicySet| -> Vec<String> {
        s.evaluate(Stage::Request, &input)
            .deny
            .into_iter()
            .filter(|f| f.policy.ends_with("cache-probe"))
            .map(|f| f.message)
            .collect()
    };
    assert_eq!(denied(&a), ["first"]);
    assert_eq!(denied(&b), ["second"]);
}

#[test]
fn a_plans_sensitive_values_are_masked_wherever_it_marks_them() {
    let mut plan = json!({
        "variables": {"token": {"value": "t0ken-abc"}, "size": {"value": 3}},
        "configuration": {"root_module": {"variables": {"token": {"sensitive": true}, "size": {}}}},
        "resource_changes": [{"address": "x.y", "change": {
            "before": {"tags": ["a", "old-secret"]}, "before_sensitive": {"tags": [false, true]},
            "after": {"tags": ["a", "new-secret"], "nested": {"k": "deep-secret", "n": 1}},
            "after_sensitive": {"tags": [false, true], "nested": {"k": true}}
        }}],
        "output_changes": {"o": {"after": "out-secret", "after_sensitive": true}},
        "planned_values": {
            "outputs": {"o": {"sensitive": true, "value": "out-secret"}, "p": {"sensitive": false, "value": "plain"}},
            "root_module": {"child_modules": [{"resources": [{
                "values": {"password": "child-secret", "name": "n"}, "sensitive_values": {"password": true}
            }]}]}
        },
        "prior_state": {"values": {"root_module": {"resources": [{
            "values": {"password": "prior-secret"}, "sensitive_values": {"password": true}
        }]}}}
    });
    input::redact_plan(&mut plan);
    let text = plan.to_string();
    for secret in [
        "t0ken-abc",
        "old-secret",
        "new-secret",
        "deep-secret",
        "out-secret",
        "child-secret",
        "prior-secret",
    ] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    assert_eq!(plan["variables"]["size"]["value"], 3);
    assert_eq!(plan["resource_changes"][0]["change"]["after"]["tags"][0], "a");
    assert_eq!(plan["resource_changes"][0]["change"]["after"]["nested"]["n"], 1);
    assert_eq!(plan["planned_values"]["outputs"]["p"]["value"], "plain");
    assert_eq!(
        plan["planned_values"]["root_module"]["child_modules"][0]["resources"][0]["values"]["name"],
        "n"
    );
    assert_eq!(plan["variables"]["token"]["value"], input::REDACTED);
}
