//! `strato admin …`: the platform operator's commands over `/v1/admin` — tenants and the clusters of every
//! tenant, as tables like the rest of the CLI (`-o json|yaml`: the API's answers).

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::api::seg;
use crate::args::{Admin, AdminClusters, AdminOperations, AdminTemplates, AdminTenants, TenantSettings};
use crate::error::CliError;
use crate::render::{cell, when};

/// The API's largest page.
const PAGE: u32 = 100;

/// A setting that takes `none` (back to the platform default: JSON null) or a number.
fn number_or_none(flag: &str, v: &str) -> Result<Value, CliError> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(Value::Null);
    }
    v.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .and_then(|n| {
            // Whole numbers go as integers (the API reads hours and quotas as integers).
            if n.fract() == 0.0 && n.abs() < 1e15 {
                Some(json!(n as i64))
            } else {
                serde_json::Number::from_f64(n).map(Value::Number)
            }
        })
        .ok_or_else(|| CliError::Usage(format!("--{flag} must be a number or 'none', not '{v}'")))
}

/// The request body of the settings given (each left out is left out: unchanged).
pub(crate) fn settings_body(s: &TenantSettings) -> Result<Map<String, Value>, CliError> {
    let mut body = Map::new();
    for (name, v) in [
        ("max_clusters", s.max_clusters),
        ("max_open_operations", s.max_open_operations),
        ("max_concurrent_operations", s.max_concurrent_operations),
    ] {
        if let Some(v) = v {
            body.insert(name.into(), json!(v));
        }
    }
    if let Some(b) = &s.monthly_budget {
        body.insert("monthly_budget".into(), number_or_none("monthly-budget", b)?);
    }
    if let Some(h) = &s.max_ttl_hours {
        body.insert("max_ttl_hours".into(), number_or_none("max-ttl-hours", h)?);
    }
    if let Some(a) = &s.approval {
        let v = if a.eq_ignore_ascii_case("none") {
            Value::Null
        } else {
            json!(a.to_ascii_lowercase())
        };
        body.insert("approval".into(), v);
    }
    Ok(body)
}

/// `base` with the filters given, a page size and the previous page's token.
fn filtered_path(base: &str, filters: &[(&str, &Option<String>)], page: u32, next: Option<&str>) -> String {
    let mut q = vec![format!("limit={page}")];
    for (name, v) in filters {
        if let Some(v) = v {
            q.push(format!("{name}={}", seg(v)));
        }
    }
    if let Some(n) = next {
        q.push(format!("next={}", seg(n)));
    }
    format!("{base}?{}", q.join("&"))
}

/// `/v1/admin/clusters` with the filters, a page size and the previous page's token.
pub(crate) fn clusters_path(a: &AdminClusters, page: u32, next: Option<&str>) -> String {
    let filters = [
        ("tenant", &a.tenant),
        ("state", &a.state),
        ("template", &a.template),
        ("version", &a.version),
    ];
    filtered_path("/v1/admin/clusters", &filters, page, next)
}

/// `/v1/admin/operations` with the filters, a page size and the previous page's token.
pub(crate) fn operations_path(a: &AdminOperations, page: u32, next: Option<&str>) -> String {
    let filters = [
        ("tenant", &a.tenant),
        ("cluster", &a.cluster),
        ("kind", &a.kind),
        ("status", &a.status),
    ];
    filtered_path("/v1/admin/operations", &filters, page, next)
}

/// Pages of a listing (`key` holds a page's items) until `limit` items or the end; a page may hold fewer
/// than asked and still have a next.
async fn pages(
    ctx: &Ctx,
    key: &str,
    limit: u32,
    path: impl Fn(u32, Option<&str>) -> String,
) -> Result<(Vec<Value>, bool), CliError> {
    let mut items: Vec<Value> = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let want = (limit - items.len() as u32).min(PAGE);
        let page = ctx.api.get(&path(want, next.as_deref())).await?;
        items.extend(page[key].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().filter(|n| !n.is_empty()).map(str::to_owned);
        if next.is_none() || items.len() as u32 >= limit {
            break;
        }
    }
    items.truncate(limit as usize);
    Ok((items, next.is_some()))
}

