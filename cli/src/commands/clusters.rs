//! `strato clusters …` and `strato estimate`.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::{Map, Value, json};

use super::operations::print_estimate;
use super::wait::finish;
use super::{cluster_id, join, template};
use crate::Ctx;
use crate::api::seg;
use crate::args::{self, Clusters, SpecArgs, WaitArgs};
use crate::error::CliError;
use crate::render::{cell, clipped, plain, user_error, when};
use crate::vars;

pub(crate) async fn run(ctx: &Ctx, c: Clusters) -> Result<(), CliError> {
    match c {
        Clusters::List {
            state,
            all,
            include_deleted,
        } => list(ctx, state, all, include_deleted).await,
        Clusters::Get { id } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let v = ctx.api.get(&format!("/v1/clusters/{}", seg(&id))).await?;
            if !ctx.out.raw(&v)? {
                show_cluster(ctx, &v);
            }
            Ok(())
        }
        Clusters::Create {
            name,
            spec,
            drift_policy,
            drift_interval_hours,
            expiry,
            wait,
        } => {
            let mut body = spec_body(ctx, &spec).await?;
            body.insert("name".into(), json!(name));
            for (k, v) in expiry.members() {
                body.insert(k.into(), v);
            }
            if drift_policy.is_some() || drift_interval_hours.is_some() {
                body.insert(
                    "drift".into(),
                    json!({"policy": drift_policy, "interval_hours": drift_interval_hours}),
                );
            }
            let v = ctx.api.post("/v1/clusters", &Value::Object(body)).await?;
            accepted(ctx, &v, "create", &wait).await
        }
        Clusters::Update {
            id,
            vars,
            template_version,
            plan_only,
            expiry,
            wait,
        } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let path = format!("/v1/clusters/{}", seg(&id));
            let cluster = ctx.api.get(&path).await?;
            let t = &cluster["template"];
            let version = template_version.as_deref().or(t["version"].as_str());
            let schema = template(&ctx.api, t["name"].as_str().unwrap_or_default(), version)
                .await
                .map(|t| t["variables"].clone())
                .unwrap_or(Value::Null);
            let variables = vars::collect(&vars.var_files, &vars.vars, &schema)?;
            let mut body = Map::new();
            if !variables.is_empty() {
                body.insert("variables".into(), Value::Object(variables));
            }
            if let Some(v) = template_version {
                body.insert("template_version".into(), json!(v));
            }
            let spec_change = !body.is_empty();
            for (k, v) in expiry.members() {
                body.insert(k.into(), v);
            }
            if plan_only && !spec_change {
                return Err(CliError::Usage(
                    "nothing to preview: give --var, --var-file or --template-version (a preview plans those)".into(),
                ));
            }
            if plan_only {
                // Settings given too reach the API, which names each one it cannot preview.
                return super::preview::run(ctx, &id, body, &wait).await;
            }
            if body.is_empty() {
                return Err(CliError::Usage(
                    "nothing to change: give --var, --var-file, --template-version, --expires-at, --ttl-hours or --approval"
                        .into(),
                ));
            }
            let v = ctx.api.patch(&path, &Value::Object(body)).await?;
            if !spec_change {
                // An expiry or approval mode alone changes the cluster, no operation (200 with the cluster).
                if !ctx.out.raw(&v)? {
                    show_cluster(ctx, &v);
                }
                return Ok(());
            }
            accepted(ctx, &v, "update", &wait).await
        }
        Clusters::Delete { id, yes, wait } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            match confirmation(yes, terminal) {
                Confirmation::Proceed => {}
                Confirmation::Refuse => {
                    return Err(CliError::NotConfirmed(format!(
                        "not deleting {id}: no terminal to confirm on; add --yes (-y) to delete without asking"
                    )));
                }
                Confirmation::Ask => {
                    let c = ctx.api.get(&format!("/v1/clusters/{}", seg(&id))).await?;
                    let question = format!("Delete cluster {} ({id})? [y/N] ", cell(&c["name"]));
                    if !confirmed(&ask(&question)?) {
                        return Err(CliError::NotConfirmed(format!("{id} not deleted")));
                    }
                }
            }
            let v = ctx.api.delete(&format!("/v1/clusters/{}", seg(&id))).await?;
            accepted(ctx, &v, "delete", &wait).await
        }
        Clusters::Retry { id, wait } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let v = ctx
                .api
                .post(&format!("/v1/clusters/{}/retry", seg(&id)), &json!({}))
                .await?;
            accepted(ctx, &v, "retry", &wait).await
        }
        Clusters::DriftCheck { id, wait } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let v = ctx
                .api
                .post(&format!("/v1/clusters/{}/drift-check", seg(&id)), &json!({}))
                .await?;
            accepted(ctx, &v, "drift check", &wait).await
        }
        Clusters::Drift {
            id,
            policy,
            interval_hours,
        } => {
            let id = cluster_id(&ctx.api, &id).await?;
            let path = format!("/v1/clusters/{}", seg(&id));
            let v = if policy.is_none() && interval_hours.is_none() {
                ctx.api.get(&path).await?
            } else {
                let mut drift = Map::new();
                if let Some(p) = policy {
                    drift.insert("policy".into(), json!(p));
                }
                if let Some(h) = interval_hours {
                    drift.insert("interval_hours".into(), json!(h));
                }
                ctx.api.patch(&path, &json!({"drift": drift})).await?
            };
            if !ctx.out.raw(&v)? {
                let cluster = if v.get("cluster").is_some() {
                    &v["cluster"]
                } else {
                    &v
                };
                drift_lines(ctx, &cluster["drift"]);
            }
            Ok(())
        }
        Clusters::Kubeconfig {
            id,
            merge,
            kubeconfig,
            role_arn,
            aws_profile,
            context,
        } => {
            let asked = super::kubeconfig::Asked {
                role_arn,
                aws_profile,
                context,
            };
            let file = merge.then_some(kubeconfig);
            super::kubeconfig::run(ctx, &id, &asked, file).await
        }
    }
}

