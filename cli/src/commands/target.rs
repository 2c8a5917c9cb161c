//! Your own cloud account: the `target` of `clusters create`/`estimate` built from a file or flags,
//! `strato target-access` (what each cloud needs to trust Strato's runs) and `strato cloud-tokens`.

use std::io::{BufRead, IsTerminal, Read, Write};

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::api::seg;
use crate::args::{CloudTokens, TargetArgs};
use crate::error::CliError;
use crate::render::{cell, plain, when};

const CLOUDS: [&str; 5] = ["aws", "gcp", "azure", "digitalocean", "linode"];
/// Clouds whose engine credentials are the tenant's API token (no federation).
const TOKEN_CLOUDS: [&str; 2] = ["digitalocean", "linode"];

/// The given target flags: (flag, request member, value, the clouds it belongs to).
fn given(t: &TargetArgs) -> Vec<(&'static str, &'static str, &str, &'static [&'static str])> {
    const STATE: &[&str] = &["aws", "gcp", "digitalocean", "linode"];
    let all: [(&str, &str, &Option<String>, &[&str]); 11] = [
        ("--target-role-arn", "role_arn", &t.target_role_arn, &["aws"]),
        (
            "--target-state-bucket",
            "state_bucket",
            &t.target_state_bucket,
            STATE,
        ),
        (
            "--target-lock-table",
            "lock_table",
            &t.target_lock_table,
            &["aws"],
        ),
        (
            "--target-region",
            "region",
            &t.target_region,
            &["aws", "digitalocean", "linode"],
        ),
        ("--gcp-project", "project_id", &t.gcp_project, &["gcp"]),
        (
            "--gcp-provider",
            "workload_identity_provider",
            &t.gcp_provider,
            &["gcp"],
        ),
        (
            "--gcp-service-account",
            "service_account",
            &t.gcp_service_account,
            &["gcp"],
        ),
        ("--azure-tenant", "tenant_id", &t.azure_tenant, &["azure"]),
        ("--azure-client", "client_id", &t.azure_client, &["azure"]),
        (
            "--azure-subscription",
            "subscription_id",
            &t.azure_subscription,
            &["azure"],
        ),
        // Listed last so that a file is refused with the flags named above it.
        ("--target-file", "", &t.target_file, &CLOUDS),
    ];
    all.into_iter()
        .filter_map(|(flag, member, v, clouds)| v.as_deref().map(|v| (flag, member, v, clouds)))
        .collect()
}

/// The request's `target` for a cluster on `provider`, from `--target-file` (read with `read`) or the
/// flags; `None` when none is asked for. DigitalOcean and Linode always get one (`{provider}` at least:
/// their runs use the token you registered), so such a cluster needs no target flag. The API checks the
/// values; this only refuses what cannot be a request (another cloud's flag, a file that is not an object).
pub(crate) fn target_body(
    t: &TargetArgs,
    provider: &str,
    read: impl FnOnce(&str) -> Result<String, CliError>,
) -> Result<Option<Value>, CliError> {
    let flags = given(t);
    if let Some(file) = &t.target_file {
        if let Some((flag, ..)) = flags.iter().find(|(f, ..)| *f != "--target-file") {
            return Err(CliError::Usage(format!(
                "--target-file holds the whole target: give {flag}'s value in it instead"
            )));
        }
        let text = read(file)?;
        let Ok(Value::Object(mut target)) = serde_json::from_str::<Value>(&text) else {
            return Err(CliError::Usage(format!(
                "--target-file {file}: not a JSON object (the request's target, e.g. {{\"provider\": \"gcp\", \
                 \"project_id\": …}})"
            )));
        };
        target.entry("provider").or_insert_with(|| json!(provider));
        return Ok(Some(Value::Object(target)));
    }
    if let Some((flag, _, _, clouds)) = flags.iter().find(|(.., clouds)| !clouds.contains(&provider)) {
        return Err(CliError::Usage(format!(
            "{flag} is for a target on {}; this cluster's provider is {provider} (--target-file takes any \
             cloud's target)",
            clouds.join(" or ")
        )));
    }
    let mut target = Map::new();
    for (_, member, value, _) in &flags {
        // DigitalOcean's and Linode's state region is `state_region`; AWS's `region` is the session's too.
        let member = match (*member, TOKEN_CLOUDS.contains(&provider)) {
            ("region", true) => "state_region",
            (m, _) => m,
        };
        target.insert(member.into(), json!(value));
    }
    match provider {
        "aws" if target.is_empty() => Ok(None),
        // An AWS target has always been sent without `provider` (the API reads that as aws).
        "aws" if t.target_role_arn.is_none() => Err(CliError::Usage(format!(
            "{} need --target-role-arn (the role Strato assumes in your account)",
            flags.iter().map(|f| f.0).collect::<Vec<_>>().join(", ")
        ))),
        "aws" => Ok(Some(Value::Object(target))),
        p if target.is_empty() && !TOKEN_CLOUDS.contains(&p) => Ok(None),
        p => {
            target.insert("provider".into(), json!(p));
            Ok(Some(Value::Object(target)))
        }
    }
}

