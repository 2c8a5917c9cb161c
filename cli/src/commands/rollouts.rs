//! `strato rollouts …`: the report as a table (cluster, tenant, status, create/update/replace/destroy
//! counts, replaced addresses, monthly delta) under the fleet summary line (`-o json|yaml`: the API's answer).

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::api::seg;
use crate::args::{RolloutCommand, Rollouts, Selection, StopFlags};
use crate::error::CliError;
use crate::render::cell;

/// `1,25%,100%` as the API's waves.
pub(crate) fn waves(text: &str) -> Result<Value, CliError> {
    let bad = |w: &str| {
        CliError::Usage(format!(
            "--waves: '{w}' is neither a number of clusters nor a percent (e.g. 1,25%,100%)"
        ))
    };
    let mut out = Vec::new();
    for w in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        out.push(match w.strip_suffix('%') {
            Some(p) => json!({"percent": p.parse::<u8>().map_err(|_| bad(w))?}),
            None => json!({"clusters": w.parse::<u32>().map_err(|_| bad(w))?}),
        });
    }
    Ok(Value::Array(out))
}

/// The request body of a preview (`waves` None) or a start.
pub(crate) fn body(s: &Selection, mode: &str) -> Value {
    let mut selector = Map::new();
    for (k, v) in [
        ("from_versions", &s.from_versions),
        ("clusters", &s.clusters),
        ("states", &s.states),
        ("tenants", &s.tenants),
    ] {
        if !v.is_empty() {
            selector.insert(k.into(), json!(v));
        }
    }
    json!({"template": s.template, "to_version": s.to_version, "mode": mode, "selector": selector})
}

/// The request's `stop`; `None` when no flag was given (the API's defaults: nothing replaced or destroyed,
/// no cost bound).
pub(crate) fn stop(s: &StopFlags) -> Option<Value> {
    if s.allow_replace.is_empty() && !s.allow_destroy && s.max_monthly_delta.is_none() {
        return None;
    }
    let mut stop = json!({"allow_replace": s.allow_replace, "allow_destroy": s.allow_destroy});
    if let Some(m) = s.max_monthly_delta {
        stop["max_monthly_delta"] = json!(m);
    }
    Some(stop)
}

fn money(v: &Value) -> String {
    match v.as_f64() {
        Some(d) if d.abs() >= 0.005 => format!("{}${:.2}", if d > 0.0 { "+" } else { "-" }, d.abs()),
        Some(_) => "$0.00".into(),
        None => "-".into(),
    }
}

