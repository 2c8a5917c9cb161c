//! `strato operations …` and `logs` (`watch` and `--wait` are in wait.rs).

use serde_json::{Value, json};
use strato_domain::messages::{LogLine, LogStream};

use crate::Ctx;
use crate::api::seg;
use crate::args::{self, Operations};
use crate::error::{CliError, DIM, RED};
use crate::follow::{self, Event, Mode};
use crate::render::{cell, plain, user_error, when};

pub(crate) async fn run(ctx: &Ctx, o: Operations) -> Result<(), CliError> {
    let out = &ctx.out;
    match o {
        Operations::Get { id } => {
            let v = ctx.api.get(&format!("/v1/operations/{}", seg(&id))).await?;
            if !out.raw(&v)? {
                show_operation(ctx, &v);
            }
        }
        Operations::List { cluster, all } => {
            let cluster = super::cluster_id(&ctx.api, &cluster).await?;
            let mut ops = Vec::new();
            let mut next: Option<String> = None;
            loop {
                let mut path = format!("/v1/clusters/{}/operations", seg(&cluster));
                if let Some(n) = &next {
                    path.push_str(&format!("?next={}", seg(n)));
                }
                let page = ctx.api.get(&path).await?;
                ops.extend(page["operations"].as_array().cloned().unwrap_or_default());
                next = page["next"].as_str().filter(|n| !n.is_empty()).map(str::to_owned);
                if !all || next.is_none() {
                    break;
                }
            }
            let v = json!({"operations": ops, "next": next});
            if out.raw(&v)? {
                return Ok(());
            }
            let mut t = out.table(&["ID", "KIND", "STATUS", "STEP", "CREATED", "UPDATED"]);
            for op in &ops {
                t.add_row(vec![
                    cell(&op["id"]),
                    cell(&op["kind"]),
                    out.state(op["status"].as_str().unwrap_or("?")),
                    cell(&op["current_step"]),
                    when(&op["created_at"]),
                    when(&op["updated_at"]),
                ]);
            }
            println!("{t}");
            if next.is_some() {
                eprintln!("{}", out.dim("more operations: --all lists every page"));
            }
        }
        Operations::Cancel { id } => {
            let v = ctx
                .api
                .post(&format!("/v1/operations/{}/cancel", seg(&id)), &json!({}))
                .await?;
            if !out.raw(&v)? {
                let op = if v.get("operation").is_some() {
                    &v["operation"]
                } else {
                    &v
                };
                let what = if op["status"] == json!("cancelled") {
                    "cancelled"
                } else {
                    "cancel requested"
                };
                println!("{id}: {what}");
            }
        }
        Operations::Approve {
            id,
            comment,
            plan_sha256,
        } => {
            let done = "approved: a new run applies exactly this plan";
            decide(ctx, &id, "approve", comment, plan_sha256, done).await?
        }
        Operations::Reject {
            id,
            comment,
            plan_sha256,
        } => {
            let done = "rejected: the operation ends cancelled, nothing of the plan applied";
            decide(ctx, &id, "reject", comment, plan_sha256, done).await?
        }
        Operations::Timeline { id } => {
            let v = ctx
                .api
                .get(&format!("/v1/operations/{}/timeline", seg(&id)))
                .await?;
            if out.raw(&v)? {
                return Ok(());
            }
            let mut t = out.table(&["AT", "EVENT", "STEP", "DETAIL"]);
            for m in v["entries"].as_array().into_iter().flatten() {
                let mut event = cell(&m["event"]);
                if let Some(ok) = m["ok"].as_bool() {
                    event.push_str(if ok { " ✓" } else { " ✗" });
                }
                t.add_row(vec![when(&m["at"]), event, cell(&m["step"]), cell(&m["detail"])]);
            }
            println!("{t}");
            if let Some(ms) = v["duration_ms"].as_u64() {
                println!("{} {:.1} s", out.dim("duration"), ms as f64 / 1000.0);
            }
        }
    }
    Ok(())
}

