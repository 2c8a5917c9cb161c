//! One function per verb. Each reads what it needs from the API and prints it for people (tables) or
//! passes the API's answer through (`-o json|yaml`).

mod admin;
mod audit;
mod clusters;
mod health;
mod kubeconfig;
mod operations;
mod preview;
mod rollouts;
mod target;
mod wait;

use std::io::{IsTerminal, Read};

use serde_json::{Value, json};

use crate::Ctx;
use crate::api::{Api, seg};
use crate::args::{self, Command, Global};
use crate::config::{self, Profile};
use crate::error::CliError;
use crate::render::{Out, cell, plain};

/// A cluster given by id (`cl-…`) or by name: a name is looked up among the tenant's clusters
/// (`GET /v1/clusters?name=`, deleted ones left out). No such cluster is exit 4, as a missing id is.
pub(crate) async fn cluster_id(api: &Api, given: &str) -> Result<String, CliError> {
    if given.starts_with("cl-") {
        return Ok(given.to_owned());
    }
    let page = api.get(&format!("/v1/clusters?name={}", seg(given))).await?;
    named_cluster(given, &page)
}

/// The id of the one cluster a name lookup found.
fn named_cluster(name: &str, page: &Value) -> Result<String, CliError> {
    let ids: Vec<&str> = page["clusters"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    match ids.as_slice() {
        [id] => Ok((*id).to_owned()),
        [] => Err(CliError::NotFound(format!(
            "no cluster named {name}: `strato clusters list` shows your clusters (a deleted one only with \
             --include-deleted, and by its id)"
        ))),
        many => Err(CliError::Usage(format!(
            "{} clusters are named {name} ({}): give the id",
            many.len(),
            many.join(", ")
        ))),
    }
}

pub(crate) async fn dispatch(ctx: &Ctx, command: Command) -> Result<(), CliError> {
    match command {
        Command::Templates(t) => templates(ctx, t).await,
        Command::Clusters(c) => clusters::run(ctx, c).await,
        Command::Estimate(e) => clusters::estimate(ctx, e).await,
        Command::Operations(o) => operations::run(ctx, o).await,
        Command::Logs(l) => operations::logs(ctx, l).await,
        Command::Watch(w) => wait::watch(ctx, w).await,
        Command::StateVersions(s) => state_versions(ctx, s).await,
        Command::Webhook(w) => webhook(ctx, w).await,
        Command::Audit(a) => audit::run(ctx, a).await,
        Command::Admin(a) => admin::run(ctx, a).await,
        Command::Rollouts(r) => rollouts::run(ctx, r).await,
        Command::Policies(p) => policies(ctx, p).await,
        Command::TargetAccess { provider } => target::target_access(ctx, provider).await,
        Command::CloudTokens(c) => target::cloud_tokens(ctx, c).await,
        Command::Login(_) | Command::Profiles | Command::Completions { .. } => {
            unreachable!("handled before a profile is resolved")
        }
    }
}

/// Saves the profile; checks the token first (a wrong one is refused here, not at the first real command).
pub(crate) async fn login(g: &Global, l: args::Login) -> Result<(), CliError> {
    let token = match &g.token {
        Some(t) => t.trim().to_owned(),
        None if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| CliError::io(std::path::Path::new("(stdin)"), e))?;
            s.trim().to_owned()
        }
        None => {
            return Err(CliError::Usage(
                "no token: pipe it on stdin (`strato login --endpoint URL < token-file`) or set STRATO_TOKEN"
                    .into(),
            ));
        }
    };
    if token.is_empty() {
        return Err(CliError::Usage("the token is empty".into()));
    }
    let endpoint = g
        .endpoint
        .clone()
        .ok_or_else(|| CliError::Usage("login needs --endpoint URL (the HTTP API)".into()))?;
    if !l.no_verify {
        // Any authenticated read proves the token; templates are what every tenant may list.
        Api::new(&endpoint, Some(token.clone()))?
            .get("/v1/templates")
            .await?;
    }
    let name = g
        .profile
        .clone()
        .unwrap_or_else(|| config::DEFAULT_PROFILE.to_owned());
    let dir = config::config_dir()?;
    let profile = Profile {
        endpoint: endpoint.trim_end_matches('/').to_owned(),
        ws_endpoint: g.ws_endpoint.clone(),
    };
    config::save_profile(&dir, &name, profile, Some(&token), false)?;
    eprintln!(
        "Saved profile '{name}' in {} (token in credentials.toml, mode 0600).",
        dir.display()
    );
    Ok(())
}

