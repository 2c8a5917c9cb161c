//! The console module (`infra/modules/console`) checked on a plan: moto has no CloudFront response headers
//! policies or functions, and the data checks of the applied example want exactly the buckets of
//! `strato_aws::resources`, so the apply test leaves the console off and this plan stands in for it. The
//! plan needs no AWS calls (no data sources; managed CloudFront policies by their fixed ids), so it runs with
//! dummy credentials and no endpoint at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

pub const HTTP_API: &str = "https://abc123.execute-api.eu-west-1.amazonaws.com";
pub const WS_URL: &str = "wss://def456.execute-api.eu-west-1.amazonaws.com/live";
pub const ISSUER: &str = "https://issuer.example.com/";
pub const CLIENT_ID: &str = "strato";

/// What the plan must hold, from the module's inputs.
pub struct Expect<'a> {
    pub prefix: &'a str,
    pub http_api: &'a str,
    pub ws_url: &'a str,
    pub issuer: &'a str,
    pub client_id: &'a str,
}

/// The fixed inputs of the module's own plan (`root`).
pub const FIXED: Expect<'static> = Expect {
    prefix: "strato-check",
    http_api: HTTP_API,
    ws_url: WS_URL,
    issuer: ISSUER,
    client_id: CLIENT_ID,
};

fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap()
}

impl Expect<'_> {
    pub fn csp(&self) -> String {
        format!(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self' wss://{} https://{}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
            host(self.ws_url),
            host(self.issuer)
        )
    }
}

/// A root beside `modules/` (in the infra copy) calling the console module with fixed endpoints; the dist
/// directory is its variable `dist_dir`.
pub fn root() -> String {
    format!(
        r#"variable "dist_dir" {{
  type = string
}}

variable "certificate_arn" {{
  type    = string
  default = null
}}

variable "aliases" {{
  type    = list(string)
  default = []
}}

variable "waf_web_acl_arn" {{
  type    = string
  default = null
}}

provider "aws" {{
  region                      = "eu-west-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}}

module "console" {{
  source = "../modules/console"

  prefix            = "{prefix}"
  dist_dir          = var.dist_dir
  http_api_endpoint = "{HTTP_API}"
  websocket_url     = "{WS_URL}"
  oidc_issuer       = "{ISSUER}"
  oidc_client_id    = "{CLIENT_ID}"
  certificate_arn   = var.certificate_arn
  aliases           = var.aliases
  waf_web_acl_arn   = var.waf_web_acl_arn
}}
"#,
        prefix = FIXED.prefix
    )
}

/// A stand-in for `console/dist` (never committed: the real one is built by `npm run build`): file → bytes.
/// It holds a `console.json` of its own, which the module must not upload over the deployment's.
pub fn placeholder_dist(dir: &Path) {
    let files: [(&str, &str); 6] = [
        (
            "index.html",
            "<!doctype html><link rel=\"stylesheet\" href=\"/assets/index-Bx1.css\"><script type=\"module\" src=\"/assets/index-Cz2.js\"></script>",
        ),
        ("assets/index-Cz2.js", "console.log('strato')"),
        ("assets/index-Bx1.css", "body{margin:0}"),
        (
            "assets/logo-Dq3.svg",
            "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
        ),
        ("favicon.ico", "ico"),
        ("console.json", "{\"ws_endpoint\":\"ws://localhost\"}"),
    ];
    for (name, body) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

/// The console module's planned resources (`module.console` or `module.console[0]`): address within the
/// module → values.
fn planned(plan: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for m in plan["planned_values"]["root_module"]["child_modules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let module = m["address"].as_str().unwrap_or_default();
        if module != "module.console" && module != "module.console[0]" {
            continue;
        }
        for r in m["resources"].as_array().into_iter().flatten() {
            let addr = r["address"].as_str().unwrap();
            out.insert(
                addr.trim_start_matches(module).trim_start_matches('.').to_owned(),
                r["values"].clone(),
            );
        }
    }
    out
}

/// The module's configuration of one resource (expressions and the references they make).
fn config<'a>(plan: &'a Value, address: &str) -> &'a Value {
    plan["configuration"]["root_module"]["module_calls"]["console"]["module"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["address"] == address)
        .unwrap_or_else(|| panic!("no {address} in the console module's configuration"))
}