/// A file's text, `-` being stdin.
pub(crate) fn read_file(f: &str) -> Result<String, CliError> {
    if f == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::io(std::path::Path::new("(stdin)"), e))?;
        return Ok(s);
    }
    std::fs::read_to_string(f).map_err(|e| CliError::io(std::path::Path::new(f), e))
}

/// Each cloud's section of `strato target-access`, from the API's answer and the tenant's tokens (`None`:
/// the list could not be read).
pub(crate) fn access_sections(access: &Value, tokens: Option<&Value>) -> Vec<(&'static str, Value)> {
    let fed = &access["federation"];
    let no_federation = json!({
        "unavailable": "this deployment issues no identity tokens (its STRATO_OIDC_ISSUER is not set): \
                        ask its operator"
    });
    let federated = |cloud: &str| {
        if fed.is_object() {
            json!({
                "issuer": fed["issuer"],
                "subject_pattern": fed["subject_pattern"],
                "trust": fed[cloud],
            })
        } else {
            no_federation.clone()
        }
    };
    let mut aws = json!({
        "external_id": access["external_id"],
        "principal": access["principal"],
        "trust_policy": access["trust_policy"],
    });
    if fed.is_object() {
        aws["web_identity"] = fed["aws"].clone();
    }
    let token = |cloud: &str| {
        let set = tokens.and_then(|t| {
            t["tokens"]
                .as_array()?
                .iter()
                .find(|x| x["provider"] == json!(cloud))
                .cloned()
        });
        let status = match (tokens, set) {
            (None, _) => json!("unknown (the tokens could not be listed)"),
            (Some(_), None) => json!("not set"),
            (Some(_), Some(t)) => json!({
                "set_at": t["set_at"],
                "set_by": t["set_by"],
                "storage_keys": t["storage_keys"],
            }),
        };
        json!({
            "token": status,
            "how": format!(
                "no federation: register your API token with `strato cloud-tokens set {cloud} < token-file` \
                 (add --storage-access-key-id for a target keeping its state in your object storage)"
            ),
        })
    };
    vec![
        ("aws", aws),
        ("gcp", federated("gcp")),
        ("azure", federated("azure")),
        ("digitalocean", token("digitalocean")),
        ("linode", token("linode")),
    ]
}

pub(crate) async fn target_access(ctx: &Ctx, provider: Option<String>) -> Result<(), CliError> {
    if let Some(p) = provider.as_deref().filter(|p| !CLOUDS.contains(p)) {
        return Err(CliError::Usage(format!(
            "--provider: '{}' is not a cloud; one of {}",
            plain(p),
            CLOUDS.join(", ")
        )));
    }
    let v = ctx.api.get("/v1/tenant/target-access").await?;
    if provider.is_none() && ctx.out.raw(&v)? {
        return Ok(());
    }
    let tokens = ctx.api.get("/v1/tenant/cloud-tokens").await.ok();
    let sections = access_sections(&v, tokens.as_ref());
    let chosen = sections
        .into_iter()
        .filter(|(c, _)| provider.as_deref().is_none_or(|p| p == *c));
    for (cloud, section) in chosen {
        if ctx.out.raw(&section)? {
            continue;
        }
        println!("{}", ctx.out.bold(&format!("── {cloud}")));
        println!(
            "{}\n",
            plain(&serde_json::to_string_pretty(&section).unwrap_or_default())
        );
    }
    Ok(())
}