pub(crate) fn profiles(out: &Out) -> Result<(), CliError> {
    let (default, profiles) = config::list_profiles()?;
    let v = json!({"default": default, "profiles": profiles});
    if out.raw(&v)? {
        return Ok(());
    }
    let mut t = out.table(&["", "PROFILE", "ENDPOINT", "WEBSOCKET"]);
    for (name, p) in &profiles {
        let mark = if default.as_deref() == Some(name) { "*" } else { "" };
        t.add_row(vec![
            mark,
            name,
            &p.endpoint,
            p.ws_endpoint.as_deref().unwrap_or("-"),
        ]);
    }
    println!("{t}");
    Ok(())
}

async fn templates(ctx: &Ctx, t: args::Templates) -> Result<(), CliError> {
    let out = &ctx.out;
    match t {
        args::Templates::List => {
            let v = ctx.api.get("/v1/templates").await?;
            if out.raw(&v)? {
                return Ok(());
            }
            let mut table = out.table(&["NAME", "LATEST", "PROVIDERS", "DESCRIPTION"]);
            for t in v["templates"].as_array().into_iter().flatten() {
                table.add_row(vec![
                    cell(&t["name"]),
                    cell(&t["version"]),
                    join(&t["providers"]),
                    cell(&t["description"]),
                ]);
            }
            println!("{table}");
        }
        args::Templates::Show { name, version } => {
            let v = template(&ctx.api, &name, version.as_deref()).await?;
            if out.raw(&v)? {
                return Ok(());
            }
            out.fields(&[
                (
                    "template",
                    format!("{}@{}", cell(&v["name"]), cell(&v["version"])),
                ),
                ("description", cell(&v["description"])),
                ("providers", join(&v["providers"])),
                ("versions", join(&v["versions"])),
            ]);
            for (p, d) in v["defaults"].as_object().into_iter().flatten() {
                println!(
                    "{}  region {}",
                    out.dim(&format!("defaults.{p}")),
                    cell(&d["region"])
                );
            }
            let mut table = out.table(&[
                "VARIABLE",
                "TYPE",
                "REQUIRED",
                "DEFAULT",
                "ALLOWED",
                "DESCRIPTION",
            ]);
            for (name, var) in v["variables"].as_object().into_iter().flatten() {
                let mut ty = cell(&var["type"]);
                if var["sensitive"] == json!(true) {
                    ty.push_str(" (sensitive)");
                }
                table.add_row(vec![
                    name.clone(),
                    ty,
                    if var["required"] == json!(true) { "yes" } else { "" }.to_owned(),
                    if var.get("default").is_some() {
                        cell(&var["default"])
                    } else {
                        String::new()
                    },
                    allowed(var),
                    cell(&var["description"]),
                ]);
            }
            println!("{table}");
            for r in v["rules"].as_array().into_iter().flatten() {
                println!("{} {}", out.dim("rule:"), rule(r));
            }
        }
    }
    Ok(())
}

/// `GET /v1/templates/{name}[?version=]`.
pub(crate) async fn template(api: &Api, name: &str, version: Option<&str>) -> Result<Value, CliError> {
    let q = version
        .map(|v| format!("?version={}", seg(v)))
        .unwrap_or_default();
    api.get(&format!("/v1/templates/{}{q}", seg(name))).await
}