/// `approve` or `reject` with an optional comment; prints `done` on success. The plan decided on is the one
/// shown: the operation is read, its pending plan printed, and the request names it (`plan_sha256`, `round`,
/// `stage`), so the API refuses it (409, naming what is pending then) if another round or stage came
/// meanwhile. With `--plan-sha256`, only that plan is named: the one the user reviewed earlier.
async fn decide(
    ctx: &Ctx,
    id: &str,
    verb: &str,
    comment: Option<String>,
    plan_sha256: Option<String>,
    done: &str,
) -> Result<(), CliError> {
    let op = ctx.api.get(&format!("/v1/operations/{}", seg(id))).await?;
    let approval = &op["approval"];
    if !ctx.out.machine() {
        show_approval(ctx, &op["id"], approval);
    }
    let body = decision_body(approval, comment, plan_sha256);
    let v = ctx
        .api
        .post(&format!("/v1/operations/{}/{verb}", seg(id)), &body)
        .await?;
    if !ctx.out.raw(&v)? {
        println!("{id}: {done}");
    }
    Ok(())
}

/// The body of approve/reject: the comment, and the plan decided on — `pinned` alone when given, else the
/// shown approval's checksum, round and stage.
fn decision_body(approval: &Value, comment: Option<String>, pinned: Option<String>) -> Value {
    let mut body = serde_json::Map::new();
    if let Some(c) = comment {
        body.insert("comment".into(), c.into());
    }
    match pinned {
        Some(sha) => {
            body.insert("plan_sha256".into(), sha.into());
        }
        None => {
            for key in ["plan_sha256", "round", "stage"] {
                if let Some(v) = approval.get(key).filter(|v| !v.is_null()) {
                    body.insert(key.into(), v.clone());
                }
            }
        }
    }
    Value::Object(body)
}

/// The plan an operation waits (or waited) with and the decision on it.
pub(super) fn show_approval(ctx: &Ctx, id: &Value, a: &Value) {
    if a.is_null() {
        return;
    }
    let out = &ctx.out;
    let s = &a["summary"];
    println!(
        "{} round {} of stage {}: {} to add, {} to change, {} to destroy (plan sha256 {})",
        out.bold("approval:"),
        cell(&a["round"]),
        cell(&a["stage"]),
        cell(&s["add"]),
        cell(&s["change"]),
        cell(&s["destroy"]),
        cell(&a["plan_sha256"])
    );
    let mut t = out.table(&["RESOURCE", "ACTION"]);
    for c in a["changes"].as_array().into_iter().flatten() {
        let actions: Vec<&str> = c["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let action = if actions == ["delete", "create"] || actions == ["create", "delete"] {
            "replace".to_owned()
        } else {
            actions.join(",")
        };
        t.add_row(vec![cell(&c["address"]), action]);
    }
    println!("{t}");
    match a["decision"].as_object() {
        Some(d) => println!(
            "{} {} by {} at {}{}",
            out.dim("decision:"),
            d.get("verdict").map(cell).unwrap_or_default(),
            d.get("by").map(cell).unwrap_or_default(),
            d.get("at").map(when).unwrap_or_default(),
            d.get("comment")
                .and_then(Value::as_str)
                .map(|c| format!(" — {}", plain(c)))
                .unwrap_or_default()
        ),
        None => println!(
            "{} until {}: strato operations approve|reject {}",
            out.dim("waiting for an approver"),
            when(&a["expires_at"]),
            cell(id)
        ),
    }
}

pub(crate) fn show_operation(ctx: &Ctx, op: &Value) {
    let out = &ctx.out;
    out.fields(&[
        ("id", cell(&op["id"])),
        ("kind", cell(&op["kind"])),
        ("status", out.state(op["status"].as_str().unwrap_or("?"))),
        ("cluster", cell(&op["cluster_id"])),
        ("step", cell(&op["current_step"])),
        ("attempt", cell(&op["attempt"])),
        ("requested by", cell(&op["requested_by"])),
        ("created", when(&op["created_at"])),
        ("updated", when(&op["updated_at"])),
    ]);
    if let Some(w) = op["wait_reason"].as_str() {
        println!("{}  {}", out.dim("waiting"), plain(w));
    }
    for s in op["steps"].as_array().into_iter().flatten() {
        let mark = match s["ok"].as_bool() {
            Some(true) => out.paint("✓", crate::error::GREEN),
            Some(false) => out.paint("✗", RED),
            None => out.paint("…", crate::error::YELLOW),
        };
        println!(
            "  {mark} {} {}",
            cell(&s["name"]),
            out.dim(&when(&s["started_at"]))
        );
    }
    for line in user_error(out, &op["error"]) {
        println!("{line}");
    }
    for n in op["notes"].as_array().into_iter().flatten() {
        println!("{} {}", out.dim("note:"), cell(n));
    }
    print_estimate(ctx, &op["estimate"]);
    show_approval(ctx, &op["id"], &op["approval"]);
}

