//! infra/ applied for real: the example root, with the modern engine (Terraform >= 1.5, AWS provider >= 5
//! from the machine's mirror), applied into a private moto; the consistency checks (infra_support/checks.rs)
//! on the applied state; the outputs contract devstack's run-on-infra mode reads (`on_applied`); a second
//! plan that changes nothing; `destroy`, after which nothing of the deployment is left in moto.
//!
//! moto's gaps and how this test meets them (infra/README.md lists them too):
//! - no API Gateway v2 deployments (CreateDeployment answers 404): the override sets the api module's
//!   `ws_deployment = false`, so the WebSocket stage has no deployment here;
//! - Lambda's `LoggingConfig` is not stored: the JSON log format is checked on the planned values, and the
//!   second plan's in-place update of exactly `logging_config` on the functions is tolerated;
//! - SQS returns `RedrivePolicy` re-serialized with spaces: the second plan's update of exactly a
//!   JSON-equal `redrive_policy` on a queue is tolerated;
//! - no `RedriveAllowPolicy` attribute: the data module sets none;
//! - no Logs query definitions: the override sets `logs_saved_query = false`, and the saved query is
//!   checked on a plan of it alone;
//! - the OIDC issuer's distribution reads back with moto's own defaults and its bucket's TLS-only policy
//!   refuses the engine's plain-HTTP reads: infra_support/issuer.rs probes the refusal, lifts the policy and
//!   tolerates exactly those changes in the second plan (`moto_artifact`);
//! - no CloudFront response headers policies or functions, and the data checks want exactly Strato's
//!   buckets: the web console stays off (`console`'s default); the example's console is planned on the
//!   applied deployment with a placeholder build, and that plan checked (infra_support/console.rs): its
//!   origins and console.json are this deployment's API and WebSocket endpoints, issuer and audience.
//!
//! Anything else the second plan would change fails the test.

use crate::deployment_run;
use crate::infra_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use infra_support::{FUNCTIONS, Network, PREFIX, REGION, State, checks, infra_copy, sample_variables, tf};
use serde_json::Value;
use strato_aws::resources::{BUCKETS, QUEUES, TABLES};

const CREDS: [(&str, &str); 4] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", REGION),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

/// Services the example root talks to, pointed at moto (provider >= 5 dialect).
const SERVICES: &[&str] = &[
    "apigatewayv2",
    "cloudfront",
    "cloudwatch",
    "logs",
    "dynamodb",
    "ecr",
    "ecs",
    "events",
    "iam",
    "kms",
    "lambda",
    "s3",
    "scheduler",
    "secretsmanager",
    "sqs",
    "sts",
];

fn moto_override(endpoint: &str) -> String {
    let endpoints: String = SERVICES
        .iter()
        .map(|s| format!("    {s} = \"{endpoint}\"\n"))
        .collect();
    format!(
        "provider \"aws\" {{\n  skip_credentials_validation = true\n  skip_metadata_api_check     = true\n  \
         s3_use_path_style           = true\n\n  endpoints {{\n{endpoints}  }}\n}}\n\n\
         # moto has no API Gateway v2 deployments.\nmodule \"api\" {{\n  ws_deployment = false\n}}\n\n\
         # moto has no Logs query definitions: checked on a plan instead.\n\
         variable \"logs_saved_query\" {{\n  default = false\n}}\n"
    )
}

/// The packaged functions (cargo-lambda's layout, `scripts/package`) when all are there, else stand-ins.
/// Looked for in `STRATO_LAMBDA_ZIP_DIR`, else `$CARGO_TARGET_DIR/lambda`, else the workspace's
/// `target/lambda`.
fn lambda_zips(scratch: &Path) -> std::path::PathBuf {
    let packaged = std::env::var_os("STRATO_LAMBDA_ZIP_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(|t| Path::new(&t).join("lambda")))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/lambda"));
    if FUNCTIONS
        .iter()
        .all(|f| packaged.join(format!("strato-{f}/bootstrap.zip")).is_file())
    {
        eprintln!(
            "infra_apply: using the packaged functions in {}",
            packaged.display()
        );
        return packaged;
    }
    eprintln!(
        "infra_apply: no packaged functions in {}: stand-in zips",
        packaged.display()
    );
    let dir = scratch.join("lambda");
    for f in FUNCTIONS {
        let d = dir.join(format!("strato-{f}"));
        std::fs::create_dir_all(&d).unwrap();
        // A zip with one stored `bootstrap` (moto only unpacks it; nothing runs it).
        let script = format!("#!/bin/sh\necho stand-in for strato-{f}\n");
        std::fs::write(
            d.join("bootstrap.zip"),
            stored_zip("bootstrap", script.as_bytes()),
        )
        .unwrap();
    }
    dir
}

