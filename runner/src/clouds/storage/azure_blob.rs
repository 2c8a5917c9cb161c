//! Azure Blob Storage: List Blobs with `include=versions` (each version's `<VersionId>` and
//! `<IsCurrentVersion>`), and Copy Blob with `x-ms-copy-source` naming `…?versionid=<id>`; with an Entra ID
//! token for Blob Storage's scope.

use strato_domain::model::ListedStateVersion;

use super::{AzureAccess, CloudEndpoints, PreflightError, Secrets, newest_first, refused, unreachable};

const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";
/// Blob versions need 2019-12-12 or later.
const X_MS_VERSION: &str = "2021-08-06";

fn denied(a: &AzureAccess, status: u16, body: &str, call: &str) -> PreflightError {
    refused(
        &format!("Azure Blob Storage ({call} in container {})", a.container),
        status,
        body,
        &format!(
            "app {} needs Storage Blob Data Contributor on the container {} and the storage account needs blob \
             versioning enabled; retry the operation",
            a.target.client_id, a.container
        ),
    )
}

async fn token(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &AzureAccess,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    crate::clouds::azure::access_token(http, ep, &a.target, a.id_token.expose(), STORAGE_SCOPE, secrets).await
}

fn container_url(a: &AzureAccess) -> String {
    format!("{}/{}", a.blob_endpoint.trim_end_matches('/'), a.container)
}

/// The List Blobs request for one page.
pub(super) fn list_url(a: &AzureAccess, marker: Option<&str>) -> String {
    let mut url = format!(
        "{}?restype=container&comp=list&include=versions&prefix={}",
        container_url(a),
        encode(&a.prefix)
    );
    if let Some(m) = marker {
        url.push_str(&format!("&marker={}", encode(m)));
    }
    url
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(super) async fn list(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &AzureAccess,
    secrets: &mut Secrets,
) -> Result<Vec<ListedStateVersion>, PreflightError> {
    let token = token(http, ep, a, secrets).await?;
    let mut out = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let resp = http
            .get(list_url(a, marker.as_deref()))
            .bearer_auth(&token)
            .header("x-ms-version", X_MS_VERSION)
            .send()
            .await
            .map_err(|e| unreachable("Azure Blob Storage", &e))?;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            return Err(denied(a, status, &body, "List Blobs"));
        }
        let (page, next) = parse_list(&body);
        out.extend(page);
        match next {
            Some(m) => marker = Some(m),
            None => break,
        }
    }
    Ok(newest_first(out))
}

/// The `.tfstate` blob versions of one List Blobs answer (ordered by their version id, an RFC 3339
/// timestamp), and the next page's marker. A blob listed without a `<VersionId>` (versioning off) is one
/// current version with an empty id.
pub(super) fn parse_list(xml: &str) -> (Vec<(ListedStateVersion, i128)>, Option<String>) {
    let mut out = Vec::new();
    for blob in xml.split("<Blob>").skip(1) {
        let blob = blob.split("</Blob>").next().unwrap_or(blob);
        let Some(name) = tag(blob, "Name") else { continue };
        if !name.ends_with(".tfstate") {
            continue;
        }
        let version = tag(blob, "VersionId").unwrap_or_default();
        let current = match tag(blob, "IsCurrentVersion") {
            Some(v) => v == "true",
            None => version.is_empty(),
        };
        let order = version.chars().filter(char::is_ascii_digit).collect::<String>();
        out.push((
            ListedStateVersion {
                key: name,
                version_id: version,
                last_modified: tag(blob, "Last-Modified"),
                size: tag(blob, "Content-Length")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0),
                is_latest: current,
            },
            order
                .get(..order.len().min(30))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        ));
    }
    let next = tag(xml.rsplit("</Blobs>").next().unwrap_or(""), "NextMarker").filter(|m| !m.is_empty());
    (out, next)
}

