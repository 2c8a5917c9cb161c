//! `watch` and `--wait`: following an operation to its end, then a summary of it.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::operations::{format_line, show_approval};
use crate::Ctx;
use crate::api::seg;
use crate::args::{self, WaitArgs};
use crate::error::CliError;
use crate::follow::{self, Event};
use crate::render::{cell, clipped, plain, user_error};

pub(crate) async fn watch(ctx: &Ctx, w: args::Watch) -> Result<(), CliError> {
    let op = if !w.id.starts_with("op-") {
        // A cluster (by id or name): its newest operation, a create, update, delete or check that is running
        // or just ended.
        let cluster = super::cluster_id(&ctx.api, &w.id).await?;
        let ops = ctx
            .api
            .get(&format!("/v1/clusters/{}/operations", seg(&cluster)))
            .await?;
        // The API lists newest first: the newest open one, else the newest.
        let list = ops["operations"].as_array().cloned().unwrap_or_default();
        let pick = list
            .iter()
            .find(|o| !matches!(o["status"].as_str(), Some("succeeded" | "failed" | "cancelled")))
            .or(list.first());
        match pick.and_then(|o| o["id"].as_str()) {
            Some(id) => id.to_owned(),
            None => return Err(CliError::Usage(format!("{} has no operations to watch", w.id))),
        }
    } else {
        // Not found (or another tenant's) is exit 4 here, not a refused subscription later.
        ctx.api.get(&format!("/v1/operations/{}", seg(&w.id))).await?;
        w.id.clone()
    };
    let wait = WaitArgs {
        wait: true,
        timeout_minutes: 24 * 60,
        quiet: w.quiet,
    };
    finish(ctx, &op, &wait).await
}

/// Follows `op` to its end (live log and state changes, or polling without a WebSocket endpoint), then
/// prints a summary; an error unless it succeeded.
pub(crate) async fn finish(ctx: &Ctx, op: &str, wait: &WaitArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let out = ctx.out;
    let spinner = out.interactive.then(|| {
        let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or(ProgressStyle::default_spinner()),
        );
        pb.enable_steady_tick(Duration::from_millis(120));
        pb.set_message(format!("{op} queued"));
        pb
    });
    let say = |text: String| match &spinner {
        Some(pb) => pb.suspend(|| println!("{text}")),
        None if !out.machine() => println!("{text}"),
        None => {}
    };
    let timeout = Duration::from_secs(wait.timeout_minutes.max(1) * 60);
    let followed = match ctx.ws.as_deref() {
        Some(ws) => {
            let opts = follow::Options {
                timeout: Some(timeout),
                ..Default::default()
            };
            let r = follow::follow(&ctx.api, ws, op, opts, |e| match e {
                Event::Line(line) => {
                    if let Some(pb) = &spinner {
                        pb.set_message(format!("{} · {}", plain(&line.step), op));
                    }
                    if !wait.quiet {
                        say(format_line(ctx, line));
                    }
                }
                Event::Status {
                    cluster_state,
                    operation_status,
                    detail,
                } => {
                    let detail = plain(&detail.unwrap_or_default());
                    say(format!(
                        "{} cluster {} · operation {} {}",
                        out.bold("▸"),
                        out.state(&cluster_state),
                        out.state(&operation_status),
                        out.dim(&detail)
                    ));
                }
                Event::Reconnecting { from_seq, reason } => {
                    say(out.dim(&plain(&format!("(reconnecting from line {from_seq}: {reason})"))))
                }
            })
            .await;
            Some(r)
        }
        None => None,
    };
    if let Some(pb) = &spinner {
        pb.finish_and_clear();
    }
    if followed.is_none() && !out.machine() {
        eprintln!(
            "{}",
            out.dim("no WebSocket endpoint in the profile: polling, without the live log")
        );
    }
    let final_op = match followed {
        Some(Ok(_)) => ctx.api.get(&format!("/v1/operations/{}", seg(op))).await?,
        Some(Err(e)) => return Err(e),
        None => poll(ctx, op, timeout).await?,
    };
    summary(ctx, &final_op, started.elapsed()).await
}