/// What an empty listing prints.
fn no_clusters(state: Option<&str>, include_deleted: bool) -> String {
    match state {
        Some(s) => format!("no clusters in state {}", s.to_ascii_uppercase()),
        None if include_deleted => "no clusters".to_owned(),
        None => "no clusters (deleted ones are listed with --include-deleted)".to_owned(),
    }
}

async fn list(ctx: &Ctx, state: Option<String>, all: bool, include_deleted: bool) -> Result<(), CliError> {
    let mut clusters = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let mut q = vec![];
        if let Some(s) = &state {
            q.push(format!("state={}", seg(s)));
        }
        if include_deleted {
            q.push("include_deleted=true".to_owned());
        }
        if let Some(n) = &next {
            q.push(format!("next={}", seg(n)));
        }
        let path = if q.is_empty() {
            "/v1/clusters".to_owned()
        } else {
            format!("/v1/clusters?{}", q.join("&"))
        };
        let page = ctx.api.get(&path).await?;
        clusters.extend(page["clusters"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().filter(|n| !n.is_empty()).map(str::to_owned);
        if !all || next.is_none() {
            break;
        }
    }
    let v = json!({"clusters": clusters, "next": next});
    if ctx.out.raw(&v)? {
        return Ok(());
    }
    let out = &ctx.out;
    if clusters.is_empty() {
        // An empty table says nothing; this says what was looked for.
        println!("{}", no_clusters(state.as_deref(), include_deleted));
        return Ok(());
    }
    let mut t = out.table(&[
        "ID",
        "NAME",
        "STATE",
        "TEMPLATE",
        "REGION",
        "LAST OPERATION",
        "UPDATED",
        "EXPIRES",
    ]);
    for c in &clusters {
        t.add_row(vec![
            cell(&c["id"]),
            cell(&c["name"]),
            format!(
                "{}{}",
                out.state(c["state"].as_str().unwrap_or("?")),
                super::health::marker(out, &c["health"])
            ),
            format!(
                "{}@{}",
                cell(&c["template"]["name"]),
                cell(&c["template"]["version"])
            ),
            cell(&c["region"]),
            last_operation(&c["last_operation"]),
            when(&c["updated_at"]),
            expires(&c["expires_at"]),
        ]);
    }
    println!("{t}");
    if next.is_some() {
        eprintln!("{}", out.dim("more clusters: --all lists every page"));
    }
    Ok(())
}

/// `delete succeeded (op-…)`, or `-` for none.
fn last_operation(op: &Value) -> String {
    if op.is_null() {
        return "-".into();
    }
    format!(
        "{} {} ({})",
        cell(&op["kind"]),
        cell(&op["status"]),
        cell(&op["id"])
    )
}

/// A cluster's expiry as shown: `never` when it has none.
fn expires(v: &Value) -> String {
    if v.is_null() { "never".into() } else { when(v) }
}

pub(crate) fn show_cluster(ctx: &Ctx, c: &Value) {
    let out = &ctx.out;
    out.fields(&[
        ("id", cell(&c["id"])),
        ("name", cell(&c["name"])),
        ("state", out.state(c["state"].as_str().unwrap_or("?"))),
        (
            "template",
            format!(
                "{}@{}",
                cell(&c["template"]["name"]),
                cell(&c["template"]["version"])
            ),
        ),
        (
            "provider",
            format!("{} {}", cell(&c["provider"]), cell(&c["region"])),
        ),
        ("last operation", last_operation(&c["last_operation"])),
        ("created", when(&c["created_at"])),
        ("updated", when(&c["updated_at"])),
        ("expires", expires(&c["expires_at"])),
        (
            "approval",
            plain(c["approval"].as_str().unwrap_or("default (template or tenant)")),
        ),
        ("version", cell(&c["version"])),
    ]);
    for line in super::health::lines(out, &c["health"]) {
        println!("{line}");
    }
    for line in user_error(out, &c["last_error"]) {
        println!("{line}");
    }
    for (title, key) in [("VARIABLE", "variables"), ("OUTPUT", "outputs")] {
        let Some(m) = c[key].as_object().filter(|m| !m.is_empty()) else {
            continue;
        };
        let mut t = out.table(&[title, "VALUE"]);
        for (k, v) in m {
            t.add_row(vec![plain(k), clipped(v, 100)]);
        }
        println!("{t}");
    }
    drift_lines(ctx, &c["drift"]);
}

fn drift_lines(ctx: &Ctx, d: &Value) {
    let out = &ctx.out;
    let found = if d["drifted"] == json!(true) {
        out.paint("drifted", crate::error::YELLOW)
    } else if d["checked_at"].is_null() {
        "not checked yet".to_owned()
    } else {
        "no drift".to_owned()
    };
    println!(
        "{}  {found} (policy {}, every {} h, last check {})",
        out.dim("drift"),
        cell(&d["policy"]),
        cell(&d["interval_hours"]),
        when(&d["checked_at"])
    );
    for r in d["changed_resources"].as_array().into_iter().flatten() {
        println!("  {} {}", join(&r["actions"]), cell(&r["address"]));
    }
}

/// The request body of a create or an estimate: template at a version (the latest when not given),
/// provider and region from the template when it has one obvious choice, variables typed by its schema.
async fn spec_body(ctx: &Ctx, spec: &SpecArgs) -> Result<Map<String, Value>, CliError> {
    let (name, version) = match spec.template.split_once('@') {
        Some((n, v)) => (n, Some(v)),
        None => (spec.template.as_str(), None),
    };
    let t = template(&ctx.api, name, version).await?;
    let provider = match &spec.provider {
        Some(p) => p.clone(),
        None => match t["providers"].as_array().map(Vec::as_slice) {
            Some([only]) => cell(only),
            _ => {
                return Err(CliError::Usage(format!(
                    "--provider: {name} supports {}; choose one",
                    join(&t["providers"])
                )));
            }
        },
    };
    let region = match &spec.region {
        Some(r) => r.clone(),
        None => t["defaults"][&provider]["region"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                CliError::Usage(format!("--region: {name} has no default region for {provider}"))
            })?,
    };
    let variables = vars::collect(&spec.vars.var_files, &spec.vars.vars, &t["variables"])?;
    let mut body = Map::new();
    body.insert("template".into(), json!({"name": name, "version": t["version"]}));
    body.insert("provider".into(), json!(provider));
    body.insert("region".into(), json!(region));
    body.insert("variables".into(), Value::Object(variables));
    if let Some(target) = super::target::target_body(&spec.target, &provider, super::target::read_file)? {
        body.insert("target".into(), target);
    }
    Ok(body)
}