fn budget(t: &Value) -> String {
    t["monthly_budget"]
        .as_f64()
        .map_or_else(|| "-".to_owned(), |b| format!("${b:.2}/month"))
}

fn tenant_status(t: &Value) -> String {
    if t["suspended"].as_bool() == Some(true) {
        format!("suspended: {}", cell(&t["suspended_reason"]))
    } else {
        "active".to_owned()
    }
}

fn show_tenant(ctx: &Ctx, t: &Value) -> Result<(), CliError> {
    if ctx.out.raw(t)? {
        return Ok(());
    }
    let usage = |used: &str, max: &str| format!("{} of {}", cell(&t[used]), cell(&t[max]));
    ctx.out.fields(&[
        ("tenant", cell(&t["id"])),
        ("status", tenant_status(t)),
        ("clusters", usage("cluster_count", "max_clusters")),
        ("open operations", usage("open_operations", "max_open_operations")),
        ("concurrent operations", cell(&t["max_concurrent_operations"])),
        ("monthly budget", budget(t)),
        ("approval default", cell(&t["approval"])),
        ("max lifetime (hours)", cell(&t["max_ttl_hours"])),
        ("registered", when(&t["created_at"])),
    ]);
    Ok(())
}

async fn tenants(ctx: &Ctx, t: AdminTenants) -> Result<(), CliError> {
    let one = |id: &str| format!("/v1/admin/tenants/{}", seg(id));
    match t {
        AdminTenants::List { limit } => {
            let (tenants, more) = pages(ctx, "tenants", limit, |n, next| match next {
                Some(k) => format!("/v1/admin/tenants?limit={n}&next={}", seg(k)),
                None => format!("/v1/admin/tenants?limit={n}"),
            })
            .await?;
            if ctx.out.raw(&json!({"tenants": tenants}))? {
                return Ok(());
            }
            let mut table = ctx.out.table(&[
                "TENANT",
                "STATUS",
                "CLUSTERS",
                "OPEN OPS",
                "BUDGET",
                "APPROVAL",
                "MAX TTL H",
            ]);
            for t in &tenants {
                table.add_row(vec![
                    cell(&t["id"]),
                    tenant_status(t),
                    format!("{}/{}", cell(&t["cluster_count"]), cell(&t["max_clusters"])),
                    format!(
                        "{}/{}",
                        cell(&t["open_operations"]),
                        cell(&t["max_open_operations"])
                    ),
                    budget(t),
                    cell(&t["approval"]),
                    cell(&t["max_ttl_hours"]),
                ]);
            }
            println!("{table}");
            if more {
                eprintln!("{}", ctx.out.dim("more tenants: raise --limit"));
            }
            Ok(())
        }
        AdminTenants::Get { tenant } => show_tenant(ctx, &ctx.api.get(&one(&tenant)).await?),
        AdminTenants::Create { id, settings } => {
            let mut body = settings_body(&settings)?;
            body.insert("id".into(), json!(id));
            show_tenant(
                ctx,
                &ctx.api.post("/v1/admin/tenants", &Value::Object(body)).await?,
            )
        }
        AdminTenants::Set { tenant, settings } => {
            let body = settings_body(&settings)?;
            if body.is_empty() {
                return Err(CliError::Usage(
                    "nothing to set: give --max-clusters, --monthly-budget, --approval, --max-ttl-hours…"
                        .into(),
                ));
            }
            show_tenant(ctx, &ctx.api.patch(&one(&tenant), &Value::Object(body)).await?)
        }
        AdminTenants::Suspend { tenant, reason } => {
            let body = json!({"suspended": true, "reason": reason});
            show_tenant(ctx, &ctx.api.patch(&one(&tenant), &body).await?)
        }
        AdminTenants::Resume { tenant } => show_tenant(
            ctx,
            &ctx.api.patch(&one(&tenant), &json!({"suspended": false})).await?,
        ),
    }
}

