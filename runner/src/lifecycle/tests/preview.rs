//! A preview (`plan` operation): the proposed spec planned against the current state, nothing applied; the
//! changes by address, the policies' verdict (recorded, not enforced) and the monthly cost difference, all
//! from the one plan, reported on the final event and said in the log.

use serde_json::{Value, json};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;
use strato_domain::preview::{ChangeAction, Preview};

use super::support::{Bed, outputs, plan};
use crate::fakes::{Cmd, Reply};

const NO_VPC: &str = r#"package strato.plan

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_vpc"
	rc.change.actions[_] == "create"
	msg := sprintf("%s: VPCs need an exception", [rc.address])
}
"#;

const BIG_GROUPS: &str = r#"package strato.plan

warn contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_eks_node_group"
	msg := sprintf("%s: node groups cost money", [rc.address])
}
"#;

fn change(address: &str, ty: &str, actions: &[&str], before: Value, after: Value) -> Value {
    json!({"address": address, "mode": "managed", "type": ty,
        "change": {"actions": actions, "before": before, "after": after, "after_unknown": {}}})
}

fn group(desired: u32) -> Value {
    json!({"scaling_config": [{"desired_size": desired, "min_size": 1, "max_size": 5}],
        "instance_types": ["m5.large"], "disk_size": 20})
}

/// An update's plan: a node group grows 2 → 3 m5.large, an instance is replaced t3.small → t3.medium, an
/// address is released, a VPC is added, the control plane stays, a chart changes (no price).
fn update_plan() -> Value {
    json!({"format_version": "1.0", "resource_changes": [
        change("aws_eks_node_group.n", "aws_eks_node_group", &["update"], group(2), group(3)),
        change("aws_instance.bastion", "aws_instance", &["delete", "create"],
            json!({"instance_type": "t3.small"}), json!({"instance_type": "t3.medium"})),
        change("aws_eip.old", "aws_eip", &["delete"], json!({"domain": "vpc"}), Value::Null),
        change("aws_vpc.extra", "aws_vpc", &["create"], Value::Null, json!({})),
        change("aws_eks_cluster.this", "aws_eks_cluster", &["no-op"], json!({}), json!({})),
        change("helm_release.ingress", "helm_release", &["update"], json!({}), json!({})),
    ]})
}

fn preview_of(event: &RunnerEvent) -> &Preview {
    match event {
        RunnerEvent::Succeeded { preview: Some(p), .. } => p.as_ref(),
        other => panic!("a preview ends succeeded with its preview: {other:#?}"),
    }
}

#[tokio::test]
async fn a_preview_reports_changes_policies_and_the_cost_difference_and_applies_nothing() {
    let bed = Bed::new(OperationKind::Plan, "net").await;
    // Neither a budget nor a denying policy stops a preview: it says what the update would meet.
    bed.store.set_monthly_budget(&bed.op.tenant_id, 1.0);
    bed.store.put_policy(&bed.op.tenant_id, "no-vpc", NO_VPC);
    bed.store.put_policy(&bed.op.tenant_id, "big-groups", BIG_GROUPS);
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::changes(b"speculative plan"))
        .expect(Cmd::Show, Reply::json(&update_plan()))
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "nothing applied");
    let p = preview_of(&event);

    let listed: Vec<(&str, ChangeAction)> =
        p.changes.iter().map(|c| (c.address.as_str(), c.action)).collect();
    assert_eq!(
        listed,
        [
            ("aws_eks_node_group.n", ChangeAction::Update),
            ("aws_instance.bastion", ChangeAction::Replace),
            ("aws_eip.old", ChangeAction::Delete),
            ("aws_vpc.extra", ChangeAction::Create),
            ("helm_release.ingress", ChangeAction::Update),
        ],
        "no-ops left out, the replacement flagged"
    );
    assert_eq!(p.counts_text(), "+1 ~2 -1 ±1");

    // Both sides from the one plan: 2 → 3 nodes (+71.68), t3.small → t3.medium (+15.184), the address
    // released (-3.65): +83.214; the control plane (73) on both sides; the chart priced on neither.
    let c = &p.cost;
    assert_eq!((c.current_monthly, c.proposed_monthly), (235.19, 318.41), "{c:?}");
    assert!((c.difference_monthly - 83.21).abs() < 1e-9, "{c:?}");
    assert_eq!(c.difference_text(), "+$83.21/month");
    assert_eq!(c.not_estimated, ["helm_release.ingress"]);

    assert_eq!(
        p.policy.denied,
        ["tenant/no-vpc: aws_vpc.extra: VPCs need an exception"]
    );
    assert_eq!(
        p.policy.warnings,
        ["tenant/big-groups: aws_eks_node_group.n: node groups cost money"]
    );
    assert!(p.policy.version.starts_with("sha256:"), "{:?}", p.policy);
    // The policy step ran and the run succeeded: a denial is the preview's finding, not its failure.
    assert_eq!(bed.finished("policy"), [true]);

    // The log says it too.
    assert!(bed.logged("preview: +1 ~2 -1 ±1"), "{:#?}", bed.log());
    assert!(
        bed.logged("235.19 -> 318.41 USD (+$83.21/month)"),
        "{:#?}",
        bed.log()
    );
    assert!(
        bed.logged("1 denied, 1 warning(s); nothing was applied"),
        "{:#?}",
        bed.log()
    );
    assert!(bed.logged("± aws_instance.bastion (replace)"), "{:#?}", bed.log());
    assert!(bed.logged("policy denial (the update would be refused): tenant/no-vpc: aws_vpc.extra"));
}

#[tokio::test]
async fn a_preview_of_no_change_says_so_and_costs_nothing_more() {
    let bed = Bed::new(OperationKind::Plan, "net").await;
    let same = plan(&[("aws_vpc.this", "aws_vpc", "no-op")]);
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::no_changes())
        .expect(Cmd::Show, Reply::json(&same))
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    let event = bed.run_to_final().await;
    let p = preview_of(&event);
    assert!(p.changes.is_empty());
    assert_eq!(p.counts_text(), "+0 ~0 -0 ±0");
    assert_eq!(p.cost.difference_text(), "$0.00/month");
    assert!(p.policy.denied.is_empty());
    assert!(bed.logged("nothing was applied"));
}

#[tokio::test]
async fn a_drift_check_carries_no_preview() {
    let bed = Bed::quiet_drift_check().await;
    let event = bed.run_to_final().await;
    assert!(
        matches!(
            event,
            RunnerEvent::Succeeded {
                preview: None,
                drift: Some(_),
                ..
            }
        ),
        "{event:#?}"
    );
}