/// A variable's limits in one cell: range, length, pattern, choices, catalog.
fn allowed(var: &Value) -> String {
    let mut parts = Vec::new();
    match (
        var.get("min").filter(|v| !v.is_null()),
        var.get("max").filter(|v| !v.is_null()),
    ) {
        (Some(lo), Some(hi)) => parts.push(format!("{}..{}", num(lo), num(hi))),
        (Some(lo), None) => parts.push(format!(">= {}", num(lo))),
        (None, Some(hi)) => parts.push(format!("<= {}", num(hi))),
        (None, None) => {}
    }
    if let Some(n) = var.get("max_length").filter(|v| !v.is_null()) {
        parts.push(format!("≤ {} chars", cell(n)));
    }
    if let Some(p) = var["pattern"].as_str() {
        parts.push(format!("/{p}/"));
    }
    if let Some(e) = var["enum"].as_array() {
        parts.push(format!(
            "one of {}",
            e.iter().map(cell).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(c) = var["catalog"].as_str() {
        parts.push(format!("a provider {c}"));
    }
    parts.join("; ")
}

/// A limit as the user would type it: `2`, not `2.0` (the schema carries limits as JSON numbers).
fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => cell(v),
    }
}

fn rule(r: &Value) -> String {
    match (r["left"].as_str(), r["op"].as_str(), r.get("right")) {
        (Some(l), Some(op), Some(right)) => format!("{} {} {}", plain(l), plain(op), cell(right)),
        _ => plain(&r.to_string()),
    }
}

pub(crate) fn join(v: &Value) -> String {
    v.as_array()
        .map(|a| a.iter().map(cell).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|| cell(v))
}

async fn state_versions(ctx: &Ctx, s: args::StateVersions) -> Result<(), CliError> {
    let out = &ctx.out;
    match s {
        args::StateVersions::List { cluster } => {
            let cluster = cluster_id(&ctx.api, &cluster).await?;
            let v = ctx
                .api
                .get(&format!("/v1/clusters/{}/state-versions", seg(&cluster)))
                .await?;
            if out.raw(&v)? {
                return Ok(());
            }
            let mut t = out.table(&["STAGE", "VERSION", "SIZE", "MODIFIED", "CURRENT"]);
            for sv in v["items"].as_array().into_iter().flatten() {
                t.add_row(vec![
                    cell(&sv["stage"]),
                    cell(&sv["version_id"]),
                    cell(&sv["size"]),
                    crate::render::when(&sv["last_modified"]),
                    if sv["is_latest"] == json!(true) { "*" } else { "" }.to_owned(),
                ]);
            }
            println!("{t}");
            // A state in the tenant's own storage: listed by the last run, which the note names.
            if let Some(note) = v["source"]["note"].as_str() {
                println!("{}", out.dim(note));
            }
            for r in v["restores"].as_array().into_iter().flatten() {
                println!(
                    "{} {} → {} by {} at {}",
                    out.dim("restored:"),
                    cell(&r["from_version"]),
                    cell(&r["new_version"]),
                    cell(&r["restored_by"]),
                    crate::render::when(&r["at"])
                );
            }
        }
        args::StateVersions::Restore {
            cluster,
            version,
            wait,
        } => {
            let cluster = cluster_id(&ctx.api, &cluster).await?;
            let path = format!(
                "/v1/clusters/{}/state-versions/{}/restore",
                seg(&cluster),
                seg(&version)
            );
            let v = ctx.api.post(&path, &json!({})).await?;
            // The customer's own storage: a queued restore-state operation (202).
            if v.get("operation").is_some() {
                return clusters::accepted(ctx, &v, "state restore", &wait).await;
            }
            if !out.raw(&v)? {
                println!(
                    "Restored {} ({}): now current as {}.",
                    cell(&v["from_version"]),
                    cell(&v["stage"]),
                    cell(&v["new_version"])
                );
            }
        }
    }
    Ok(())
}

async fn webhook(ctx: &Ctx, w: args::Webhook) -> Result<(), CliError> {
    let out = &ctx.out;
    let v = match w {
        args::Webhook::Get => ctx.api.get("/v1/webhook").await?,
        args::Webhook::Delete => ctx.api.delete("/v1/webhook").await?,
        args::Webhook::Set {
            url,
            secret_file,
            events,
        } => {
            // A secret never travels in a flag (shell history, `ps`).
            let secret = match secret_file {
                Some(f) => {
                    std::fs::read_to_string(&f).map_err(|e| CliError::io(std::path::Path::new(&f), e))?
                }
                None if !std::io::stdin().is_terminal() => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .map_err(|e| CliError::io(std::path::Path::new("(stdin)"), e))?;
                    s
                }
                None => {
                    return Err(CliError::Usage(
                        "the secret: --secret-file FILE, or pipe it on stdin".into(),
                    ));
                }
            };
            let mut body = json!({"url": url, "secret": secret.trim()});
            let events: Vec<&str> = events
                .iter()
                .map(|e| e.trim())
                .filter(|e| !e.is_empty())
                .collect();
            if !events.is_empty() {
                body["events"] = json!(events);
            }
            ctx.api.put("/v1/webhook", &body).await?
        }
    };
    if !out.raw(&v)? {
        match v.get("url") {
            Some(u) => {
                let events = match v["events"].as_array() {
                    Some(list) => list.iter().map(cell).collect::<Vec<_>>().join(","),
                    None => "all".into(),
                };
                out.fields(&[
                    ("url", cell(u)),
                    ("secret", cell(&v["secret"])),
                    ("events", events),
                ])
            }
            None => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        }
    }
    Ok(())
}