/// A one-file zip, stored (no compression): enough for a stand-in, with no zip crate.
fn stored_zip(name: &str, data: &[u8]) -> Vec<u8> {
    let crc = crc32(data);
    let (n, len) = (name.len() as u16, data.len() as u32);
    let mut out = Vec::new();
    let local = |out: &mut Vec<u8>| {
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend([20u16, 0, 0, 0, 0].iter().flat_map(|v| v.to_le_bytes()));
        out.extend(crc.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(n.to_le_bytes());
        out.extend(0u16.to_le_bytes());
    };
    local(&mut out);
    out.extend(name.as_bytes());
    out.extend(data);
    let central_at = out.len() as u32;
    out.extend(0x0201_4b50u32.to_le_bytes());
    out.extend([0x031e_u16, 20, 0, 0, 0, 0].iter().flat_map(|v| v.to_le_bytes()));
    out.extend(crc.to_le_bytes());
    out.extend(len.to_le_bytes());
    out.extend(len.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend([0u16, 0, 0, 0].iter().flat_map(|v| v.to_le_bytes()));
    out.extend((0o100_755u32 << 16).to_le_bytes()); // executable
    out.extend(0u32.to_le_bytes());
    out.extend(name.as_bytes());
    let central_len = out.len() as u32 - central_at;
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u16, 0, 1, 1].iter().flat_map(|v| v.to_le_bytes()));
    out.extend(central_len.to_le_bytes());
    out.extend(central_at.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Called once the example root is applied, with `terraform output -json` as name → value: the outputs
/// contract devstack's run-on-infra mode relies on, then a cluster's life on the applied resources
/// (`aws_endpoint`: where they live).
async fn on_applied(outputs: &Value, aws_endpoint: &str) {
    check_outputs_contract(outputs, aws_endpoint);
    tls_only_buckets_refuse_plain_http_then_lift(outputs, aws_endpoint).await;
    let t = Instant::now();
    deployment_run::cluster_lives_on(outputs, aws_endpoint).await;
    eprintln!("devstack on the deployment: finished in {:.0?}", t.elapsed());
}

/// The buckets' TLS-only policy is enforced (moto evaluates `aws:SecureTransport`): a write over plain
/// HTTP is refused. moto is only reachable over plain HTTP, so the policies are then removed for the run on
/// the deployment (in AWS the SDK always uses HTTPS); destroy finds them gone and carries on.
async fn tls_only_buckets_refuse_plain_http_then_lift(outputs: &Value, aws_endpoint: &str) {
    let aws = strato_aws::aws::AwsClients::for_endpoint(aws_endpoint, REGION).await;
    for bucket in outputs["buckets"].as_object().expect("buckets").values() {
        let bucket = bucket.as_str().expect("a bucket name");
        let put = aws
            .s3
            .put_object()
            .bucket(bucket)
            .key("tls-probe")
            .body(b"x".to_vec().into())
            .send()
            .await;
        let status = put
            .as_ref()
            .err()
            .and_then(|e| e.raw_response())
            .map(|r| r.status().as_u16());
        assert_eq!(
            status,
            Some(403),
            "{bucket}: a plain-HTTP write must be refused: {put:?}"
        );
        aws.s3
            .delete_bucket_policy()
            .bucket(bucket)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{bucket}: DeleteBucketPolicy: {e:?}"));
    }
}

fn check_outputs_contract(outputs: &Value, aws_endpoint: &str) {
    let non_empty_str = |v: &Value, what: &str| {
        assert!(
            v.as_str().is_some_and(|s| !s.is_empty()),
            "output {what}: a non-empty string, got {v}"
        );
    };
    let map_of = |name: &str, keys: &[&str]| {
        let m = outputs[name]
            .as_object()
            .unwrap_or_else(|| panic!("output {name}: a map, got {}", outputs[name]));
        let got: BTreeSet<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            got,
            keys.iter().copied().collect(),
            "output {name}: logical names"
        );
        for (k, v) in m {
            non_empty_str(v, &format!("{name}.{k}"));
        }
    };
    non_empty_str(&outputs["resource_prefix"], "resource_prefix");
    assert_eq!(outputs["resource_prefix"], PREFIX);
    assert_eq!(outputs["region"], REGION);
    map_of("tables", &TABLES.iter().map(|t| t.logical).collect::<Vec<_>>());
    map_of("queues", &QUEUES.iter().map(|q| q.logical).collect::<Vec<_>>());
    map_of("buckets", &BUCKETS.iter().map(|b| b.logical).collect::<Vec<_>>());
    map_of("functions", &FUNCTIONS);
    for (_, url) in outputs["queues"].as_object().unwrap() {
        assert!(
            url.as_str().unwrap().starts_with(aws_endpoint),
            "queue URLs point at {aws_endpoint}: {url}"
        );
    }
    let runner = &outputs["runner"];
    for k in [
        "cluster_arn",
        "task_definition_arn",
        "container",
        "task_role_arn",
        "state_role_arn",
        "engine_role_arn",
        "log_group",
    ] {
        non_empty_str(&runner[k], &format!("runner.{k}"));
    }
    for k in ["subnets", "security_groups"] {
        let list = runner[k]
            .as_array()
            .unwrap_or_else(|| panic!("runner.{k}: a list"));
        assert!(!list.is_empty(), "runner.{k}");
        list.iter()
            .for_each(|v| non_empty_str(v, &format!("runner.{k}[]")));
    }
    assert!(
        runner["assign_public_ip"].is_boolean(),
        "runner.assign_public_ip: a bool"
    );
    for k in ["ws_jwt_arn", "run_proof_arn", "agent_token_arn"] {
        non_empty_str(&outputs["secrets"][k], &format!("secrets.{k}"));
    }
    // The OIDC issuer is on by default: https, no trailing slash (what the functions accept).
    let issuer = outputs["oidc_issuer"].as_str().unwrap_or_default();
    issuer
        .parse::<strato_domain::identity::Issuer>()
        .unwrap_or_else(|e| panic!("output oidc_issuer: {e}"));
    for k in [
        "oidc_signing_key_arn",
        "kms_key_arn",
        "http_api_url",
        "websocket_url",
        "ws_management_endpoint",
    ] {
        non_empty_str(&outputs[k], k);
    }
}

/// The example's console switched on (a placeholder build, never committed) and planned alone on the applied
/// deployment: wired to this deployment's HTTP API, WebSocket API, JWT issuer and first audience.
fn console_planned_on_the_deployment(
    run: &dyn Fn(&[&str], &[i32]) -> std::process::Output,
    example: &Path,
    outputs: &serde_json::Map<String, Value>,
) {
    let dist = example.join("console-dist");
    infra_support::console::placeholder_dist(&dist);
    std::fs::write(
        example.join("console.tfvars.json"),
        serde_json::json!({"console": {"enabled": true, "dist_dir": dist.display().to_string()}}).to_string(),
    )
    .unwrap();
    run(
        &[
            "plan",
            "-input=false",
            "-no-color",
            "-var-file=test.tfvars.json",
            "-var-file=console.tfvars.json",
            "-refresh=false",
            "-target=module.console",
            "-out=console.plan",
        ],
        &[0],
    );
    let plan: Value = serde_json::from_slice(&run(&["show", "-json", "console.plan"], &[0]).stdout).unwrap();
    let vars = sample_variables(
        Path::new("."),
        &Network {
            subnets: vec![],
            security_groups: vec![],
        },
    );
    let s = |v: &Value| v.as_str().unwrap_or_else(|| panic!("a string: {v}")).to_owned();
    let (http_api, ws_url) = (s(&outputs["http_api_url"]), s(&outputs["websocket_url"]));
    let (issuer, client_id) = (s(&vars["jwt_issuer"]), s(&vars["jwt_audience"][0]));
    infra_support::console::check_plan(
        &plan,
        &infra_support::console::Expect {
            prefix: PREFIX,
            http_api: &http_api,
            ws_url: &ws_url,
            issuer: &issuer,
            client_id: &client_id,
        },
    );
}

/// The second plan's changes other than no-ops, minus moto's known read-back artifacts (module docs); the
/// tolerated ones are printed.
fn unexpected_changes(plan: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in plan["resource_changes"].as_array().into_iter().flatten() {
        let actions = &c["change"]["actions"];
        if actions == &serde_json::json!(["no-op"]) || actions == &serde_json::json!(["read"]) {
            continue;
        }
        let (before, after) = (&c["change"]["before"], &c["change"]["after"]);
        let differing: Vec<&String> = after
            .as_object()
            .map(|a| {
                a.iter()
                    .filter(|(k, v)| before.get(k.as_str()) != Some(v))
                    .map(|(k, _)| k)
                    .collect()
            })
            .unwrap_or_default();
        let kind = c["type"].as_str().unwrap_or_default();
        let json_equal = |k: &str| {
            let parse = |v: &Value| serde_json::from_str::<Value>(v.as_str().unwrap_or("null")).ok();
            parse(&before[k]).is_some() && parse(&before[k]) == parse(&after[k])
        };
        let tolerated = infra_support::issuer::moto_artifact(c)
            || actions == &serde_json::json!(["update"])
                && match (kind, differing.as_slice()) {
                    ("aws_lambda_function", [k]) => k.as_str() == "logging_config",
                    ("aws_sqs_queue", [k]) => k.as_str() == "redrive_policy" && json_equal("redrive_policy"),
                    _ => false,
                };
        let line = format!("{} {actions}: {differing:?}", c["address"]);
        if tolerated {
            eprintln!("infra_apply: second plan, moto artifact tolerated: {line}");
        } else {
            out.push(line);
        }
    }
    out
}

/// Names holding the prefix that are still in moto after destroy, by service (SDK clients where the
/// workspace has them, moto's wire API for Lambda, IAM, ECR, Scheduler, API Gateway v2, Logs, EventBridge).
async fn leftovers(endpoint: &str) -> Vec<String> {
    let aws = strato_aws::aws::AwsClients::for_endpoint(endpoint, REGION).await;
    let mut left = Vec::new();
    let mut keep = |what: &str, names: Vec<String>| {
        left.extend(
            names
                .into_iter()
                .filter(|n| n.contains(PREFIX))
                .map(|n| format!("{what} {n}")),
        );
    };
    keep(
        "table",
        aws.dynamodb
            .list_tables()
            .send()
            .await
            .unwrap()
            .table_names
            .unwrap_or_default(),
    );
    keep(
        "queue",
        aws.sqs
            .list_queues()
            .send()
            .await
            .unwrap()
            .queue_urls
            .unwrap_or_default(),
    );
    let buckets = aws
        .s3
        .list_buckets()
        .send()
        .await
        .unwrap()
        .buckets
        .unwrap_or_default();
    keep("bucket", buckets.into_iter().filter_map(|b| b.name).collect());
    let secrets = aws_sdk_secretsmanager::Client::new(&aws.config)
        .list_secrets()
        .send()
        .await
        .unwrap();
    keep(
        "secret",
        secrets
            .secret_list
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| s.name)
            .collect(),
    );
    let ecs = aws_sdk_ecs::Client::new(&aws.config);
    let clusters = ecs
        .list_clusters()
        .send()
        .await
        .unwrap()
        .cluster_arns
        .unwrap_or_default();
    if !clusters.is_empty() {
        let described = ecs
            .describe_clusters()
            .set_clusters(Some(clusters))
            .send()
            .await
            .unwrap();
        let active = described
            .clusters
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.status.as_deref() == Some("ACTIVE"));
        keep("ECS cluster", active.filter_map(|c| c.cluster_arn).collect());
    }
    let http = reqwest::Client::new();
    let wire = |service: &'static str, method: reqwest::Method, path: &str| {
        http.request(method, format!("{endpoint}{path}")).header(
            "Authorization",
            format!("AWS4-HMAC-SHA256 Credential=testing/20260101/{REGION}/{service}/aws4_request, SignedHeaders=host, Signature=0"),
        )
    };
    let text = |r: reqwest::RequestBuilder| async move {
        let resp = r.send().await.unwrap();
        let status = resp.status();
        let body = resp.text().await.unwrap();
        assert!(status.is_success(), "moto answered {status}: {body}");
        body
    };
    let target = |service: &'static str, t: &str| {
        wire(service, reqwest::Method::POST, "/")
            .header("X-Amz-Target", t)
            .header("Content-Type", "application/x-amz-json-1.1")
            .body("{}")
    };
    // Raw listings: any mention of the prefix is a leftover.
    for (what, body) in [
        (
            "Lambda",
            text(wire("lambda", reqwest::Method::GET, "/2015-03-31/functions/")).await,
        ),
        (
            "IAM",
            text(
                wire("iam", reqwest::Method::POST, "/")
                    .form(&[("Action", "ListRoles"), ("Version", "2010-05-08")]),
            )
            .await,
        ),
        (
            "ECR",
            text(target(
                "ecr",
                "AmazonEC2ContainerRegistry_V20150921.DescribeRepositories",
            ))
            .await,
        ),
        (
            "Scheduler",
            text(wire("scheduler", reqwest::Method::GET, "/schedules")).await,
        ),
        (
            "Scheduler group",
            text(wire("scheduler", reqwest::Method::GET, "/schedule-groups")).await,
        ),
        (
            "API Gateway v2",
            text(wire("apigateway", reqwest::Method::GET, "/v2/apis")).await,
        ),
        (
            "Logs",
            text(target("logs", "Logs_20140328.DescribeLogGroups")).await,
        ),
        ("EventBridge", text(target("events", "AWSEvents.ListRules")).await),
        (
            "CloudFront",
            text(wire(
                "cloudfront",
                reqwest::Method::GET,
                "/2020-05-31/distribution",
            ))
            .await,
        ),
    ] {
        if body.contains(PREFIX) {
            left.push(format!("{what}: {body}"));
        }
    }
    left
}