/// A token and, when asked for, a storage secret from piped stdin: the first and second non-empty lines.
pub(crate) fn piped_secrets(text: &str, want_secret: bool) -> Result<(String, Option<String>), CliError> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let token = lines
        .next()
        .ok_or_else(|| CliError::Usage("no token on stdin (its first line)".into()))?;
    let secret = match (want_secret, lines.next()) {
        (false, _) => None,
        (true, Some(s)) => Some(s.to_owned()),
        (true, None) => {
            return Err(CliError::Usage(
                "--storage-access-key-id: its secret goes on stdin's second line, after the token".into(),
            ));
        }
    };
    Ok((token.to_owned(), secret))
}

/// The request body of `cloud-tokens set` (its values never printed).
pub(crate) fn token_body(token: String, key_id: Option<String>, secret: Option<String>) -> Value {
    let mut body = json!({ "token": token });
    if let (Some(id), Some(secret)) = (key_id, secret) {
        body["storage_access_key_id"] = json!(id);
        body["storage_secret_access_key"] = json!(secret);
    }
    body
}

pub(crate) async fn cloud_tokens(ctx: &Ctx, c: CloudTokens) -> Result<(), CliError> {
    let out = &ctx.out;
    let v = match c {
        CloudTokens::List => ctx.api.get("/v1/tenant/cloud-tokens").await?,
        CloudTokens::Delete { provider } => {
            ctx.api
                .delete(&format!("/v1/tenant/cloud-tokens/{}", seg(&provider)))
                .await?
        }
        CloudTokens::Set {
            provider,
            storage_access_key_id,
        } => {
            let want_secret = storage_access_key_id.is_some();
            let (token, secret) = if std::io::stdin().is_terminal() {
                let token = hidden(&format!("{provider} API token: "))?;
                let secret = match want_secret {
                    true => Some(hidden("object storage secret key: ")?),
                    false => None,
                };
                (token, secret)
            } else {
                piped_secrets(&read_file("-")?, want_secret)?
            };
            let body = token_body(token, storage_access_key_id, secret);
            ctx.api
                .put(&format!("/v1/tenant/cloud-tokens/{}", seg(&provider)), &body)
                .await?
        }
    };
    if out.raw(&v)? {
        return Ok(());
    }
    if v.get("deleted").is_some() {
        println!("{} token removed", out.bold("✓"));
        return Ok(());
    }
    let rows: Vec<Value> = match v["tokens"].as_array() {
        Some(list) => list.clone(),
        None => vec![v],
    };
    if rows.is_empty() {
        println!("no cloud tokens (strato cloud-tokens set digitalocean|linode < token-file)");
        return Ok(());
    }
    let mut t = out.table(&["PROVIDER", "SET", "BY", "STORAGE KEYS"]);
    for r in &rows {
        t.add_row(vec![
            cell(&r["provider"]),
            when(&r["set_at"]),
            cell(&r["set_by"]),
            if r["storage_keys"] == json!(true) {
                "set"
            } else {
                "-"
            }
            .to_owned(),
        ]);
    }
    println!("{t}");
    Ok(())
}

/// Asks on the terminal without echoing the answer (a secret is never shown, nor kept in history).
fn hidden(question: &str) -> Result<String, CliError> {
    let stdin = std::path::Path::new("(stdin)");
    eprint!("{}", plain(question));
    std::io::stderr().flush().map_err(|e| CliError::io(stdin, e))?;
    let saved = echo_off();
    let mut answer = String::new();
    let read = std::io::stdin().lock().read_line(&mut answer);
    echo_restore(saved);
    eprintln!();
    read.map_err(|e| CliError::io(stdin, e))?;
    let answer = answer.trim().to_owned();
    if answer.is_empty() {
        return Err(CliError::Usage("nothing entered".into()));
    }
    Ok(answer)
}

#[cfg(unix)]
fn echo_off() -> Option<libc::termios> {
    // SAFETY: tcgetattr/tcsetattr on stdin with a zeroed termios they fill in; no memory is shared.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !libc::ECHO;
        (libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) == 0).then_some(saved)
    }
}

#[cfg(unix)]
fn echo_restore(saved: Option<libc::termios>) {
    if let Some(t) = saved {
        // SAFETY: restores the settings read by `echo_off`.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t);
        }
    }
}

#[cfg(not(unix))]
fn echo_off() -> Option<()> {
    None
}

#[cfg(not(unix))]
fn echo_restore(_: Option<()>) {}

#[cfg(test)]
mod tests;