pub(crate) fn print_estimate(ctx: &Ctx, e: &Value) {
    if e.is_null() {
        return;
    }
    let out = &ctx.out;
    let mut t = out.table(&["RESOURCE", "MONTHLY"]);
    for r in e["resources"].as_array().into_iter().flatten() {
        let name = r["address"].as_str().or(r["resource"].as_str()).unwrap_or("?");
        let monthly = r["monthly"]
            .as_f64()
            .map_or_else(|| cell(&r["monthly"]), |m| format!("{m:.2}"));
        t.add_row(vec![plain(name), monthly]);
    }
    println!("{t}");
    println!(
        "{} {:.2} {} per month (prices of {}, {})",
        out.bold("estimate:"),
        e["total_monthly"].as_f64().unwrap_or(0.0),
        cell(&e["currency"]),
        cell(&e["price_table_date"]),
        cell(&e["price_table_source"])
    );
    if let Some(n) = e["not_estimated"].as_array().filter(|n| !n.is_empty()) {
        println!(
            "{} {}",
            out.dim("not priced:"),
            super::join(&Value::Array(n.clone()))
        );
    }
}

pub(crate) async fn logs(ctx: &Ctx, l: args::Logs) -> Result<(), CliError> {
    let ws = ws_url(ctx)?;
    // A missing (or another tenant's) operation is a 404 with its exit code, not a refused subscription.
    ctx.api
        .get(&format!("/v1/operations/{}", seg(&l.operation)))
        .await?;
    let opts = follow::Options {
        from_seq: l.from_seq,
        mode: if l.follow { Mode::Follow } else { Mode::Snapshot },
        ..Default::default()
    };
    let json_lines = ctx.out.machine();
    let outcome = follow::follow(&ctx.api, ws, &l.operation, opts, |e| match e {
        Event::Line(line) if json_lines => println!("{}", serde_json::to_string(line).unwrap_or_default()),
        Event::Line(line) => println!("{}", format_line(ctx, line)),
        Event::Reconnecting { from_seq, reason } => {
            eprintln!(
                "{}",
                ctx.out
                    .dim(&plain(&format!("reconnecting from line {from_seq}: {reason}")))
            )
        }
        Event::Status { .. } => {}
    })
    .await?;
    match outcome.final_status.as_deref() {
        Some("succeeded") | None => Ok(()),
        Some("awaiting_approval") => Err(CliError::AwaitingApproval(l.operation)),
        Some(status) => Err(CliError::OperationFailed {
            id: l.operation,
            status: status.to_owned(),
        }),
    }
}

fn ws_url(ctx: &Ctx) -> Result<&str, CliError> {
    ctx.ws.as_deref().ok_or_else(|| {
        CliError::Usage(
            "live logs need the WebSocket endpoint: `strato login --ws-endpoint URL …` or STRATO_WS_ENDPOINT"
                .into(),
        )
    })
}

/// `step │ text`, stderr lines red. The text is the engine's and the tenant's modules' output: every
/// control sequence in it is removed ([`plain`]), colour included (the runner asks the engine for none).
pub(super) fn format_line(ctx: &Ctx, l: &LogLine) -> String {
    let text = plain(&l.text);
    let text = match l.stream {
        LogStream::Stderr => ctx.out.paint(&text, RED),
        _ => text,
    };
    let step = plain(&l.step);
    format!("{} {text}", ctx.out.paint(&format!("{step:>14} │"), DIM))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_decision_names_the_plan_shown_or_the_one_pinned() {
        let shown = json!({"plan_sha256": "ab".repeat(32), "round": 2, "stage": "cluster", "summary": {}});
        assert_eq!(
            super::decision_body(&shown, Some("ok".into()), None),
            json!({"comment": "ok", "plan_sha256": "ab".repeat(32), "round": 2, "stage": "cluster"})
        );
        assert_eq!(
            super::decision_body(&shown, None, Some("cd".repeat(32))),
            json!({"plan_sha256": "cd".repeat(32)})
        );
        // Nothing pending to name: the API answers (409, not awaiting approval).
        assert_eq!(super::decision_body(&json!(null), None, None), json!({}));
    }
}