fn count(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// The rollout's head, its fleet summary line, and one row per member shown.
fn show(ctx: &Ctx, r: &Value) -> Result<(), CliError> {
    if ctx.out.raw(r)? {
        return Ok(());
    }
    let phase = match r["pause_reason"].as_str() {
        Some(why) => format!("{} ({why})", cell(&r["phase"])),
        None => cell(&r["phase"]),
    };
    ctx.out.fields(&[
        ("rollout", cell(&r["id"])),
        (
            "template",
            format!("{} → {}", cell(&r["template"]), cell(&r["to_version"])),
        ),
        ("mode", cell(&r["mode"])),
        ("phase", phase),
        ("summary", cell(&r["summary"]["text"])),
    ]);
    let members = r["members"].as_array().cloned().unwrap_or_default();
    if members.is_empty() {
        return Ok(());
    }
    let mut table = ctx.out.table(&[
        "CLUSTER", "TENANT", "WAVE", "STATUS", "CREATE", "UPDATE", "REPLACE", "DESTROY", "REPLACED",
        "MONTHLY",
    ]);
    for m in &members {
        let status = match m["reason"].as_str() {
            Some(why) => format!("{}: {why}", cell(&m["status"])),
            None => cell(&m["status"]),
        };
        let replaced: Vec<String> = m["replace"]
            .as_array()
            .map(|a| a.iter().map(cell).collect())
            .unwrap_or_default();
        table.add_row(vec![
            cell(&m["cluster_id"]),
            cell(&m["tenant_id"]),
            cell(&m["wave"]),
            status,
            cell(&m["create"]),
            cell(&m["update"]),
            count(&m["replace"]).to_string(),
            count(&m["destroy"]).to_string(),
            replaced.join(", "),
            money(&m["monthly_delta"]),
        ]);
    }
    println!("{table}");
    if r["next"].is_string() {
        eprintln!(
            "{}",
            ctx.out.dim("more clusters: -o json with ?next, or the console")
        );
    }
    Ok(())
}

pub(crate) async fn run(ctx: &Ctx, r: Rollouts) -> Result<(), CliError> {
    let base = if r.admin {
        "/v1/admin/rollouts"
    } else {
        "/v1/rollouts"
    };
    let one = |id: &str| format!("{base}/{}", seg(id));
    match r.command {
        RolloutCommand::Preview { selection, stop: s } => {
            let mut b = body(&selection, "preview");
            if let Some(s) = stop(&s) {
                b["stop"] = s;
            }
            show(ctx, &ctx.api.post(base, &b).await?)
        }
        RolloutCommand::Start {
            selection,
            waves: w,
            soak_seconds,
            stop: s,
        } => {
            let mut b = body(&selection, "apply");
            b["waves"] = waves(&w)?;
            if let Some(s) = soak_seconds {
                b["soak_seconds"] = json!(s);
            }
            b["stop"] = stop(&s).unwrap_or_else(|| json!({}));
            show(ctx, &ctx.api.post(base, &b).await?)
        }
        RolloutCommand::Get { id } => show(ctx, &ctx.api.get(&format!("{}?limit=200", one(&id))).await?),
        RolloutCommand::List => {
            let list = ctx.api.get(base).await?;
            if ctx.out.raw(&list)? {
                return Ok(());
            }
            let mut table = ctx
                .out
                .table(&["ROLLOUT", "TEMPLATE", "TO", "MODE", "PHASE", "SUMMARY"]);
            for r in list["rollouts"].as_array().cloned().unwrap_or_default() {
                table.add_row(vec![
                    cell(&r["id"]),
                    cell(&r["template"]),
                    cell(&r["to_version"]),
                    cell(&r["mode"]),
                    cell(&r["phase"]),
                    cell(&r["summary"]["text"]),
                ]);
            }
            println!("{table}");
            Ok(())
        }
        RolloutCommand::Pause { id } => show(
            ctx,
            &ctx.api.post(&format!("{}/pause", one(&id)), &json!({})).await?,
        ),
        RolloutCommand::Resume { id, skip_failed } => show(
            ctx,
            &ctx.api
                .post(
                    &format!("{}/resume", one(&id)),
                    &json!({"skip_failed": skip_failed}),
                )
                .await?,
        ),
        RolloutCommand::Abort { id } => show(
            ctx,
            &ctx.api.post(&format!("{}/abort", one(&id)), &json!({})).await?,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_read_as_clusters_and_percents() {
        assert_eq!(
            waves("1, 25%,100%").unwrap(),
            json!([{"clusters": 1}, {"percent": 25}, {"percent": 100}])
        );
        for bad in ["1,half", "25%%", "-1"] {
            let e = waves(bad).unwrap_err();
            assert!(e.to_string().contains("--waves"), "{e}");
        }
    }

    #[test]
    fn the_selection_sends_only_what_was_given() {
        let s = Selection {
            template: "eks".into(),
            to_version: "2.0.0".into(),
            from_versions: vec!["1.0.0".into()],
            clusters: vec![],
            states: vec![],
            tenants: vec!["acme".into()],
        };
        assert_eq!(
            body(&s, "preview"),
            json!({"template": "eks", "to_version": "2.0.0", "mode": "preview",
                "selector": {"from_versions": ["1.0.0"], "tenants": ["acme"]}})
        );
        assert_eq!(stop(&StopFlags::default()), None);
        assert_eq!(
            stop(&StopFlags {
                allow_replace: vec!["module.fleet.aws_subnet.this".into()],
                max_monthly_delta: Some(10.0),
                ..StopFlags::default()
            }),
            Some(
                json!({"allow_replace": ["module.fleet.aws_subnet.this"], "allow_destroy": false,
                        "max_monthly_delta": 10.0})
            )
        );
        assert_eq!(money(&json!(12.5)), "+$12.50");
        assert_eq!(money(&json!(-3)), "-$3.00");
        assert_eq!(money(&Value::Null), "-");
    }
}