async fn poll(ctx: &Ctx, op: &str, timeout: Duration) -> Result<Value, CliError> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let v = ctx.api.get(&format!("/v1/operations/{}", seg(op))).await?;
        let status = v["status"].as_str().unwrap_or("?").to_owned();
        if matches!(
            status.as_str(),
            "succeeded" | "failed" | "cancelled" | "awaiting_approval"
        ) {
            return Ok(v);
        }
        let now = format!("{status} {}", cell(&v["current_step"]));
        if now != last && !ctx.out.machine() {
            println!("{} operation {now}", ctx.out.bold("▸"));
            last = now;
        }
        if Instant::now() >= deadline {
            return Err(CliError::Stream(format!(
                "{op} did not end within {} min",
                timeout.as_secs() / 60
            )));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn summary(ctx: &Ctx, op: &Value, took: Duration) -> Result<(), CliError> {
    let out = &ctx.out;
    let status = op["status"].as_str().unwrap_or("?").to_owned();
    let id = cell(&op["id"]);
    if !out.raw(op)? {
        println!(
            "\n{} {} {} {}",
            out.bold(&cell(&op["kind"])),
            out.state(&status),
            out.dim(&id),
            took_text(op, took)
        );
        for line in user_error(out, &op["error"]) {
            println!("{line}");
        }
        for line in warnings_and_cost(op) {
            println!("{line}");
        }
        if let Some(cluster) = op["cluster_id"].as_str() {
            match ctx.api.get(&format!("/v1/clusters/{}", seg(cluster))).await {
                Ok(c) => {
                    println!(
                        "cluster {cluster}: {}",
                        out.state(c["state"].as_str().unwrap_or("?"))
                    );
                    for (k, v) in c["outputs"].as_object().into_iter().flatten() {
                        println!("  {} = {}", k, clipped(v, 100));
                    }
                }
                // A deleted cluster is gone: its operation's status says it all.
                Err(CliError::Api(p)) if p.status == 404 => println!("cluster {cluster}: deleted"),
                Err(e) => return Err(e),
            }
        }
    }
    if status == "awaiting_approval" {
        if !out.machine() {
            show_approval(ctx, &op["id"], &op["approval"]);
        }
        return Err(CliError::AwaitingApproval(id));
    }
    if status == "succeeded" {
        Ok(())
    } else {
        Err(CliError::OperationFailed { id, status })
    }
}

/// How long the operation took, for the summary line: its own times from the API (queued → ended, as its
/// timeline's duration), never how long this command watched it (`watch` or `--wait` may attach late).
/// An open one (awaiting approval) shows how long it ran until its last change; without the times (an older
/// API), the line says the duration is unknown and how long this watch saw.
fn took_text(op: &Value, watched: Duration) -> String {
    let at = |key: &str| op[key].as_str().and_then(strato_domain::ts::parse);
    match (at("created_at"), at("ended_at"), at("updated_at")) {
        (Some(from), Some(to), _) => format!("in {:.1} s", (to - from).as_seconds_f64().max(0.0)),
        (Some(from), None, Some(last)) if op["status"] == "awaiting_approval" => {
            format!("after {:.1} s", (last - from).as_seconds_f64().max(0.0))
        }
        _ => format!(
            "(its duration is unknown; watched for {:.1} s)",
            watched.as_secs_f64()
        ),
    }
}

/// The summary's lines about the policy warnings the operation carries and its estimated monthly cost, when
/// it has them. Warnings are notes: `policy warning: …` from the request's policies (the API) and
/// `plan policy warning (STAGE): …` from a plan's (the runner), possibly after a timestamp.
fn warnings_and_cost(op: &Value) -> Vec<String> {
    let warnings: Vec<String> = op["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|note| {
            let note = match note.split_once(": ") {
                Some((at, rest)) if strato_domain::ts::parse(at).is_some() => rest,
                _ => note,
            };
            if let Some(w) = note.strip_prefix("policy warning: ") {
                return Some(plain(w));
            }
            let (stage, w) = note.strip_prefix("plan policy warning (")?.split_once("): ")?;
            Some(format!("{} (plan of stage {})", plain(w), plain(stage)))
        })
        .collect();
    let mut out = Vec::new();
    if !warnings.is_empty() {
        let s = if warnings.len() == 1 { "" } else { "s" };
        out.push(format!("{} policy warning{s}:", warnings.len()));
        out.extend(warnings.into_iter().map(|w| format!("  - {w}")));
    }
    // An estimate's own command prints the whole price table after the summary.
    if let Some(total) = op["estimate"]["total_monthly"]
        .as_f64()
        .filter(|_| op["kind"] != "estimate")
    {
        out.push(format!(
            "estimated cost: {total:.2} {} per month",
            cell(&op["estimate"]["currency"])
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    #[test]
    fn the_summary_shows_the_operations_own_duration_not_the_watch() {
        // Attached 70 s after it was queued: watched for 3.8 s of its 74.
        let op = json!({"status": "succeeded", "created_at": "2026-11-29T12:00:00.000000Z",
            "started_at": "2026-11-29T12:00:02.000000Z", "ended_at": "2026-11-29T12:01:14.000000Z"});
        assert_eq!(super::took_text(&op, Duration::from_millis(3800)), "in 74.0 s");
        // An API without the end (or an older answer): said so, with what this watch saw.
        let op = json!({"status": "succeeded", "created_at": "2026-11-29T12:00:00.000000Z"});
        assert_eq!(
            super::took_text(&op, Duration::from_millis(3800)),
            "(its duration is unknown; watched for 3.8 s)"
        );
        // Not ended (awaiting approval): how long since it was queued, up to its last change.
        let op = json!({"status": "awaiting_approval", "created_at": "2026-11-29T12:00:00.000000Z",
            "ended_at": null, "updated_at": "2026-11-29T12:00:40.000000Z"});
        assert_eq!(super::took_text(&op, Duration::from_millis(3800)), "after 40.0 s");
    }

    #[test]
    fn the_summary_shows_the_policy_warnings_and_the_estimated_monthly_cost() {
        let op = json!({"kind": "create", "status": "succeeded", "notes": [
            "policy warning: platform/tags: tag 'owner' is missing",
            "plan of stage cluster checked against policy sha256:0123",
            "plan policy warning (cluster): platform/size: 12 nodes is above the usual 10",
            "2026-11-29T12:00:00.000000Z: webhook delivered"
        ], "estimate": {"total_monthly": 1234.5, "currency": "USD", "resources": []}});
        assert_eq!(
            super::warnings_and_cost(&op),
            [
                "2 policy warnings:",
                "  - platform/tags: tag 'owner' is missing",
                "  - platform/size: 12 nodes is above the usual 10 (plan of stage cluster)",
                "estimated cost: 1234.50 USD per month",
            ]
        );
        let one = json!({"notes": ["policy warning: a"], "estimate": null});
        assert_eq!(super::warnings_and_cost(&one), ["1 policy warning:", "  - a"]);
        // Neither: nothing to say.
        let none = json!({"notes": ["plan of stage cluster checked against policy sha256:0123"]});
        assert!(super::warnings_and_cost(&none).is_empty());
    }
}
