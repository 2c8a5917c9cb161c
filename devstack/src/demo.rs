//! The README's demo: the whole life of a cluster through the HTTP and WebSocket APIs, as a user sees it,
//! ending with the create's timeline and the headline figures of the metrics the functions emitted.

use std::time::{Duration, Instant};

use strato_domain::messages::LogLine;

use crate::client::{Client, DemoError, timeline_lines, watch_operation};

/// How the demo prints, and what it can show.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Steps, states and the summary only; no Terraform log lines (`STRATO_DEMO_QUIET`).
    pub quiet: bool,
    /// The cloud of the step on another cloud, when the stack was readied for it
    /// ([`crate::demo_cloud::prepare`]), or why it was not; `None`: not asked for (the step says so).
    pub other_cloud: Option<Result<&'static crate::demo_cloud::TokenCloud, String>>,
}

/// The README's demo: the whole life of a cluster through the HTTP and WebSocket APIs, as a user sees it.
/// Returns an error (and the binary exits non-zero) unless every step happened.
///
/// Long on purpose: it is the demo's script, each step in the order a user sees it.
pub async fn demo(stack: &crate::Devstack, options: DemoOptions) -> Result<(), DemoError> {
    // 1.1.0, named: the tour shows a cluster's life without the in-cluster agent (1.2.0 installs it, and a
    // machine without the `strato-agent` binary built would see that cluster fail at its agent deadline).
    let template = "aws-eks-basic";
    let Some((_, version)) = stack
        .published
        .iter()
        .find(|(n, v)| n == template && v == "1.1.0")
    else {
        return Err(DemoError::Failed(format!(
            "the template catalog has no '{template}' 1.1.0 (templates/catalog/{template}); the demo needs it"
        )));
    };
    let ws = stack
        .endpoints
        .websocket
        .clone()
        .ok_or_else(|| DemoError::Failed("the stack has no WebSocket API".into()))?;
    let token = stack.token("demo");
    let client = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    let t0 = Instant::now();
    let mut summary: Vec<String> = Vec::new();
    let quiet = options.quiet;
    let show = |l: &LogLine| {
        if !quiet {
            println!("  │ {:>4} {:<16} {}", l.seq, l.step, l.text);
        }
    };
    let state = |cs: &str, os: &str, m: Option<&str>| {
        println!(
            "  ◆ cluster {cs}, operation {os}{}",
            m.map(|m| format!(" — {m}")).unwrap_or_default()
        );
    };

    let dim = {
        use std::io::IsTerminal;
        std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    };
    // The profile `up` writes for a stack with this demo's options (its prefix).
    let profile = crate::cli_profile::profile_name(stack.env.names.prefix(), None);
    let by_hand = |cmd: &str| match dim {
        true => println!("  \x1b[2m$ strato --profile {profile} {cmd}\x1b[0m"),
        false => println!("  $ strato --profile {profile} {cmd}"),
    };
    println!(
        "Each step ends with the `strato` command that does it by hand (against `cargo run -p strato-devstack -- up`\n\
         with the same options, which writes the '{profile}' profile; install the CLI with `cargo install --path cli`).\n"
    );
    println!("▶ 1/6 create cluster 'demo' from {template}@{version} (us-east-1, 2 × t3.medium)");
    let spec = serde_json::json!({
        "name": "demo",
        "template": {"name": template, "version": version},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {"node_count": 2, "node_instance_type": "t3.medium"},
    });
    let (cluster, op, _) = client.create_cluster(&spec).await?;
    println!("  cluster {cluster}\n  operation {op}\n  live Terraform log over WebSocket:");
    let w = watch_operation(&client, &ws, &op, Duration::from_secs(900), show, state).await?;
    let done = client.wait_operation(&op, Duration::from_secs(180)).await?;
    if done["status"] != "succeeded" {
        return Err(DemoError::Failed(format!(
            "the create did not succeed: {}",
            done["error"]
        )));
    }
    summary.push(format!(
        "create: succeeded, {} log lines received, none missing",
        w.last_seq
    ));
    if let Some(e) = done.get("estimate").filter(|e| !e.is_null()) {
        println!(
            "  cost estimate (before apply): {:.2} {}/month",
            e["total_monthly"].as_f64().unwrap_or(0.0),
            e["currency"].as_str().unwrap_or("USD")
        );
        for r in e["resources"].as_array().into_iter().flatten() {
            if let Some(m) = r["monthly"].as_f64().filter(|m| *m > 0.0) {
                println!(
                    "    {:>9.2}  {}  ({})",
                    m,
                    r["address"].as_str().unwrap_or(""),
                    r["note"].as_str().unwrap_or("")
                );
            }
        }
        let unpriced = e["not_estimated"].as_array().map_or(0, Vec::len);
        if unpriced > 0 {
            println!("    + {unpriced} resource(s) not estimated (usage-based or not in the price table)");
        }
        println!(
            "    prices: {} ({})",
            e["price_table_source"].as_str().unwrap_or("?"),
            e["price_table_date"].as_str().unwrap_or("?")
        );
        summary.push(format!(
            "estimate: {:.2} USD/month",
            e["total_monthly"].as_f64().unwrap_or(0.0)
        ));
    } else {
        return Err(DemoError::Failed("the create has no cost estimate".into()));
    }
    by_hand(&format!(
        "clusters create demo -t {template}@{version} --var node_count=2 --var node_instance_type=t3.medium --wait"
    ));

    println!("▶ 2/6 wait for ACTIVE");
    let c = client
        .wait_cluster_state(&cluster, &["ACTIVE", "FAILED"], Duration::from_secs(300))
        .await?;
    if c["state"] != "ACTIVE" {
        return Err(DemoError::Failed(format!(
            "the cluster is {}: {}",
            c["state"], c["last_error"]
        )));
    }
    println!("  outputs:");
    for (k, v) in c["outputs"].as_object().into_iter().flatten() {
        let v = v.to_string();
        let short: String = v.chars().take(72).collect();
        println!(
            "    {k} = {short}{}",
            if short.len() < v.len() { "…" } else { "" }
        );
    }
    summary.push("cluster: ACTIVE with outputs".into());
    by_hand(&format!("clusters get {cluster}"));
    // Connect: what kubectl needs, from the outputs the template names; no credential in it.
    let k = client.get(&format!("/v1/clusters/{cluster}/kubeconfig")).await?;
    if k.status != 200 {
        return Err(DemoError::Failed(format!("no kubeconfig: {}", k.text)));
    }
    println!(
        "  kubeconfig: context {} → {} (tokens: {})",
        k.body["context"].as_str().unwrap_or("?"),
        k.body["endpoint"].as_str().unwrap_or("?"),
        k.body["token_command"].as_str().unwrap_or("?")
    );
    summary.push("kubeconfig: ready".into());
    by_hand("clusters kubeconfig demo --merge");

    println!("▶ 3/6 drift check (plan -refresh-only where the engine has it)");
    let r = client
        .post(
            &format!("/v1/clusters/{cluster}/drift-check"),
            &serde_json::json!({}),
        )
        .await?;
    let check = r.body["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if r.status != 202 || check.is_empty() {
        return Err(DemoError::Failed(format!("drift check refused: {}", r.text)));
    }
    let w = watch_operation(&client, &ws, &check, Duration::from_secs(600), show, state).await?;
    let c = client.get(&format!("/v1/clusters/{cluster}")).await?;
    let drift = &c.body["drift"];
    if w.final_status.as_deref() != Some("succeeded") || drift["checked_at"].is_null() {
        return Err(DemoError::Failed(format!(
            "the drift check ended {:?} and left no result: {drift}",
            w.final_status
        )));
    }
    println!(
        "  drifted: {} (checked {})",
        drift["drifted"], drift["checked_at"]
    );
    summary.push(format!("drift check: drifted = {}", drift["drifted"]));
    by_hand(&format!("clusters drift-check {cluster} --wait"));

    println!("▶ 4/6 delete");
    let r = client.delete(&format!("/v1/clusters/{cluster}")).await?;
    let del = r.body["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if r.status != 202 || del.is_empty() {
        return Err(DemoError::Failed(format!("delete refused: {}", r.text)));
    }
    let w = watch_operation(&client, &ws, &del, Duration::from_secs(900), show, state).await?;
    let c = client
        .wait_cluster_state(&cluster, &["DELETED", "FAILED"], Duration::from_secs(300))
        .await?;
    if c["state"] != "DELETED" {
        return Err(DemoError::Failed(format!(
            "the cluster is {}: {}",
            c["state"], c["last_error"]
        )));
    }
    summary.push(format!("delete: DELETED, {} log lines received", w.last_seq));
    by_hand(&format!(
        "clusters delete {cluster} --wait   (and any time: strato logs {del} -f)"
    ));

    match &options.other_cloud {
        Some(Ok(cloud)) => {
            println!(
                "▶ 5/6 another cloud: a {} cluster from {} (the null provider plays the cloud; its state in your own bucket)",
                cloud.provider, cloud.template
            );
            summary.extend(crate::demo_cloud::tour(stack, "demo", cloud, &by_hand).await?);
        }
        Some(Err(why)) => {
            println!("▶ 5/6 another cloud: SKIPPED — {why}");
            summary.push(format!("another cloud: SKIPPED ({why})"));
        }
        None => {
            println!("▶ 5/6 another cloud: SKIPPED — this stack was not readied for it");
            summary.push("another cloud: SKIPPED (not readied)".into());
        }
    }

    println!("▶ 6/6 summary ({:.0} s)", t0.elapsed().as_secs_f64());
    for s in &summary {
        println!("  ✓ {s}");
    }
    closing_figures(&client, &op).await?;
    by_hand(&format!("operations timeline {op}"));
    Ok(())
}