/// A 202 `{cluster, operation}`: print what was queued, then follow it with `--wait`.
pub(crate) async fn accepted(ctx: &Ctx, v: &Value, what: &str, wait: &WaitArgs) -> Result<(), CliError> {
    let op = v["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if !wait.wait {
        if !ctx.out.raw(v)? {
            println!(
                "{} {what} queued for cluster {} ({}): operation {op}",
                ctx.out.bold("✓"),
                cell(&v["cluster"]["id"]),
                cell(&v["cluster"]["name"]),
            );
            println!("{}", ctx.out.dim(&format!("follow it: strato logs {op} -f")));
        }
        return Ok(());
    }
    if !ctx.out.machine() {
        println!(
            "{what} of cluster {} ({}) queued: operation {op}",
            cell(&v["cluster"]["id"]),
            cell(&v["cluster"]["name"])
        );
    }
    finish(ctx, &op, wait).await
}

pub(crate) async fn estimate(ctx: &Ctx, e: args::Estimate) -> Result<(), CliError> {
    let body = spec_body(ctx, &e.spec).await?;
    let v = ctx.api.post("/v1/estimates", &Value::Object(body)).await?;
    let op = v["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if e.no_wait {
        if !ctx.out.raw(&v)? {
            println!("estimate queued: operation {op} (strato operations get {op})");
        }
        return Ok(());
    }
    let wait = WaitArgs {
        wait: true,
        timeout_minutes: 30,
        quiet: true,
    };
    finish(ctx, &op, &wait).await?;
    if !ctx.out.machine() {
        let o = ctx.api.get(&format!("/v1/operations/{}", seg(&op))).await?;
        print_estimate(ctx, &o["estimate"]);
    }
    Ok(())
}

