//! `strato audit`: the tenant's audit log (`GET /v1/audit`), page after page up to `--limit` entries.

use serde_json::{Value, json};

use crate::Ctx;
use crate::api::seg;
use crate::args::Audit;
use crate::error::CliError;
use crate::render::{cell, plain, when};

/// The API's largest page.
const PAGE: u32 = 100;

/// The query of one page: the filters, the page size and the previous page's token.
fn path(a: &Audit, page: u32, next: Option<&str>) -> String {
    let mut q = vec![format!("limit={page}")];
    for (name, v) in [("cluster", &a.cluster), ("since", &a.since), ("actor", &a.actor)] {
        if let Some(v) = v {
            q.push(format!("{name}={}", seg(v)));
        }
    }
    if let Some(n) = next {
        q.push(format!("next={}", seg(n)));
    }
    format!("/v1/audit?{}", q.join("&"))
}

/// The outcome (`accepted`, `succeeded`, `cancelled`…), and for a refusal or failure the status when there
/// is one: `refused 403`, `failed 500`.
fn outcome(e: &Value) -> String {
    match (e["outcome"].as_str(), e["status"].as_u64()) {
        (Some("refused" | "failed"), Some(status)) => format!("{} {status}", cell(&e["outcome"])),
        _ => cell(&e["outcome"]),
    }
}

/// The operation, else the cluster the entry is about.
fn target(e: &Value) -> String {
    match (e["cluster_id"].as_str(), e["operation_id"].as_str()) {
        (Some(c), Some(o)) => format!("{} {}", plain(c), plain(o)),
        (Some(c), None) => plain(c),
        (None, Some(o)) => plain(o),
        (None, None) => "-".to_owned(),
    }
}

pub(crate) async fn run(ctx: &Ctx, a: Audit) -> Result<(), CliError> {
    let mut entries: Vec<Value> = Vec::new();
    let mut next: Option<String> = None;
    // A page may hold fewer entries than asked and still have a next: keep going to the limit.
    loop {
        let want = (a.limit - entries.len() as u32).min(PAGE);
        let page = ctx.api.get(&path(&a, want, next.as_deref())).await?;
        entries.extend(page["entries"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().filter(|n| !n.is_empty()).map(str::to_owned);
        if next.is_none() || entries.len() as u32 >= a.limit {
            break;
        }
    }
    entries.truncate(a.limit as usize);
    let v = json!({"entries": entries, "next": next});
    if ctx.out.raw(&v)? {
        return Ok(());
    }
    let out = &ctx.out;
    let mut t = out.table(&["TIME", "ACTOR", "ACTION", "TARGET", "OUTCOME", "REQUEST ID"]);
    for e in &entries {
        t.add_row(vec![
            when(&e["time"]),
            cell(&e["actor"]),
            cell(&e["action"]),
            target(e),
            outcome(e),
            cell(&e["request_id"]),
        ]);
    }
    println!("{t}");
    if next.is_some() {
        eprintln!(
            "{}",
            out.dim("more entries: raise --limit or narrow with --since")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_encoded_into_the_query() {
        let a = Audit {
            cluster: Some("cl-1".into()),
            since: Some("2026-11-25T10:00:00+01:00".into()),
            actor: Some("alice@example.com".into()),
            limit: 50,
        };
        assert_eq!(
            path(&a, 50, Some("ab12")),
            "/v1/audit?limit=50&cluster=cl-1&since=2026-11-25T10%3A00%3A00%2B01%3A00&actor=alice%40example.com&next=ab12"
        );
    }

    #[test]
    fn outcomes_and_targets_read_in_one_cell() {
        let refused = json!({"outcome": "refused", "status": 403, "cluster_id": "cl-1"});
        assert_eq!(outcome(&refused), "refused 403");
        assert_eq!(target(&refused), "cl-1");
        let ok = json!({"outcome": "succeeded", "status": 202, "operation_id": "op-1"});
        assert_eq!(outcome(&ok), "succeeded");
        assert_eq!(target(&ok), "op-1");
        assert_eq!(outcome(&json!({"outcome": "succeeded"})), "succeeded");
        // A request that queued an operation, and the operation's own end.
        assert_eq!(
            outcome(&json!({"outcome": "accepted", "status": 202})),
            "accepted"
        );
        assert_eq!(outcome(&json!({"outcome": "cancelled"})), "cancelled");
        assert_eq!(outcome(&json!({"outcome": "failed"})), "failed");
        assert_eq!(target(&json!({})), "-");
    }
}