async fn clusters(ctx: &Ctx, a: AdminClusters) -> Result<(), CliError> {
    let (clusters, more) = pages(ctx, "clusters", a.limit, |n, next| clusters_path(&a, n, next)).await?;
    if ctx.out.raw(&json!({"clusters": clusters}))? {
        return Ok(());
    }
    let mut table = ctx
        .out
        .table(&["TENANT", "NAME", "STATE", "TEMPLATE", "REGION", "UPDATED", "ID"]);
    for c in &clusters {
        table.add_row(vec![
            cell(&c["tenant"]),
            cell(&c["name"]),
            ctx.out.state(c["state"].as_str().unwrap_or("-")),
            format!(
                "{}@{}",
                cell(&c["template"]["name"]),
                cell(&c["template"]["version"])
            ),
            format!("{} {}", cell(&c["provider"]), cell(&c["region"])),
            when(&c["updated_at"]),
            cell(&c["id"]),
        ]);
    }
    println!("{table}");
    if more {
        eprintln!(
            "{}",
            ctx.out
                .dim("more clusters: raise --limit or narrow with --tenant, --state, --template")
        );
    }
    Ok(())
}

async fn operations(ctx: &Ctx, a: AdminOperations) -> Result<(), CliError> {
    let (operations, more) =
        pages(ctx, "operations", a.limit, |n, next| operations_path(&a, n, next)).await?;
    if ctx.out.raw(&json!({"operations": operations}))? {
        return Ok(());
    }
    let mut table = ctx.out.table(&[
        "TENANT", "CLUSTER", "KIND", "STATUS", "STEP", "WHY", "UPDATED", "ID",
    ]);
    for o in &operations {
        // Why it failed (what, at which step) or why it waits; nothing while it runs.
        let why = if o["error"].is_object() {
            cell(&o["error"]["what"])
        } else {
            cell(&o["wait_reason"])
        };
        table.add_row(vec![
            cell(&o["tenant"]),
            cell(&o["cluster_id"]),
            cell(&o["kind"]),
            ctx.out.state(o["status"].as_str().unwrap_or("-")),
            cell(&o["current_step"]),
            why,
            when(&o["updated_at"]),
            cell(&o["id"]),
        ]);
    }
    println!("{table}");
    if more {
        eprintln!(
            "{}",
            ctx.out
                .dim("more operations: raise --limit or narrow with --tenant, --cluster, --kind, --status")
        );
    }
    Ok(())
}

/// `/v1/admin/templates/{name}/versions/{version}[/action]`.
pub(crate) fn version_path(name: &str, version: &str, action: Option<&str>) -> String {
    let base = format!("/v1/admin/templates/{}/versions/{}", seg(name), seg(version));
    action.map_or(base.clone(), |a| format!("{base}/{a}"))
}

/// Deprecates or yanks a version (`action`), with its reason, and shows its new standing.
async fn standing(
    ctx: &Ctx,
    name: &str,
    version: &str,
    action: &str,
    reason: Option<&str>,
) -> Result<(), CliError> {
    let body = json!({"reason": reason});
    let v = ctx
        .api
        .post(&version_path(name, version, Some(action)), &body)
        .await?;
    show_version(ctx, name, &v)
}

fn show_version(ctx: &Ctx, name: &str, v: &Value) -> Result<(), CliError> {
    if ctx.out.raw(v)? {
        return Ok(());
    }
    ctx.out.fields(&[
        ("template", format!("{name}@{}", cell(&v["version"]))),
        ("standing", cell(&v["standing"])),
        ("reason", cell(&v["reason"])),
        ("by", cell(&v["by"])),
        ("at", when(&v["at"])),
        ("sha256", cell(&v["sha256"])),
    ]);
    Ok(())
}