/// The create's timeline (`GET /v1/operations/{id}/timeline`) and the headline figures of the EMF metrics
/// the functions and runners emitted; an error if either is missing, so the demo proves both work.
async fn closing_figures(client: &Client, create: &str) -> Result<(), DemoError> {
    let timeline = client.operation_timeline(create).await?;
    println!("  timeline of the create:");
    for line in timeline_lines(&timeline) {
        println!("    {line}");
    }
    let moments: Vec<_> = timeline.entries.iter().map(|e| e.event).collect();
    use strato_api::timeline::TimelineEvent as E;
    if ![E::Queued, E::Dispatched, E::RunnerStarted, E::Succeeded]
        .iter()
        .all(|m| moments.contains(m))
    {
        return Err(DemoError::Failed(format!(
            "the create's timeline misses a moment: {moments:?}"
        )));
    }
    let figures = crate::metrics::headline();
    println!("  metrics (from the emitted EMF; all of them at GET /metrics):");
    for line in figures.to_string().lines() {
        println!("    {line}");
    }
    if figures.operations.get("succeeded").copied().unwrap_or(0) < 3 || figures.log_lines_shipped == 0 {
        return Err(DemoError::Failed(format!(
            "the metrics miss the demo's operations: {figures:?}"
        )));
    }
    Ok(())
}
