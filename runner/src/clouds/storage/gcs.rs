//! GCS through its JSON API: `objects.list` with `versions=true` (each generation of each object) and
//! `objects.rewrite` with `sourceGeneration` (the chosen generation copied on top, as a new generation).

use serde_json::Value;
use strato_domain::model::ListedStateVersion;

use super::{CloudEndpoints, GcsAccess, PreflightError, Secrets, newest_first, refused};
use crate::clouds::http::send;

/// An object name as one path segment.
fn segment(name: &str) -> String {
    url_encode(name)
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn token(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &GcsAccess,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    crate::clouds::gcp::access_token(http, ep, &a.target, a.id_token.expose(), secrets).await
}

fn denied(a: &GcsAccess, status: u16, body: &str, call: &str) -> PreflightError {
    refused(
        &format!("Cloud Storage ({call} in bucket {})", a.bucket),
        status,
        body,
        &format!(
            "service account {} needs storage.objects.list, get and create on bucket {} (roles/storage.objectAdmin), \
             and the bucket needs object versioning; retry the operation",
            a.target.service_account.as_str(),
            a.bucket
        ),
    )
}

/// One JSON API call with the run's token (sent as the preflight sends its calls): the JSON answer, or what
/// refused it.
async fn call(
    req: reqwest::RequestBuilder,
    token: &str,
    a: &GcsAccess,
    what: &str,
) -> Result<Value, PreflightError> {
    let answer = send(req.bearer_auth(token), "Cloud Storage").await?;
    if !answer.ok() {
        return Err(denied(a, answer.status, &answer.text, what));
    }
    Ok(answer.json)
}

pub(super) async fn list(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &GcsAccess,
    secrets: &mut Secrets,
) -> Result<Vec<ListedStateVersion>, PreflightError> {
    let token = token(http, ep, a, secrets).await?;
    let mut out = Vec::new();
    let mut page: Option<String> = None;
    loop {
        let mut url = format!(
            "{}/b/{}/o?versions=true&prefix={}",
            a.api.trim_end_matches('/'),
            segment(&a.bucket),
            url_encode(&a.prefix)
        );
        if let Some(p) = &page {
            url.push_str(&format!("&pageToken={}", url_encode(p)));
        }
        let json = call(http.get(url), &token, a, "objects.list").await?;
        out.extend(versions_of(&json));
        match json.get("nextPageToken").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => page = Some(t.to_owned()),
            _ => break,
        }
    }
    Ok(newest_first(out))
}

/// The `.tfstate` generations in one `objects.list` page, with their generation as order key. The live
/// generation is the one without `timeDeleted`.
fn versions_of(json: &Value) -> Vec<(ListedStateVersion, i128)> {
    let items = json.get("items").and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let name = o.get("name")?.as_str()?;
            if !name.ends_with(".tfstate") {
                return None;
            }
            let generation = match o.get("generation")? {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            let size = match o.get("size") {
                Some(Value::String(s)) => s.parse().unwrap_or(0),
                Some(v) => v.as_i64().unwrap_or(0),
                None => 0,
            };
            let order = generation.parse::<i128>().unwrap_or(0);
            Some((
                ListedStateVersion {
                    key: name.to_owned(),
                    version_id: generation,
                    last_modified: o.get("updated").and_then(Value::as_str).map(str::to_owned),
                    size,
                    is_latest: o.get("timeDeleted").is_none(),
                },
                order,
            ))
        })
        .collect()
}

pub(super) async fn restore(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &GcsAccess,
    key: &str,
    version: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    let token = token(http, ep, a, secrets).await?;
    let (b, o) = (segment(&a.bucket), segment(key));
    let mut rewrite_token: Option<String> = None;
    // A rewrite within a bucket is usually done in one call; a large one answers `done: false` and a token.
    for _ in 0..20 {
        let mut url = format!(
            "{}/b/{b}/o/{o}/rewriteTo/b/{b}/o/{o}?sourceGeneration={}",
            a.api.trim_end_matches('/'),
            url_encode(version)
        );
        if let Some(t) = &rewrite_token {
            url.push_str(&format!("&rewriteToken={}", url_encode(t)));
        }
        let json = call(
            http.post(url).json(&serde_json::json!({})),
            &token,
            a,
            "objects.rewrite",
        )
        .await?;
        if json.get("done").and_then(Value::as_bool) == Some(false) {
            rewrite_token = json
                .get("rewriteToken")
                .and_then(Value::as_str)
                .map(str::to_owned);
            continue;
        }
        // `objects.rewrite` answers a RewriteResponse; a `copyTo`-style answer is the object itself.
        let object = json.get("resource").unwrap_or(&json);
        return Ok(match object.get("generation") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        });
    }
    Err(PreflightError {
        what: format!("Cloud Storage did not finish copying generation {version} of {key}"),
        fix: "retry the operation".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generation_of_a_state_object_is_listed_newest_first_and_the_live_one_is_current() {
        let page = serde_json::json!({"items": [
            {"name": "t/clusters/c/main/default.tfstate", "generation": "100", "size": "10",
             "updated": "2026-11-30T10:00:00Z", "timeDeleted": "2026-11-30T11:00:00Z"},
            {"name": "t/clusters/c/main/default.tflock", "generation": "150", "size": "1"},
            {"name": "t/clusters/c/main/default.tfstate", "generation": "200", "size": "12",
             "updated": "2026-11-30T11:00:00Z"}
        ]});
        let listed = super::super::newest_first(versions_of(&page));
        let ids: Vec<_> = listed
            .iter()
            .map(|v| (v.version_id.as_str(), v.is_latest, v.size))
            .collect();
        assert_eq!(ids, [("200", true, 12), ("100", false, 10)]);
    }

    #[test]
    fn an_object_name_is_one_path_segment() {
        assert_eq!(segment("a/b c.tfstate"), "a%2Fb%20c.tfstate");
    }
}