async fn templates(ctx: &Ctx, t: AdminTemplates) -> Result<(), CliError> {
    match t {
        AdminTemplates::List => {
            let all = ctx.api.get("/v1/admin/templates").await?;
            if ctx.out.raw(&all)? {
                return Ok(());
            }
            let mut table = ctx
                .out
                .table(&["TEMPLATE", "VERSION", "STANDING", "REASON", "BY", "AT"]);
            for t in all["templates"].as_array().into_iter().flatten() {
                for v in t["versions"].as_array().into_iter().flatten() {
                    table.add_row(vec![
                        cell(&t["name"]),
                        cell(&v["version"]),
                        cell(&v["standing"]),
                        cell(&v["reason"]),
                        cell(&v["by"]),
                        when(&v["at"]),
                    ]);
                }
            }
            println!("{table}");
            Ok(())
        }
        AdminTemplates::Publish { dir, modules } => {
            let modules = modules.unwrap_or_else(|| dir.join("../../modules"));
            let bundle = strato_terraform::bundle::pack(&dir, &modules)
                .map_err(|e| CliError::Usage(format!("{}: {e}", dir.display())))?;
            let v = ctx.api.publish_template(&bundle).await?;
            show_version(ctx, bundle.template.name(), &v)
        }
        AdminTemplates::Deprecate {
            name,
            version,
            reason,
        } => standing(ctx, &name, &version, "deprecate", reason.as_deref()).await,
        AdminTemplates::Yank {
            name,
            version,
            reason,
        } => standing(ctx, &name, &version, "yank", Some(&reason)).await,
    }
}

pub(crate) async fn run(ctx: &Ctx, a: Admin) -> Result<(), CliError> {
    match a {
        Admin::Tenants(t) => tenants(ctx, t).await,
        Admin::Clusters(c) => clusters(ctx, c).await,
        Admin::Operations(o) => operations(ctx, o).await,
        Admin::Templates(t) => templates(ctx, t).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_left_out_stay_out_and_none_is_null() {
        let s = TenantSettings {
            max_clusters: Some(3),
            monthly_budget: Some("none".into()),
            max_ttl_hours: Some("48".into()),
            approval: Some("Required".into()),
            ..Default::default()
        };
        assert_eq!(
            Value::Object(settings_body(&s).unwrap()),
            json!({"max_clusters": 3, "monthly_budget": null, "max_ttl_hours": 48, "approval": "required"})
        );
        let budget = TenantSettings {
            monthly_budget: Some("120.5".into()),
            ..Default::default()
        };
        assert_eq!(settings_body(&budget).unwrap()["monthly_budget"], json!(120.5));
        assert!(settings_body(&TenantSettings::default()).unwrap().is_empty());
        let bad = TenantSettings {
            max_ttl_hours: Some("forever".into()),
            ..Default::default()
        };
        assert!(matches!(settings_body(&bad), Err(CliError::Usage(m)) if m.contains("--max-ttl-hours")));
    }

    #[test]
    fn a_versions_path_names_the_template_version_and_action() {
        assert_eq!(
            version_path("aws-eks-basic", "1.2.0", Some("yank")),
            "/v1/admin/templates/aws-eks-basic/versions/1.2.0/yank"
        );
        assert_eq!(
            version_path("aws-eks-basic", "1.2.0", None),
            "/v1/admin/templates/aws-eks-basic/versions/1.2.0"
        );
    }

    #[test]
    fn cluster_filters_are_encoded_into_the_query() {
        let a = AdminClusters {
            tenant: Some("acme".into()),
            state: Some("active".into()),
            template: Some("aws-eks-basic".into()),
            version: Some("1.2.0".into()),
            limit: 10,
        };
        assert_eq!(
            clusters_path(&a, 10, Some("ab12")),
            "/v1/admin/clusters?limit=10&tenant=acme&state=active&template=aws-eks-basic&version=1.2.0&next=ab12"
        );
        let o = AdminOperations {
            tenant: None,
            cluster: Some("cl-1".into()),
            kind: Some("drift-check".into()),
            status: Some("failed".into()),
            limit: 5,
        };
        assert_eq!(
            operations_path(&o, 5, None),
            "/v1/admin/operations?limit=5&cluster=cl-1&kind=drift-check&status=failed"
        );
    }
}