/// Policy names are `[a-z0-9-]` (the API refuses others), so they go in the path as they are.
async fn policies(ctx: &Ctx, p: args::Policies) -> Result<(), CliError> {
    let out = &ctx.out;
    let v = match p {
        args::Policies::List => ctx.api.get("/v1/policies").await?,
        args::Policies::Get { name } => ctx.api.get(&format!("/v1/policies/{name}")).await?,
        args::Policies::Delete { name } => ctx.api.delete(&format!("/v1/policies/{name}")).await?,
        args::Policies::Put { name, file } => {
            let source =
                std::fs::read_to_string(&file).map_err(|e| CliError::io(std::path::Path::new(&file), e))?;
            ctx.api
                .put(&format!("/v1/policies/{name}"), &json!({ "source": source }))
                .await?
        }
    };
    if out.raw(&v)? {
        return Ok(());
    }
    if let Some(list) = v["policies"].as_array() {
        println!("version {}", plain(v["version"].as_str().unwrap_or("")));
        for p in list {
            println!(
                "{:<9} {:<8} {}",
                plain(p["owner"].as_str().unwrap_or("")),
                plain(p["stage"].as_str().unwrap_or("")),
                plain(p["name"].as_str().unwrap_or(""))
            );
        }
    } else if let Some(src) = v["source"].as_str() {
        print!("{}", plain(src));
    } else {
        println!("{}", plain(&serde_json::to_string_pretty(&v).unwrap_or_default()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::named_cluster;
    use crate::error::exit;

    #[test]
    fn a_name_resolves_to_its_one_cluster_and_none_or_several_are_errors() {
        let page =
            |ids: &[&str]| json!({"clusters": ids.iter().map(|i| json!({"id": i})).collect::<Vec<_>>()});
        assert_eq!(named_cluster("demo2", &page(&["cl-1"])).unwrap(), "cl-1");
        let none = named_cluster("demo2", &page(&[])).unwrap_err();
        assert_eq!(none.exit_code(), exit::NOT_FOUND);
        let many = named_cluster("demo2", &page(&["cl-1", "cl-2"])).unwrap_err();
        assert_eq!(many.exit_code(), exit::USAGE);
        assert!(many.to_string().contains("cl-1, cl-2"), "{many}");
    }
}