/// The text of the first `<name>…</name>` in `xml`, entities decoded.
fn tag(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))? + start;
    Some(
        xml[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// The Copy Blob request's target URL and copy source.
pub(super) fn copy_request(a: &AzureAccess, key: &str, version: &str) -> (String, String) {
    let blob = format!("{}/{}", container_url(a), encode(key));
    let source = format!("{blob}?versionid={}", encode(version));
    (blob, source)
}

pub(super) async fn restore(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    a: &AzureAccess,
    key: &str,
    version: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    let token = token(http, ep, a, secrets).await?;
    let (blob, source) = copy_request(a, key, version);
    let resp = http
        .put(blob)
        .bearer_auth(&token)
        .header("x-ms-version", X_MS_VERSION)
        .header("x-ms-copy-source", source)
        .header("content-length", "0")
        .send()
        .await
        .map_err(|e| unreachable("Azure Blob Storage", &e))?;
    let status = resp.status().as_u16();
    let header = |h: &str| {
        resp.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (new_version, copy_status) = (header("x-ms-version-id"), header("x-ms-copy-status"));
    let body = resp.text().await.unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(denied(a, status, &body, "Copy Blob"));
    }
    // A copy within one account is synchronous; anything else is reported, not waited for.
    if !copy_status.is_empty() && copy_status != "success" {
        return Err(PreflightError {
            what: format!("Copy Blob of version {version} of {key} is {copy_status}, not done"),
            fix: "check the blob's copy status in the storage account, then list the versions again".into(),
        });
    }
    Ok(new_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strato_domain::model::AzureTarget;
    use strato_domain::secret::Sensitive;

    fn access() -> AzureAccess {
        let target: AzureTarget = serde_json::from_value(serde_json::json!({
            "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "client_id": "00000000-0000-0000-0000-000000000001",
            "subscription_id": "a1b2c3d4-0000-0000-0000-00000000abcd"}))
        .unwrap();
        AzureAccess {
            blob_endpoint: "https://acme.blob.core.windows.net/".into(),
            container: "tfstate".into(),
            prefix: "tenants/t/clusters/c/".into(),
            target,
            id_token: Sensitive::from("id-token".to_owned()),
        }
    }

    /// The documented List Blobs answer with `include=versions` (learn.microsoft.com, "List Blobs":
    /// `<Blob><Name/><VersionId/><IsCurrentVersion/><Properties>…</Properties></Blob>`).
    const LISTED: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<EnumerationResults ServiceEndpoint="https://acme.blob.core.windows.net/" ContainerName="tfstate">
  <Prefix>tenants/t/clusters/c/</Prefix>
  <Blobs>
    <Blob>
      <Name>tenants/t/clusters/c/main.tfstate</Name>
      <VersionId>2026-11-30T10:00:00.1234567Z</VersionId>
      <Properties><Last-Modified>Mon, 30 Nov 2026 10:00:00 GMT</Last-Modified><Content-Length>120</Content-Length></Properties>
    </Blob>
    <Blob>
      <Name>tenants/t/clusters/c/main.tfstate</Name>
      <VersionId>2026-11-30T11:00:00.7654321Z</VersionId>
      <IsCurrentVersion>true</IsCurrentVersion>
      <Properties><Last-Modified>Mon, 30 Nov 2026 11:00:00 GMT</Last-Modified><Content-Length>130</Content-Length></Properties>
    </Blob>
    <Blob><Name>tenants/t/clusters/c/notes.txt</Name><VersionId>2026-11-30T09:00:00.0000000Z</VersionId></Blob>
  </Blobs>
  <NextMarker>2!84!MDAwMDE</NextMarker>
</EnumerationResults>"#;

    #[test]
    fn list_blobs_with_versions_is_read_into_each_version_newest_first() {
        let (page, next) = parse_list(LISTED);
        assert_eq!(next.as_deref(), Some("2!84!MDAwMDE"));
        let listed = super::super::newest_first(page);
        let got: Vec<_> = listed
            .iter()
            .map(|v| (v.version_id.as_str(), v.is_latest, v.size))
            .collect();
        assert_eq!(
            got,
            [
                ("2026-11-30T11:00:00.7654321Z", true, 130),
                ("2026-11-30T10:00:00.1234567Z", false, 120)
            ]
        );
        assert_eq!(
            listed[1].last_modified.as_deref(),
            Some("Mon, 30 Nov 2026 10:00:00 GMT")
        );
    }

    #[test]
    fn the_list_and_copy_requests_name_the_container_the_prefix_and_the_source_version() {
        let a = access();
        assert_eq!(
            list_url(&a, Some("m 1")),
            "https://acme.blob.core.windows.net/tfstate?restype=container&comp=list&include=versions\
             &prefix=tenants/t/clusters/c/&marker=m%201"
        );
        let (blob, source) = copy_request(
            &a,
            "tenants/t/clusters/c/main.tfstate",
            "2026-11-30T10:00:00.1234567Z",
        );
        assert_eq!(
            blob,
            "https://acme.blob.core.windows.net/tfstate/tenants/t/clusters/c/main.tfstate"
        );
        assert_eq!(
            source,
            "https://acme.blob.core.windows.net/tfstate/tenants/t/clusters/c/main.tfstate\
             ?versionid=2026-11-30T10%3A00%3A00.1234567Z"
        );
    }
}
