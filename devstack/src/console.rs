//! The web console (`console/dist`, built by `npm run build` in `console/`) served at the HTTP API's own
//! address, as CloudFront serves it next to the API in AWS: `/v1/…` goes to the api function, any other GET
//! to the console (its files, else `index.html` for the single-page app's routes), and `/console.json` tells
//! the console where the WebSocket API is and how users log in (here: a pasted token or `#token=`).

use std::path::{Path, PathBuf};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// What the browser may do with the console's pages: its own scripts and styles only, the API on the same
/// origin, the WebSocket API; no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

#[derive(Debug, Clone)]
pub struct ConsoleSite {
    dir: PathBuf,
    config: String,
}

impl ConsoleSite {
    /// `None` when `dir` holds no built console (`index.html`).
    pub fn new(dir: &Path, ws_url: &str) -> Option<Self> {
        dir.join("index.html").is_file().then(|| Self {
            dir: dir.to_owned(),
            config: json!({"ws_endpoint": ws_url, "auth": {"kind": "token"}}).to_string(),
        })
    }

    /// Whether a request is the console's rather than the API's.
    pub fn claims(method: &axum::http::Method, path: &str) -> bool {
        (method == axum::http::Method::GET || method == axum::http::Method::HEAD)
            && !path.starts_with("/v1/")
            && path != "/v1"
            && path != "/healthz"
            // The OIDC issuer's documents are the api's (public routes at the issuer URL).
            && !path.starts_with("/.well-known/")
    }

    pub async fn serve(&self, path: &str) -> Response {
        if path == "/console.json" {
            return with_headers(
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    self.config.clone(),
                )
                    .into_response(),
                "no-cache",
            );
        }
        let file = match safe_relative(path) {
            Some(rel) if !rel.as_os_str().is_empty() => self.dir.join(rel),
            _ => self.dir.join("index.html"),
        };
        match tokio::fs::read(&file).await {
            Ok(bytes) => {
                // Vite names assets by content hash: cache them; never cache the page that names them.
                let cache = if path.starts_with("/assets/") {
                    "public, max-age=31536000, immutable"
                } else {
                    "no-cache"
                };
                with_headers(
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, content_type(&file))],
                        bytes,
                    )
                        .into_response(),
                    cache,
                )
            }
            // A missing file with an extension is a 404; anything else is a route of the app.
            Err(_) if Path::new(path).extension().is_some() => StatusCode::NOT_FOUND.into_response(),
            Err(_) => match tokio::fs::read(self.dir.join("index.html")).await {
                Ok(bytes) => with_headers(
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                        bytes,
                    )
                        .into_response(),
                    "no-cache",
                ),
                Err(_) => StatusCode::NOT_FOUND.into_response(),
            },
        }
    }
}

fn with_headers(mut r: Response, cache: &'static str) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

/// The request path as a path inside the console's directory, or `None` when it could leave it (`..`,
/// encoded characters, backslashes): such requests get the app's page, never a file outside `dist`.
fn safe_relative(path: &str) -> Option<PathBuf> {
    let rel = path.trim_start_matches('/');
    let plain = rel
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_'));
    if !plain || rel.split('/').any(|s| s == ".." || s == ".") {
        return None;
    }
    Some(PathBuf::from(rel))
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_routes_and_escapes() {
        // dist inside a directory of the test's own, with a file beside it that must never be served.
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("dist");
        std::fs::create_dir_all(dir.join("assets")).unwrap();
        std::fs::write(dir.join("index.html"), "<html>app</html>").unwrap();
        std::fs::write(dir.join("assets/app-1.js"), "x").unwrap();
        std::fs::write(root.path().join("secret.txt"), "no").unwrap();
        let site = ConsoleSite::new(&dir, "ws://127.0.0.1:1/local").unwrap();
        let body = |r: Response| async move {
            let status = r.status();
            let ct = r
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned());
            let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            (status, ct, String::from_utf8_lossy(&b).into_owned())
        };
        let (s, ct, b) = body(site.serve("/assets/app-1.js").await).await;
        assert_eq!(
            (s, ct.as_deref(), b.as_str()),
            (StatusCode::OK, Some("text/javascript; charset=utf-8"), "x")
        );
        let (s, _, b) = body(site.serve("/clusters/cl-1").await).await;
        assert_eq!(
            (s, b.as_str()),
            (StatusCode::OK, "<html>app</html>"),
            "an app route gets the page"
        );
        let (s, _, b) = body(site.serve("/../secret.txt").await).await;
        assert!(
            s != StatusCode::OK || b == "<html>app</html>",
            "never a file outside dist: {b}"
        );
        let (s, _, _) = body(site.serve("/assets/missing.js").await).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (_, _, b) = body(site.serve("/console.json").await).await;
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&b).unwrap()["ws_endpoint"],
            "ws://127.0.0.1:1/local"
        );
        assert!(ConsoleSite::claims(&axum::http::Method::GET, "/"));
        assert!(!ConsoleSite::claims(&axum::http::Method::GET, "/v1/clusters"));
        assert!(!ConsoleSite::claims(
            &axum::http::Method::GET,
            "/.well-known/jwks.json"
        ));
        assert!(!ConsoleSite::claims(&axum::http::Method::POST, "/"));
        assert!(ConsoleSite::new(&root.path().join("nothing"), "ws://x").is_none());
    }
}