fn refs(expr: &Value) -> Vec<&str> {
    expr["references"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn one<'a>(v: &'a Value, what: &str) -> &'a Value {
    let a = v
        .as_array()
        .unwrap_or_else(|| panic!("{what}: a block list, got {v}"));
    assert_eq!(a.len(), 1, "{what}: one block, got {v}");
    &a[0]
}

pub fn check_plan(plan: &Value, want: &Expect) {
    let res = planned(plan);
    let get = |a: &str| {
        res.get(a)
            .unwrap_or_else(|| panic!("the console module plans no {a}"))
    };

    // ---- the bucket: private, owner-enforced, encrypted, TLS only, readable by this distribution alone.
    let bucket = format!("{}-console", want.prefix);
    assert_eq!(get("aws_s3_bucket.console")["bucket"], bucket.as_str());
    let block = get("aws_s3_bucket_public_access_block.console");
    for k in [
        "block_public_acls",
        "block_public_policy",
        "ignore_public_acls",
        "restrict_public_buckets",
    ] {
        assert_eq!(block[k], true, "console bucket: {k}");
    }
    let owner = get("aws_s3_bucket_ownership_controls.console");
    assert_eq!(
        one(&owner["rule"], "ownership rule")["object_ownership"],
        "BucketOwnerEnforced"
    );
    let sse = get("aws_s3_bucket_server_side_encryption_configuration.console");
    let by_default = one(
        &one(&sse["rule"], "sse rule")["apply_server_side_encryption_by_default"],
        "sse default",
    );
    assert_eq!(by_default["sse_algorithm"], "AES256");
    // The policy names the distribution's ARN, unknown until it exists: its statements are checked on the
    // configuration (TLS-only deny; CloudFront service principal conditioned on this distribution's ARN).
    let policy = config(plan, "aws_s3_bucket_policy.console");
    let policy_refs = refs(&policy["expressions"]["policy"]);
    assert!(
        policy_refs.contains(&"aws_cloudfront_distribution.console.arn")
            && policy_refs.contains(&"aws_s3_bucket.console.arn"),
        "the bucket policy is about this bucket and this distribution: {policy_refs:?}"
    );
    let module_src = std::fs::read_to_string(super::infra_dir().join("modules/console/main.tf")).unwrap();
    for needle in [
        "\"aws:SecureTransport\" = \"false\"",
        "Principal = { Service = \"cloudfront.amazonaws.com\" }",
        "Condition = { StringEquals = { \"AWS:SourceArn\" = aws_cloudfront_distribution.console.arn } }",
    ] {
        assert!(
            module_src.contains(needle),
            "modules/console/main.tf: the bucket policy has {needle}"
        );
    }

    // ---- the files: every file of dist but its console.json, with content types and cache-control.
    let objects: BTreeMap<&str, &Value> = res
        .iter()
        .filter(|(a, _)| a.starts_with("aws_s3_object.file["))
        .map(|(_, v)| (v["key"].as_str().unwrap(), v))
        .collect();
    let expected = [
        ("index.html", "text/html; charset=utf-8", "no-cache"),
        ("favicon.ico", "image/x-icon", "no-cache"),
        (
            "assets/index-Cz2.js",
            "text/javascript; charset=utf-8",
            "public, max-age=31536000, immutable",
        ),
        (
            "assets/index-Bx1.css",
            "text/css; charset=utf-8",
            "public, max-age=31536000, immutable",
        ),
        (
            "assets/logo-Dq3.svg",
            "image/svg+xml",
            "public, max-age=31536000, immutable",
        ),
    ];
    assert_eq!(
        objects.keys().copied().collect::<Vec<_>>().len(),
        expected.len(),
        "uploaded files: {:?} (dist's own console.json must not be one)",
        objects.keys().collect::<Vec<_>>()
    );
    for (key, content_type, cache) in expected {
        let o = objects
            .get(key)
            .unwrap_or_else(|| panic!("{key} is not uploaded"));
        assert_eq!(o["content_type"], content_type, "{key}: content type");
        assert_eq!(o["cache_control"], cache, "{key}: cache-control");
    }
    for obj in ["aws_s3_object.file", "aws_s3_object.config"] {
        assert!(
            refs(&config(plan, obj)["expressions"]["bucket"]).contains(&"aws_s3_bucket.console.id"),
            "{obj}: into the console bucket"
        );
    }
    let config_obj = get("aws_s3_object.config");
    assert_eq!(config_obj["key"], "console.json");
    assert_eq!(config_obj["content_type"], "application/json");
    assert_eq!(config_obj["cache_control"], "no-cache");
    let console_json: Value = serde_json::from_str(config_obj["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        console_json,
        json!({"ws_endpoint": want.ws_url, "auth": {"kind": "oidc", "issuer": want.issuer, "client_id": want.client_id, "scope": "openid"}})
    );

    // ---- CloudFront: OAC, headers policy, the distribution's origins and behaviours.
    let oac = get("aws_cloudfront_origin_access_control.console");
    assert_eq!(oac["origin_access_control_origin_type"], "s3");
    assert_eq!(oac["signing_behavior"], "always");
    assert_eq!(oac["signing_protocol"], "sigv4");

    let headers = get("aws_cloudfront_response_headers_policy.console");
    let sec = one(&headers["security_headers_config"], "security headers");
    let csp = one(&sec["content_security_policy"], "CSP");
    assert_eq!(csp["content_security_policy"], want.csp().as_str());
    assert_eq!(csp["override"], true);
    let hsts = one(&sec["strict_transport_security"], "HSTS");
    assert!(
        hsts["access_control_max_age_sec"].as_u64().unwrap() >= 31_536_000,
        "HSTS: a year at least"
    );
    assert_eq!(hsts["override"], true);
    assert_eq!(one(&sec["content_type_options"], "nosniff")["override"], true);
    let referrer = one(&sec["referrer_policy"], "referrer policy");
    assert_eq!(referrer["referrer_policy"], "no-referrer");
    assert_eq!(
        one(&sec["frame_options"], "frame options")["frame_option"],
        "DENY"
    );

    let dist = get("aws_cloudfront_distribution.console");
    let dist_cfg = &config(plan, "aws_cloudfront_distribution.console")["expressions"];
    assert_eq!(dist["enabled"], true);
    assert_eq!(dist["default_root_object"], "index.html");
    // No custom error responses: they would apply to the API's origin too (its 403/404 turned into the app).
    assert_eq!(
        dist["custom_error_response"],
        json!([]),
        "SPA fallback is the function's, not error pages"
    );
    let origins = dist["origin"].as_array().unwrap();
    assert_eq!(origins.len(), 2, "two origins: {origins:?}");
    let origin = |id: &str| {
        origins
            .iter()
            .find(|o| o["origin_id"] == id)
            .unwrap_or_else(|| panic!("no origin {id}"))
    };
    let s3 = origin("console-bucket");
    assert_eq!(
        s3["s3_origin_config"],
        json!([]),
        "no legacy OAI on the bucket origin"
    );
    assert_eq!(s3["custom_origin_config"], json!([]));
    let s3_cfg = dist_cfg["origin"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| {
            refs(&o["origin_access_control_id"]).contains(&"aws_cloudfront_origin_access_control.console.id")
        })
        .expect("an origin reads through the OAC");
    assert!(
        refs(&s3_cfg["domain_name"]).contains(&"aws_s3_bucket.console.bucket_regional_domain_name"),
        "the OAC origin is the console bucket (regional domain): {s3_cfg}"
    );
    let api = origin("http-api");
    assert_eq!(api["domain_name"], host(want.http_api));
    let custom = one(&api["custom_origin_config"], "API origin");
    assert_eq!(custom["origin_protocol_policy"], "https-only");
    assert_eq!(custom["origin_ssl_protocols"], json!(["TLSv1.2"]));

    let default = one(&dist["default_cache_behavior"], "default behaviour");
    assert_eq!(default["target_origin_id"], "console-bucket");
    assert_eq!(default["viewer_protocol_policy"], "redirect-to-https");
    assert_eq!(
        default["cache_policy_id"], "658327ea-f89d-4fab-a63d-7e88639e58f6",
        "CachingOptimized"
    );
    let default_cfg = one(&dist_cfg["default_cache_behavior"], "default behaviour config");
    assert!(
        refs(&default_cfg["response_headers_policy_id"])
            .contains(&"aws_cloudfront_response_headers_policy.console.id")
    );
    let fa = one(&default_cfg["function_association"], "function association");
    assert_eq!(fa["event_type"]["constant_value"], "viewer-request");
    assert!(refs(&fa["function_arn"]).contains(&"aws_cloudfront_function.spa.arn"));

    let ordered = dist["ordered_cache_behavior"].as_array().unwrap();
    assert_eq!(ordered.len(), 1, "one more behaviour, /v1/*: {ordered:?}");
    let v1 = &ordered[0];
    assert_eq!(v1["path_pattern"], "/v1/*");
    assert_eq!(v1["target_origin_id"], "http-api");
    let mut methods: Vec<&str> = v1["allowed_methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]
    );
    assert_eq!(
        v1["cache_policy_id"], "4135ea2d-6df8-44a3-9df3-4b5a84be39ad",
        "CachingDisabled"
    );
    assert_eq!(
        v1["origin_request_policy_id"], "b689b0a8-53d0-40ab-baf2-68738e2966ac",
        "AllViewerExceptHostHeader (Authorization, Idempotency-Key, If-Match, query strings; not Host)"
    );
    assert_eq!(
        v1["forwarded_values"],
        json!([]),
        "policies, not legacy forwarded values"
    );
    assert_eq!(v1["viewer_protocol_policy"], "https-only");
    let v1_cfg = one(&dist_cfg["ordered_cache_behavior"], "/v1/* config");
    assert!(
        refs(&v1_cfg["response_headers_policy_id"])
            .contains(&"aws_cloudfront_response_headers_policy.console.id")
    );

    check_spa_function(get("aws_cloudfront_function.spa"));
}

/// The viewer-request function run in node (when the machine has it): app routes → /index.html, files kept.
fn check_spa_function(f: &Value) {
    assert_eq!(f["runtime"], "cloudfront-js-2.0");
    assert_eq!(f["publish"], true);
    let code = f["code"].as_str().unwrap();
    let cases = [
        ("/", "/index.html"),
        ("/clusters", "/index.html"),
        ("/clusters/cl-123/operations", "/index.html"),
        ("/index.html", "/index.html"),
        ("/console.json", "/console.json"),
        ("/assets/index-Cz2.js", "/assets/index-Cz2.js"),
        ("/favicon.ico", "/favicon.ico"),
    ];
    let script = format!(
        "{code}\nconsole.log(JSON.stringify({uris}.map(u => handler({{request: {{uri: u}}}}).uri)));",
        uris = serde_json::to_string(&cases.iter().map(|c| c.0).collect::<Vec<_>>()).unwrap()
    );
    let out = match Command::new("node").arg("-e").arg(&script).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("console SPA function: not run (no node: {e}); checked statically only");
            assert!(code.contains("'/index.html'"));
            return;
        }
    };
    assert!(
        out.status.success(),
        "node: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    let want: Vec<&str> = cases.iter().map(|c| c.1).collect();
    assert_eq!(got, want, "the SPA function's rewrites of {cases:?}");
}
