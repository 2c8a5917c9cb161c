//! `strato clusters update … --plan-only`: a preview of the update (`POST /v1/clusters/{id}/plan`), waited
//! for, then what it found: the changes by address, the policy results and the monthly cost difference.
//! Nothing of it is applied.

use serde_json::{Map, Value};

use super::wait::finish;
use crate::Ctx;
use crate::api::seg;
use crate::args::WaitArgs;
use crate::error::CliError;
use crate::render::{Out, cell, plain};

/// Queues the preview of `body` (a PATCH's variables and template version) on cluster `id`, follows it to
/// its end and prints what it found.
pub(crate) async fn run(
    ctx: &Ctx,
    id: &str,
    body: Map<String, Value>,
    wait: &WaitArgs,
) -> Result<(), CliError> {
    let v = ctx
        .api
        .post(&format!("/v1/clusters/{}/plan", seg(id)), &Value::Object(body))
        .await?;
    let op = v["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if !ctx.out.machine() {
        println!(
            "preview of an update of cluster {} ({}) queued: operation {op}",
            cell(&v["cluster"]["id"]),
            cell(&v["cluster"]["name"])
        );
    }
    // A preview is only worth its result: always waited for, as with --wait.
    let wait = WaitArgs {
        wait: true,
        ..wait.clone()
    };
    finish(ctx, &op, &wait).await?;
    if !ctx.out.machine() {
        let o = ctx.api.get(&format!("/v1/operations/{}", seg(&op))).await?;
        println!();
        for line in preview_lines(&ctx.out, &o["preview"]) {
            println!("{line}");
        }
    }
    Ok(())
}

/// The preview as lines: a header with the counts, each change with its marker (`+` create, `~` update,
/// `-` delete, `±` replace), the policy results, the cost now and after with the difference, and that
/// nothing was applied.
pub(crate) fn preview_lines(out: &Out, p: &Value) -> Vec<String> {
    if p.is_null() {
        return vec!["the preview recorded no result; nothing was applied".into()];
    }
    let n = |k: &str| p["counts"][k].as_u64().unwrap_or(0);
    let mut lines = vec![out.bold(&format!(
        "Preview: {} to add, {} to change, {} to destroy, {} to replace",
        n("add"),
        n("change"),
        n("destroy"),
        n("replace")
    ))];
    let changes = p["changes"].as_array().cloned().unwrap_or_default();
    if changes.is_empty() {
        lines.push("  no resource would change".into());
    }
    for c in &changes {
        let marker = c["marker"].as_str().unwrap_or("?");
        let action = c["action"].as_str().unwrap_or("?");
        let style = match action {
            "create" => crate::error::GREEN,
            "delete" | "replace" => crate::error::RED,
            _ => crate::error::YELLOW,
        };
        let flag = if action == "replace" {
            " (replaced: destroyed, then created)"
        } else {
            ""
        };
        lines.push(format!(
            "  {} {}{flag}",
            out.paint(&plain(marker), style),
            plain(c["address"].as_str().unwrap_or("?"))
        ));
    }
    let policy = &p["policy"];
    let list = |k: &str| -> Vec<String> {
        policy[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(plain)
            .collect()
    };
    let (denied, warnings) = (list("denied"), list("warnings"));
    lines.push(format!(
        "Policies: {} denied, {} warning(s){}",
        denied.len(),
        warnings.len(),
        if denied.is_empty() {
            String::new()
        } else {
            " — the update would be refused".into()
        }
    ));
    lines.extend(denied.iter().map(|d| format!("  denied: {d}")));
    lines.extend(warnings.iter().map(|w| format!("  warning: {w}")));
    let cost = &p["cost"];
    let money = |k: &str| cost[k].as_f64().unwrap_or(0.0);
    lines.push(format!(
        "Monthly cost: {} ({:.2} → {:.2} {})",
        out.bold(cost["difference"].as_str().unwrap_or("?")),
        money("current_monthly"),
        money("proposed_monthly"),
        cell(&cost["currency"])
    ));
    let unpriced = cost["not_estimated"].as_array().map_or(0, Vec::len);
    if unpriced > 0 {
        lines.push(format!(
            "  {unpriced} resource(s) without a price are left out of both figures"
        ));
    }
    lines.push(
        "Nothing was applied: this was a preview. Run the same command without --plan-only to apply it."
            .into(),
    );
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::render::{Format, Out};

    #[test]
    fn a_preview_lists_changes_with_markers_policies_and_the_cost_difference() {
        let out = Out {
            format: Format::Table,
            color: false,
            interactive: false,
        };
        let p = json!({
            "changes": [
                {"stage": "k8s", "address": "aws_eks_node_group.n", "action": "update", "marker": "~"},
                {"stage": "k8s", "address": "aws_instance.bastion", "action": "replace", "marker": "±"},
                {"stage": "k8s", "address": "aws_eip.old", "action": "delete", "marker": "-"},
                {"stage": "k8s", "address": "aws_vpc.extra", "action": "create", "marker": "+"}
            ],
            "counts": {"add": 1, "change": 1, "destroy": 1, "replace": 1},
            "cost": {"currency": "USD", "current_monthly": 235.19, "proposed_monthly": 247.53,
                "difference_monthly": 12.34, "difference": "+$12.34/month",
                "not_estimated": ["helm_release.x"], "price_table_date": "2025-01"},
            "policy": {"version": "sha256:0", "denied": ["aws_vpc.extra: VPCs need an exception"],
                "warnings": ["big groups"]},
            "applied": false
        });
        assert_eq!(
            super::preview_lines(&out, &p),
            [
                "Preview: 1 to add, 1 to change, 1 to destroy, 1 to replace",
                "  ~ aws_eks_node_group.n",
                "  ± aws_instance.bastion (replaced: destroyed, then created)",
                "  - aws_eip.old",
                "  + aws_vpc.extra",
                "Policies: 1 denied, 1 warning(s) — the update would be refused",
                "  denied: aws_vpc.extra: VPCs need an exception",
                "  warning: big groups",
                "Monthly cost: +$12.34/month (235.19 → 247.53 USD)",
                "  1 resource(s) without a price are left out of both figures",
                "Nothing was applied: this was a preview. Run the same command without --plan-only to apply it.",
            ]
        );
        let none = json!({"changes": [], "counts": {}, "policy": {"denied": [], "warnings": []},
            "cost": {"difference": "$0.00/month", "current_monthly": 1.0, "proposed_monthly": 1.0,
                "currency": "USD", "not_estimated": []}});
        let lines = super::preview_lines(&out, &none);
        assert_eq!(lines[1], "  no resource would change");
        assert!(
            lines
                .iter()
                .any(|l| l == "Monthly cost: $0.00/month (1.00 → 1.00 USD)")
        );
        // A terminal-escape in an address from the API is shown inert.
        let hostile = json!({"changes": [{"address": "a\u{1b}[2Jb", "action": "create", "marker": "+"}]});
        assert!(!super::preview_lines(&out, &hostile)[1].contains('\u{1b}'));
    }
}