/// moto's default VPC: its subnets and default security group are where the deployment's runners start.
async fn default_network(endpoint: &str) -> Network {
    let http = reqwest::Client::new();
    let ec2 = |action: &'static str, tag: &'static str| {
        let http = http.clone();
        async move {
            strato_devstack::moto_ctl::ec2_values(&http, endpoint, REGION, action, tag)
                .await
                .unwrap_or_else(|e| panic!("moto's default VPC ({action}): {e}"))
        }
    };
    let mut subnets = ec2("DescribeSubnets", "subnetId").await;
    subnets.truncate(2);
    let mut security_groups = ec2("DescribeSecurityGroups", "groupId").await;
    security_groups.truncate(1);
    Network {
        subnets,
        security_groups,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn infra_applies_into_moto_and_destroys_cleanly() {
    let Some(engine) = strato_testbed::modern_engine_or_skip("infra_applies_into_moto_and_destroys_cleanly")
    else {
        return;
    };
    let started = Instant::now();
    let tools = strato_testbed::tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"));
    let moto = strato_testbed::MotoServer::start(tools).unwrap_or_else(|e| panic!("{e}"));
    let dir = infra_copy();
    let example = dir.path().join("example");
    std::fs::write(example.join("moto_override.tf"), moto_override(&moto.endpoint)).unwrap();
    let zips = lambda_zips(dir.path());
    let network = default_network(&moto.endpoint).await;
    std::fs::write(
        example.join("test.tfvars.json"),
        sample_variables(&zips, &network).to_string(),
    )
    .unwrap();
    let run = |args: &[&str], ok: &[i32]| tf(engine, &example, args, &CREDS, ok);
    let vars = "-var-file=test.tfvars.json";

    run(&["init", "-backend=false", "-input=false", "-no-color"], &[0]);
    run(
        &["apply", "-auto-approve", "-input=false", "-no-color", vars],
        &[0],
    );
    let applied = Instant::now();
    infra_support::issuer::tls_only_bucket_refuses_plain_http_then_lift(&moto.endpoint).await;
    let state = State::parse(&run(&["show", "-json"], &[0]).stdout, "values");

    // A second plan changes nothing (moto's read-back artifacts aside, see above).
    let second = run(
        &[
            "plan",
            "-detailed-exitcode",
            "-input=false",
            "-no-color",
            vars,
            "-out=second.plan",
        ],
        &[0, 2],
    );
    let plan: Value = serde_json::from_slice(&run(&["show", "-json", "second.plan"], &[0]).stdout).unwrap();
    let unexpected = unexpected_changes(&plan);
    assert!(
        unexpected.is_empty(),
        "the second plan is not a no-op:\n{}\n{}",
        unexpected.join("\n"),
        String::from_utf8_lossy(&second.stdout)
    );
    let planned = State::from_module(&plan["planned_values"]["root_module"]);

    checks::all(&state, &planned.resources, &network);
    // The saved Logs Insights query, which moto cannot store, on a plan of it alone.
    run(
        &[
            "plan",
            "-input=false",
            "-no-color",
            vars,
            // The second plan has just refreshed every resource: this one and the two below check what the
            // configuration plans, so they skip a second refresh of ~160 resources against moto.
            "-refresh=false",
            "-var=logs_saved_query=true",
            "-target=module.observability.aws_cloudwatch_query_definition.operation",
            "-out=query.plan",
        ],
        &[0],
    );
    let query = State::parse(
        &run(&["show", "-json", "query.plan"], &[0]).stdout,
        "planned_values",
    );
    infra_support::observability::check_operation_query(&query, &state);

    let outputs: Value = serde_json::from_slice(&run(&["output", "-json"], &[0]).stdout).unwrap();
    let outputs: serde_json::Map<String, Value> = outputs
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["value"].clone()))
        .collect();
    // A null output is left out of `terraform output -json`.
    assert_eq!(
        outputs.get("console_url").unwrap_or(&Value::Null),
        &Value::Null,
        "the console is off unless enabled"
    );
    console_planned_on_the_deployment(&run, &example, &outputs);
    let names = strato_aws::resources::Names::new(PREFIX).unwrap();
    let published = infra_support::issuer::check_issuer(
        &state,
        &planned.resources,
        &names,
        &checks::functions(&state),
        outputs["oidc_issuer"].as_str().unwrap_or_default(),
    );
    infra_support::issuer::published_jwks_verifies_a_run_token(&published, &moto.endpoint).await;
    run(
        &[
            "plan",
            "-input=false",
            "-no-color",
            vars,
            "-refresh=false",
            "-var=oidc_issuer={enabled=false}",
            "-out=off.plan",
        ],
        &[0],
    );
    infra_support::issuer::check_issuer_off(
        &serde_json::from_slice(&run(&["show", "-json", "off.plan"], &[0]).stdout).unwrap(),
    );
    on_applied(&Value::Object(outputs), &moto.endpoint).await;

    run(
        &["destroy", "-auto-approve", "-input=false", "-no-color", vars],
        &[0],
    );
    let list = run(&["state", "list"], &[0]);
    assert!(
        list.stdout.is_empty(),
        "state after destroy:\n{}",
        String::from_utf8_lossy(&list.stdout)
    );
    let left = leftovers(&moto.endpoint).await;
    assert!(left.is_empty(), "destroy left in moto:\n{}", left.join("\n"));
    eprintln!(
        "infra_apply: {} resources applied in {:.0?}; whole test {:.0?}",
        state.resources.len(),
        applied.duration_since(started),
        started.elapsed()
    );
}