/// What a delete does before its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confirmation {
    Proceed,
    /// Ask on the terminal; proceed only on `y` or `yes`.
    Ask,
    /// No terminal to ask on and no `--yes`: a script must say it means it.
    Refuse,
}

/// `--yes` skips the question; a terminal (stdin and stderr) is asked; anything else is refused.
fn confirmation(yes: bool, terminal: bool) -> Confirmation {
    match (yes, terminal) {
        (true, _) => Confirmation::Proceed,
        (false, true) => Confirmation::Ask,
        (false, false) => Confirmation::Refuse,
    }
}

/// `y` or `yes` in any case; anything else (Enter included) is no.
fn confirmed(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Prints `question` on stderr (stdout may be piped) and reads one line of stdin.
fn ask(question: &str) -> Result<String, CliError> {
    let stdin = std::path::Path::new("(stdin)");
    eprint!("{}", plain(question));
    std::io::stderr().flush().map_err(|e| CliError::io(stdin, e))?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::io(stdin, e))?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::{Confirmation, confirmation, confirmed};

    #[test]
    fn a_delete_asks_on_a_terminal_and_refuses_without_one_unless_yes() {
        assert_eq!(confirmation(false, true), Confirmation::Ask);
        assert_eq!(confirmation(false, false), Confirmation::Refuse);
        assert_eq!(confirmation(true, true), Confirmation::Proceed);
        assert_eq!(confirmation(true, false), Confirmation::Proceed);
        for yes in ["y", "Y", "yes", "YES\n", " yes "] {
            assert!(confirmed(yes), "{yes:?}");
        }
        for no in ["", "\n", "n", "no", "yep", "y es", "oui"] {
            assert!(!confirmed(no), "{no:?}");
        }
    }
}
