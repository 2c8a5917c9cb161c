//! Keeps `infra/` (the Terraform deploying Strato itself) honest:
//!
//! - `infra_matches_the_code`: parses `infra/*.tf` with hcl-rs and evaluates the attributes that matter with
//!   sample variable values (resources' own attributes become `<type.label.attr>` placeholders). Every table,
//!   queue and bucket of `strato_aws::resources` must be declared identically and nothing else; every
//!   function's environment must satisfy that function's own `Config::from_lookup` and hold only variables
//!   it reads (so the list of required variables is the code's, not a copy); the runner's container likewise;
//!   queues feed the right functions with partial batch responses; the HTTP routes cover the api's route
//!   table with the right authorization; the schedules' input parses as the scheduler's `Tick`; the IAM
//!   policies allow what the code is known to call (consumers their queue, the dispatcher RunTask/PassRole,
//!   the runner its state and lock table…), and each function's IAM policy (the runner's task role) allows
//!   every call of that function's `AWS_CALLS` list, kept beside its code and checked against the calls the
//!   code really makes by the devstack tests. The evaluator (IAM conditions included) is in `infra_support/`.
//! - `infra_validates_with_the_offline_engine`: `terraform fmt -check`, `init -backend=false` from the
//!   provider mirror, `validate`.
//! - `infra_plans_against_moto`: `terraform plan` with dummy function zips against moto, so variable
//!   handling, `for_each` keys and data sources are exercised too. Nothing is applied.

mod infra_support;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use hcl::eval::Evaluate;
use hcl::{Body, Value};
use infra_support::iam::{RequestContext, allows, allows_in, call_lists, missing_grants};
use infra_support::{
    Config, PREFIX, Res, as_string, attr, blocks, json, nested, placeholder_label, sample_variables,
    string_map, tf_files,
};
use strato_aws::calls::Resource;
use strato_aws::resources::{self, BUCKETS, Names, QUEUES, TABLES};
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};

/// Equal maps, or a failure naming what is missing, extra or different.
fn assert_same<V: PartialEq + std::fmt::Debug>(
    declared: &BTreeMap<String, V>,
    expected: &BTreeMap<String, V>,
    what: &str,
) {
    let mut problems = Vec::new();
    for (k, want) in expected {
        match declared.get(k) {
            None => problems.push(format!("missing {k}: {want:?}")),
            Some(got) if got != want => {
                problems.push(format!("{k}: infra/ has {got:?}, the code says {want:?}"))
            }
            Some(_) => {}
        }
    }
    for k in declared.keys().filter(|k| !expected.contains_key(*k)) {
        problems.push(format!("not in the code: {k}"));
    }
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

// ---- the checks -----------------------------------------------------------------------------------------

#[derive(Debug, PartialEq, Eq)]
struct TableShape {
    hash: String,
    range: Option<String>,
    indexes: BTreeSet<(String, String, Option<String>)>,
    ttl: Option<String>,
}

fn check_tables(cfg: &Config, names: &Names) {
    let mut declared: BTreeMap<String, TableShape> = BTreeMap::new();
    for r in cfg.all("aws_dynamodb_table") {
        let name = as_string(&cfg.eval_attr(r, "name"));
        let s = |body: &Body, key: &str| attr(body, key).map(|e| as_string(&e.evaluate(&cfg.ctx).unwrap()));
        assert_eq!(
            s(&r.body, "billing_mode").as_deref(),
            Some("PAY_PER_REQUEST"),
            "{name}: on-demand billing"
        );
        let pitr = nested(r, "point_in_time_recovery");
        assert!(
            pitr.len() == 1 && s(pitr[0], "enabled").as_deref() == Some("true"),
            "{name}: point-in-time recovery must be on"
        );
        let indexes: BTreeSet<(String, String, Option<String>)> = nested(r, "global_secondary_index")
            .into_iter()
            .map(|g| {
                assert_eq!(
                    s(g, "projection_type").as_deref(),
                    Some("ALL"),
                    "{name}: index projection"
                );
                (
                    s(g, "name").unwrap(),
                    s(g, "hash_key").unwrap(),
                    s(g, "range_key"),
                )
            })
            .collect();
        let ttl = nested(r, "ttl").into_iter().map(|t| {
            assert_eq!(s(t, "enabled").as_deref(), Some("true"), "{name}: ttl enabled");
            s(t, "attribute_name").unwrap()
        });
        let shape = TableShape {
            hash: s(&r.body, "hash_key").expect("hash_key"),
            range: s(&r.body, "range_key"),
            ttl: ttl.collect::<Vec<_>>().pop(),
            indexes,
        };
        // Exactly the key attributes are defined (DynamoDB rejects others), all strings.
        let attributes: BTreeMap<String, String> = nested(r, "attribute")
            .into_iter()
            .map(|a| (s(a, "name").unwrap(), s(a, "type").unwrap()))
            .collect();
        let mut keys: BTreeSet<String> = [shape.hash.clone()]
            .into_iter()
            .chain(shape.range.clone())
            .collect();
        for (_, pk, sk) in &shape.indexes {
            keys.insert(pk.clone());
            keys.extend(sk.clone());
        }
        assert_eq!(
            attributes.keys().cloned().collect::<BTreeSet<_>>(),
            keys,
            "{name}: attribute definitions"
        );
        assert!(
            attributes.values().all(|t| t == "S"),
            "{name}: key attributes are strings"
        );
        assert!(
            declared.insert(name.clone(), shape).is_none(),
            "table {name} declared twice"
        );
    }
    let expected: BTreeMap<String, TableShape> = TABLES
        .iter()
        .map(|t| {
            (
                names.table(t.logical),
                TableShape {
                    hash: t.pk.into(),
                    range: t.sk.map(Into::into),
                    indexes: t
                        .indexes
                        .iter()
                        .map(|i| (i.name.into(), i.pk.into(), i.sk.map(Into::into)))
                        .collect(),
                    ttl: t.ttl.map(Into::into),
                },
            )
        })
        .collect();
    assert_same(
        &declared,
        &expected,
        "DynamoDB tables in infra/ vs strato_aws::resources::TABLES",
    );
}

#[derive(Debug, PartialEq, Eq)]
struct QueueShape {
    fifo: bool,
    visibility_timeout: Option<u64>,
    /// (DLQ name, max receive count)
    redrive: Option<(String, u64)>,
}

/// Declared queues by name, and the label → name map.
fn declared_queues(cfg: &Config) -> (BTreeMap<String, QueueShape>, BTreeMap<String, String>) {
    let mut labels = BTreeMap::new();
    for r in cfg.all("aws_sqs_queue") {
        labels.insert(r.label.clone(), as_string(&cfg.eval_attr(r, "name")));
    }
    let mut declared = BTreeMap::new();
    for r in cfg.all("aws_sqs_queue") {
        let name = labels[&r.label].clone();
        let redrive = r.attr("redrive_policy").map(|_| {
            let p = json(&cfg.eval_attr(r, "redrive_policy"));
            let target = placeholder_label(
                "aws_sqs_queue",
                p["deadLetterTargetArn"].as_str().expect("deadLetterTargetArn"),
                "arn",
            );
            (
                labels[&target].clone(),
                p["maxReceiveCount"].as_u64().expect("maxReceiveCount"),
            )
        });
        let shape = QueueShape {
            fifo: r
                .attr("fifo_queue")
                .is_some_and(|_| cfg.eval_attr(r, "fifo_queue") == Value::Bool(true)),
            visibility_timeout: r
                .attr("visibility_timeout_seconds")
                .map(|_| cfg.eval_attr(r, "visibility_timeout_seconds").as_u64().unwrap()),
            redrive,
        };
        assert!(
            declared.insert(name.clone(), shape).is_none(),
            "queue {name} declared twice"
        );
    }
    (declared, labels)
}

fn check_queues(cfg: &Config, names: &Names) {
    let (declared, _) = declared_queues(cfg);
    let mut expected = BTreeMap::new();
    for q in QUEUES {
        expected.insert(
            names.queue(q.logical),
            QueueShape {
                fifo: q.fifo,
                visibility_timeout: Some(q.visibility_timeout_secs.into()),
                redrive: Some((names.dlq(q.logical), q.max_receive_count.into())),
            },
        );
        // A DLQ keeps the default visibility timeout and redrives nowhere.
        expected.insert(
            names.dlq(q.logical),
            QueueShape {
                fifo: q.fifo,
                visibility_timeout: None,
                redrive: None,
            },
        );
    }
    assert_same(
        &declared,
        &expected,
        "SQS queues in infra/ vs strato_aws::resources::QUEUES",
    );
}

fn check_buckets(cfg: &Config, names: &Names) {
    let mut declared = BTreeMap::new();
    let mut labels = BTreeMap::new();
    for r in cfg.all("aws_s3_bucket") {
        let name = as_string(&cfg.eval_attr(r, "bucket"));
        let versioned = nested(r, "versioning")
            .into_iter()
            .any(|v| attr(v, "enabled").map(|e| e.evaluate(&cfg.ctx).unwrap()) == Some(Value::Bool(true)));
        let sse = nested(r, "server_side_encryption_configuration");
        assert_eq!(sse.len(), 1, "{name}: default encryption");
        let def = BUCKETS
            .iter()
            .find(|b| names.bucket(b.logical) == name)
            .unwrap_or_else(|| panic!("{name}: not in resources::BUCKETS"));
        check_bucket_key_and_lifecycle(cfg, r, &name, def);
        labels.insert(r.label.clone(), name.clone());
        assert!(
            declared.insert(name.clone(), versioned).is_none(),
            "bucket {name} declared twice"
        );
    }
    let expected: BTreeMap<String, bool> = BUCKETS
        .iter()
        .map(|b| (names.bucket(b.logical), b.versioned))
        .collect();
    assert_same(
        &declared,
        &expected,
        "S3 buckets (name → versioned) in infra/ vs resources::BUCKETS",
    );

    // Every bucket is closed to the public.
    let mut blocked = BTreeSet::new();
    for r in cfg.all("aws_s3_bucket_public_access_block") {
        for (key, ctx) in cfg.instances(r) {
            for flag in [
                "block_public_acls",
                "block_public_policy",
                "ignore_public_acls",
                "restrict_public_buckets",
            ] {
                let v = r.attr(flag).map(|e| e.evaluate(&ctx).unwrap());
                assert_eq!(v, Some(Value::Bool(true)), "{}[{key}].{flag}", r.addr());
            }
            let bucket = as_string(&r.attr("bucket").unwrap().evaluate(&ctx).unwrap());
            blocked.insert(labels[&placeholder_label("aws_s3_bucket", &bucket, "id")].clone());
        }
    }
    assert_eq!(
        blocked,
        expected.keys().cloned().collect(),
        "buckets with a public access block"
    );
}

/// A bucket's default encryption (Strato's KMS key with bucket keys, or SSE-S3) and lifecycle rule agree with
/// its [`resources::BucketDef`].
fn check_bucket_key_and_lifecycle(cfg: &Config, r: &Res, name: &str, def: &resources::BucketDef) {
    let inner =
        |b: &'_ Body, ident: &str| -> Vec<Body> { blocks(b, ident).map(|x| x.body().clone()).collect() };
    let eval = |b: &Body, k: &str| attr(b, k).map(|e| e.evaluate(&cfg.ctx).unwrap());
    let sse = nested(r, "server_side_encryption_configuration");
    let rule = inner(sse[0], "rule");
    assert_eq!(rule.len(), 1, "{name}: one encryption rule");
    let by_default = inner(&rule[0], "apply_server_side_encryption_by_default");
    let algorithm = eval(&by_default[0], "sse_algorithm");
    if def.kms {
        assert_eq!(algorithm, Some(Value::from("aws:kms")), "{name}: SSE-KMS");
        assert_eq!(
            eval(&by_default[0], "kms_master_key_id"),
            Some(Value::from("<aws_kms_key.data.arn>")),
            "{name}: encrypted with Strato's key"
        );
        assert_eq!(
            eval(&rule[0], "bucket_key_enabled"),
            Some(Value::Bool(true)),
            "{name}: bucket keys"
        );
    } else {
        assert_eq!(algorithm, Some(Value::from("AES256")), "{name}: SSE-S3");
    }
    let rules = nested(r, "lifecycle_rule");
    let has = |block: &str| rules.iter().any(|l| !inner(l, block).is_empty());
    match def.expires {
        resources::Expiry::Never => assert!(rules.is_empty(), "{name}: no lifecycle rule"),
        resources::Expiry::NoncurrentVersions => {
            assert!(
                has("noncurrent_version_expiration"),
                "{name}: replaced versions expire"
            )
        }
        resources::Expiry::Objects => assert!(has("expiration"), "{name}: objects expire"),
    }
}

/// Strato's data key rotates, and its alias is the one the code names it by.
fn check_data_key(cfg: &Config, names: &Names) {
    let key = cfg
        .all("aws_kms_key")
        .find(|k| k.label == "data")
        .expect("aws_kms_key.data");
    assert_eq!(
        cfg.eval_attr(key, "enable_key_rotation"),
        Value::Bool(true),
        "the data key rotates"
    );
    let alias = cfg
        .all("aws_kms_alias")
        .find(|a| a.label == "data")
        .expect("aws_kms_alias.data");
    assert_eq!(as_string(&cfg.eval_attr(alias, "name")), names.kms_alias());
}

/// Runs `from_lookup` against an environment and returns the variables it asked for.
fn asked_for(
    env: &BTreeMap<String, String>,
    from_lookup: impl FnOnce(&dyn Fn(&str) -> Option<String>) -> Result<(), String>,
) -> Result<BTreeSet<String>, String> {
    let asked = RefCell::new(BTreeSet::new());
    let lookup = |k: &str| {
        asked.borrow_mut().insert(k.to_owned());
        // A secret given by reference, as strato_aws::secret_env resolves it at cold start.
        let reference = format!("{k}{}", strato_aws::secret_env::ARN_SUFFIX);
        if strato_aws::secret_env::SECRET_VARS.contains(&k) && env.contains_key(&reference) {
            asked.borrow_mut().insert(reference);
            return Some("resolved-from-secrets-manager-0123456789abcdef".to_owned());
        }
        env.get(k).cloned()
    };
    from_lookup(&lookup)?;
    Ok(asked.into_inner())
}

type FromLookup = fn(&dyn Fn(&str) -> Option<String>) -> Result<(), String>;

/// Each function's own configuration parser: the authority on what it requires.
fn function_configs() -> BTreeMap<&'static str, FromLookup> {
    BTreeMap::from([
        (
            "api",
            (|get| {
                strato_api::Config::from_lookup(get)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }) as FromLookup,
        ),
        ("dispatcher", |get| {
            strato_dispatcher::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        ("status", |get| {
            strato_status::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        ("ws", |get| {
            strato_ws::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        ("log-fanout", |get| {
            strato_log_fanout::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        ("scheduler", |get| {
            strato_scheduler::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        ("webhooks", |get| {
            strato_webhooks::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
    ])
}

/// Read by the runtime rather than by `Config` (tracing's env filter).
const RUNTIME_VARS: &[&str] = &["RUST_LOG"];

/// Function key → (environment, timeout); also checks runtime, handler and the zip path.
fn functions(cfg: &Config) -> BTreeMap<String, (BTreeMap<String, String>, u64)> {
    let lambdas: Vec<&Res> = cfg.all("aws_lambda_function").collect();
    assert_eq!(lambdas.len(), 1, "the functions are one for_each resource");
    let r = lambdas[0];
    let mut out = BTreeMap::new();
    for (key, ctx) in cfg.instances(r) {
        let eval = |k: &str| {
            r.attr(k)
                .unwrap_or_else(|| panic!("{}[{key}] has no {k}", r.addr()))
                .evaluate(&ctx)
                .unwrap_or_else(|e| panic!("{}[{key}].{k}: {e}", r.addr()))
        };
        assert_eq!(as_string(&eval("handler")), "bootstrap");
        assert!(
            as_string(&eval("runtime")).starts_with("provided."),
            "{key}: OS-only runtime"
        );
        assert_eq!(
            as_string(&eval("function_name")),
            format!("{PREFIX}-{key}"),
            "{key}: function name"
        );
        // cargo lambda writes target/lambda/<binary>/bootstrap.zip; binaries are strato-<function>.
        assert!(
            as_string(&eval("filename")).ends_with(&format!("/strato-{key}/bootstrap.zip")),
            "{key}: zip path"
        );
        let env_blocks = nested(r, "environment");
        assert_eq!(env_blocks.len(), 1, "{key}: one environment block");
        let env = attr(env_blocks[0], "variables")
            .expect("environment.variables")
            .evaluate(&ctx)
            .unwrap_or_else(|e| panic!("{key}: environment: {e}"));
        let timeout = eval("timeout").as_u64().expect("timeout");
        out.insert(key, (string_map(&env), timeout));
    }
    out
}

fn check_function_environments(cfg: &Config) -> BTreeMap<String, (BTreeMap<String, String>, u64)> {
    let fns = functions(cfg);
    let configs = function_configs();
    assert_eq!(
        fns.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        configs.keys().copied().collect(),
        "the six control-plane functions"
    );
    for (name, from_lookup) in &configs {
        let env = &fns[*name].0;
        let asked = asked_for(env, *from_lookup)
            .unwrap_or_else(|e| panic!("the {name} function refuses its infra/ environment: {e}"));
        let unknown: Vec<&String> = env
            .keys()
            .filter(|k| !asked.contains(*k) && !RUNTIME_VARS.contains(&k.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "{name}: infra/ sets {unknown:?}, which the function never reads (it reads {asked:?})"
        );
        assert_eq!(
            env.get("STRATO_RESOURCE_PREFIX").map(String::as_str),
            Some(PREFIX)
        );
        // Issue 16 finding 2: only devstack lets webhooks reach plain http or loopback receivers.
        for devstack_only in [
            strato_domain::webhook::ALLOW_HTTP_ENV,
            strato_domain::webhook::ALLOW_LOOPBACK_ENV,
        ] {
            assert!(
                !env.contains_key(devstack_only),
                "{name}: infra/ sets {devstack_only}"
            );
        }
    }
    // Values that must agree across functions and resources.
    let api = &fns["api"].0;
    let ws = &fns["ws"].0;
    assert_eq!(api.get("STRATO_TENANT_CLAIM"), ws.get("STRATO_TENANT_CLAIM"));
    // Secrets reach functions only by reference, never as values in their (describable) environment.
    for (name, (env, _)) in &fns {
        for var in strato_aws::secret_env::SECRET_VARS {
            assert!(
                !env.contains_key(*var),
                "{name}: {var} in plain text; give {var}_ARN"
            );
        }
    }
    assert_eq!(
        api.get("STRATO_AGENT_TOKEN_SECRET_ARN").map(String::as_str),
        Some("<aws_secretsmanager_secret.agent_token[0].arn>")
    );
    assert_eq!(
        ws.get("STRATO_JWT_SECRET_ARN").map(String::as_str),
        Some("<aws_secretsmanager_secret.ws_jwt.arn>")
    );
    assert_eq!(
        fns["dispatcher"].0.get("STRATO_RUN_PROOF_SECRET_ARN"),
        fns["status"].0.get("STRATO_RUN_PROOF_SECRET_ARN"),
        "status checks proofs with the dispatcher's key"
    );
    // The api signs WebSocket tickets with exactly what ws checks them with.
    for var in [
        "STRATO_JWT_SECRET_ARN",
        "STRATO_JWT_ISSUER",
        "STRATO_JWT_AUDIENCE",
    ] {
        assert_eq!(api.get(var), ws.get(var), "{var}: api and ws");
    }
    assert_eq!(
        ws.get("STRATO_WS_MANAGEMENT_ENDPOINT"),
        fns["log-fanout"].0.get("STRATO_WS_MANAGEMENT_ENDPOINT")
    );
    let endpoint = &ws["STRATO_WS_MANAGEMENT_ENDPOINT"];
    let stage = as_string(&cfg.eval_attr(cfg.get("aws_apigatewayv2_stage", "ws"), "name"));
    assert_eq!(
        endpoint,
        &format!("https://<aws_apigatewayv2_api.ws.id>.execute-api.eu-west-1.amazonaws.com/{stage}"),
        "the @connections endpoint is the WebSocket API's stage"
    );
    let dispatcher = &fns["dispatcher"].0;
    assert_eq!(
        dispatcher["STRATO_RUNNER_CLUSTER"],
        "<aws_ecs_cluster.runner.arn>"
    );
    assert_eq!(
        fns["scheduler"].0["STRATO_RUNNER_CLUSTER"],
        "<aws_ecs_cluster.runner.arn>"
    );
    assert_eq!(
        dispatcher["STRATO_RUNNER_TASK_DEFINITION"],
        "<aws_ecs_task_definition.runner.arn>"
    );
    assert_eq!(dispatcher["STRATO_RUNNER_SUBNETS"], "subnet-1,subnet-2");
    assert_eq!(dispatcher["STRATO_RUNNER_SECURITY_GROUPS"], "sg-1");
    fns
}

fn check_runner(cfg: &Config, dispatcher_env: &BTreeMap<String, String>) {
    let td = cfg.get("aws_ecs_task_definition", "runner");
    assert_eq!(
        cfg.eval_attr(td, "requires_compatibilities"),
        Value::Array(vec![Value::String("FARGATE".into())])
    );
    assert_eq!(as_string(&cfg.eval_attr(td, "network_mode")), "awsvpc");
    let defs = json(&cfg.eval_attr(td, "container_definitions"));
    let containers = defs.as_array().expect("container definitions are a list");
    let runner = containers
        .iter()
        .find(|c| c["name"].as_str() == dispatcher_env.get("STRATO_RUNNER_CONTAINER").map(String::as_str))
        .unwrap_or_else(|| {
            panic!("no container named by the dispatcher's STRATO_RUNNER_CONTAINER in {containers:?}")
        });
    let mut env: BTreeMap<String, String> = runner["environment"]
        .as_array()
        .expect("environment")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"]
                    .as_str()
                    .unwrap_or_else(|| panic!("ECS needs string values: {e}"))
                    .to_owned(),
            )
        })
        .collect();
    let secrets: Vec<String> = runner["secrets"]
        .as_array()
        .map(|s| s.iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    assert!(
        secrets.contains(&"STRATO_AGENT_TOKEN_SECRET".to_owned()),
        "the runner gets the agent token secret (from Secrets Manager)"
    );
    let set: Vec<String> = env.keys().cloned().chain(secrets.iter().cloned()).collect();
    for s in &secrets {
        env.insert(s.clone(), "from-secrets-manager".into());
    }
    // What the dispatcher sets per task as container overrides.
    env.insert(
        ENV_OPERATION_ID.into(),
        strato_domain::ids::OperationId::generate().to_string(),
    );
    env.insert(ENV_FENCING_TOKEN.into(), "1".into());
    env.insert(strato_domain::run_proof::ENV_RUN_PROOF.into(), "proof".into());
    let asked = asked_for(&env, |get| {
        strato_runner::Config::from_lookup(get)
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .unwrap_or_else(|e| panic!("the runner refuses its infra/ environment: {e}"));
    let unknown: Vec<&String> = set.iter().filter(|k| !asked.contains(*k)).collect();
    assert!(unknown.is_empty(), "the runner never reads {unknown:?}");
    assert_eq!(
        env["STRATO_CONTROL_PLANE_URL"],
        "<aws_apigatewayv2_api.http.api_endpoint>"
    );
    assert!(
        runner["logConfiguration"]["logDriver"] == "awslogs",
        "runner logs go to CloudWatch"
    );
}

/// Queue → the function that consumes it (README: architecture).
const CONSUMERS: &[(&str, &str)] = &[
    ("jobs", "dispatcher"),
    ("events", "status"),
    ("logs", "log-fanout"),
    ("webhooks", "webhooks"),
];

fn check_event_sources(cfg: &Config, names: &Names, fns: &BTreeMap<String, (BTreeMap<String, String>, u64)>) {
    assert_eq!(
        cfg.all("aws_lambda_event_source_mapping").count(),
        0,
        "provider 3.39 cannot set ReportBatchItemFailures on native mappings; they are in CloudFormation"
    );
    let (queues, queue_labels) = declared_queues(cfg);
    let stack = cfg.get("aws_cloudformation_stack", "event_sources");
    let template = json(&cfg.eval_attr(stack, "template_body"));
    let mut mapped = BTreeMap::new();
    for (id, res) in template["Resources"].as_object().expect("Resources") {
        assert_eq!(res["Type"], "AWS::Lambda::EventSourceMapping", "{id}");
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric()),
            "CloudFormation logical id {id}"
        );
        let p = &res["Properties"];
        assert_eq!(
            p["FunctionResponseTypes"],
            serde_json::json!(["ReportBatchItemFailures"]),
            "{id}: partial batch responses"
        );
        let batch = p["BatchSize"].as_u64().expect("BatchSize");
        assert!((1..=10).contains(&batch), "{id}: SQS batch size {batch}");
        let queue = queue_labels
            [&placeholder_label("aws_sqs_queue", p["EventSourceArn"].as_str().unwrap(), "arn")]
            .clone();
        let function = placeholder_label("aws_lambda_function", p["FunctionName"].as_str().unwrap(), "arn");
        let function = function
            .strip_prefix("fn[")
            .and_then(|f| f.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{id}: {function} is not one of the functions"))
            .to_owned();
        if function == "webhooks" {
            assert_eq!(
                batch,
                u64::from(strato_webhooks::BATCH_SIZE.unsigned_abs()),
                "{id}: the webhooks function's batch size (hanging receivers must fit its timeout)"
            );
        }
        assert!(
            mapped.insert(queue, function).is_none(),
            "{id}: queue mapped twice"
        );
    }
    let expected: BTreeMap<String, String> = CONSUMERS
        .iter()
        .map(|(q, f)| (names.queue(q), (*f).to_owned()))
        .collect();
    assert_eq!(mapped, expected, "queue → consuming function");
    for (logical, function) in CONSUMERS {
        let queue = &names.queue(logical);
        let visibility = queues[queue].visibility_timeout.unwrap();
        let timeout = fns[*function].1;
        assert!(
            timeout < visibility,
            "{function} may run {timeout} s, not less than {queue}'s visibility timeout {visibility} s"
        );
        // devstack stops a batch at the same timeout (shared::resources says which).
        assert_eq!(
            timeout,
            u64::from(resources::queue(logical).consumer_timeout_secs()),
            "{function}'s timeout"
        );
    }
}

fn check_http_api(cfg: &Config) {
    let routes = cfg.get("aws_apigatewayv2_route", "http");
    let mut declared: BTreeMap<String, String> = BTreeMap::new();
    for (key, ctx) in cfg.instances(routes) {
        let auth = as_string(&routes.attr("authorization_type").unwrap().evaluate(&ctx).unwrap());
        let target = as_string(&routes.attr("target").unwrap().evaluate(&ctx).unwrap());
        assert_eq!(target, "integrations/<aws_apigatewayv2_integration.api.id>");
        declared.insert(key, auth);
    }
    let integration = cfg.get("aws_apigatewayv2_integration", "api");
    assert_eq!(
        as_string(&cfg.eval_attr(integration, "payload_format_version")),
        "2.0"
    );
    assert_eq!(
        as_string(&cfg.eval_attr(integration, "integration_uri")),
        "<aws_lambda_function.fn[api].invoke_arn>"
    );
    // The most specific route wins: an exact method + path, else a greedy `{proxy+}` under its prefix.
    let matches = |key: &str, method: &str, path: &str| {
        let (m, p) = key.split_once(' ').unwrap();
        (m == method || m == "ANY")
            && match p.strip_suffix("{proxy+}") {
                Some(prefix) => path.starts_with(prefix) && path.len() > prefix.len(),
                None => p == path,
            }
    };
    let mut used = BTreeSet::new();
    for r in strato_api::ROUTES {
        let key = declared
            .keys()
            .filter(|k| matches(k, r.method, r.path))
            .min_by_key(|k| (k.contains("{proxy+}"), k.starts_with("ANY")))
            .unwrap_or_else(|| panic!("no HTTP API route reaches {} {}", r.method, r.path));
        use strato_api::Endpoint::*;
        let open = matches!(r.endpoint, Health | AgentRegister | AgentHeartbeat);
        let want = if open { "NONE" } else { "JWT" };
        assert_eq!(declared[key], want, "{} {} (route {key})", r.method, r.path);
        used.insert(key.clone());
    }
    let unused: Vec<&String> = declared.keys().filter(|k| !used.contains(*k)).collect();
    assert!(
        unused.is_empty(),
        "HTTP API routes the api does not serve: {unused:?}"
    );
}

fn check_websocket_api(cfg: &Config) {
    let api = cfg.get("aws_apigatewayv2_api", "ws");
    assert_eq!(as_string(&cfg.eval_attr(api, "protocol_type")), "WEBSOCKET");
    assert_eq!(
        as_string(&cfg.eval_attr(api, "route_selection_expression")),
        "$request.body.action"
    );
    let routes = cfg.get("aws_apigatewayv2_route", "ws");
    let keys: BTreeSet<String> = cfg
        .instances(routes)
        .into_iter()
        .map(|(_, ctx)| as_string(&routes.attr("route_key").unwrap().evaluate(&ctx).unwrap()))
        .collect();
    let want: BTreeSet<String> = ["$connect", "$disconnect", "subscribe", "unsubscribe", "ping"]
        .map(String::from)
        .into();
    assert_eq!(keys, want, "WebSocket routes");
    let integration = cfg.get("aws_apigatewayv2_integration", "ws");
    assert_eq!(
        as_string(&cfg.eval_attr(integration, "integration_uri")),
        "<aws_lambda_function.fn[ws].invoke_arn>"
    );
}

fn check_schedules_and_ecs_events(cfg: &Config, names: &Names) {
    let targets = cfg.get("aws_cloudwatch_event_target", "schedule");
    let mut tasks = BTreeSet::new();
    for (key, ctx) in cfg.instances(targets) {
        let arn = as_string(&targets.attr("arn").unwrap().evaluate(&ctx).unwrap());
        assert_eq!(arn, "<aws_lambda_function.fn[scheduler].arn>", "schedule {key}");
        let input = as_string(&targets.attr("input").unwrap().evaluate(&ctx).unwrap());
        let tick: strato_scheduler::Tick =
            serde_json::from_str(&input).unwrap_or_else(|e| panic!("schedule {key} input {input}: {e}"));
        tasks.insert(format!("{:?}", tick.task));
    }
    assert_eq!(
        tasks,
        ["Drift", "Sweep"].map(String::from).into(),
        "both scheduler ticks"
    );

    let rule = cfg.get("aws_cloudwatch_event_rule", "runner_task_stopped");
    let pattern = json(&cfg.eval_attr(rule, "event_pattern"));
    assert_eq!(
        pattern["detail-type"],
        serde_json::json!(["ECS Task State Change"])
    );
    assert_eq!(
        pattern["detail"]["clusterArn"],
        serde_json::json!(["<aws_ecs_cluster.runner.arn>"])
    );
    let target = cfg.get("aws_cloudwatch_event_target", "runner_task_stopped");
    let (_, labels) = declared_queues(cfg);
    let queue = placeholder_label("aws_sqs_queue", &as_string(&cfg.eval_attr(target, "arn")), "arn");
    assert_eq!(
        labels[&queue],
        names.queue("events"),
        "task state changes go to the events queue"
    );
}

/// Each function's policy document.
fn function_policies(cfg: &Config) -> BTreeMap<String, serde_json::Value> {
    let r = cfg.get("aws_iam_role_policy", "function");
    cfg.instances(r)
        .into_iter()
        .map(|(key, ctx)| {
            let policy = r
                .attr("policy")
                .unwrap()
                .evaluate(&ctx)
                .unwrap_or_else(|e| panic!("{key}: policy: {e}"));
            (key, json(&policy))
        })
        .collect()
}

fn check_permissions(cfg: &Config) {
    let policies = function_policies(cfg);
    let role = cfg.get("aws_lambda_function", "fn").attr("role").unwrap();
    for (key, ctx) in cfg.instances(cfg.get("aws_lambda_function", "fn")) {
        assert_eq!(
            as_string(&role.evaluate(&ctx).unwrap()),
            format!("<aws_iam_role.function[{key}].arn>"),
            "{key} runs with its own role"
        );
        assert!(
            allows(
                &policies[&key],
                "logs:PutLogEvents",
                &format!("<aws_cloudwatch_log_group.function[{key}].arn>:*")
            ),
            "{key} writes its own logs"
        );
    }
    // Strato's data key: the api seals (and shows the tenant's external id), the functions that read SSE-KMS
    // artifacts decrypt; nobody else uses it.
    let key = "<aws_kms_key.data.arn>";
    for (function, actions) in [
        ("api", &["kms:GenerateDataKey", "kms:Decrypt"][..]),
        ("status", &["kms:Decrypt"][..]),
        ("ws", &["kms:Decrypt"][..]),
    ] {
        for action in actions {
            assert!(
                allows(&policies[function], action, key),
                "{function} may not {action} on the data key"
            );
        }
    }
    for (function, policy) in &policies {
        if !["api", "status", "ws"].contains(&function.as_str()) {
            assert!(
                !allows(policy, "kms:Decrypt", key),
                "{function} has no use for the data key"
            );
        }
    }
    assert!(!allows(&policies["status"], "kms:GenerateDataKey", key));
    // A mapping is refused unless the function's role may consume its queue.
    for (queue, function) in CONSUMERS {
        for action in [
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        ] {
            assert!(
                allows(
                    &policies[*function],
                    action,
                    &format!("<aws_sqs_queue.{queue}.arn>")
                ),
                "{function} may not {action} on {queue}"
            );
        }
    }
    // Who sends to which queue: exactly what the functions' AWS_CALLS lists say (a missing grant breaks the
    // function, an extra one is not least privilege).
    for (function, list) in call_lists().into_iter().filter(|(f, _)| !f.starts_with("runner")) {
        let listed: BTreeSet<&str> = list
            .iter()
            .filter(|c| c.action == "sqs:SendMessage")
            .filter_map(|c| match c.resource {
                Resource::Queue(q) => Some(q),
                _ => None,
            })
            .collect();
        let granted: BTreeSet<&str> = QUEUES
            .iter()
            .map(|q| q.logical)
            .filter(|q| {
                allows(
                    &policies[function],
                    "sqs:SendMessage",
                    &format!("<aws_sqs_queue.{q}.arn>"),
                )
            })
            .collect();
        assert_eq!(
            granted, listed,
            "queues {function} may send to (infra/ vs its AWS_CALLS)"
        );
    }
    assert!(
        !allows(
            &policies["webhooks"],
            "dynamodb:PutItem",
            "<aws_dynamodb_table.tenants.arn>"
        ),
        "the webhooks function only reads tenants"
    );
    // Terraform's lock table: the runner's engine locks states; of the functions only the api writes there,
    // and only the state digests a restore puts back (`<state bucket>/tenants/*-md5`), nothing else.
    let lock_key = |k: &str| {
        vec![(
            "dynamodb:LeadingKeys",
            vec![format!("<aws_s3_bucket.state.bucket>/{k}")],
        )]
    };
    let tf_locks = "<aws_dynamodb_table.tf_locks.arn>";
    for (function, policy) in &policies {
        for action in [
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
        ] {
            let digest = lock_key("tenants/acme/clusters/cl-1/main.tfstate-md5");
            let allowed = allows_in(policy, action, tf_locks, &digest);
            assert_eq!(
                allowed,
                function == "api" && action == "dynamodb:PutItem",
                "{function} {action} on a state digest"
            );
            let lock = lock_key("tenants/acme/clusters/cl-1/main.tfstate");
            let may_delete_stale = function == "scheduler" && action == "dynamodb:DeleteItem";
            assert_eq!(
                allows_in(policy, action, tf_locks, &lock),
                may_delete_stale,
                "{function} {action} on a state lock (only the scheduler, deleting a dead runner's lock)"
            );
        }
    }
    for action in ["dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query"] {
        assert!(
            !allows_in(&policies["api"], action, tf_locks, &lock_key("x-md5")),
            "the api only writes digests: not {action}"
        );
    }

    let runner = runner_policy(cfg);
    assert!(
        !allows(&runner, "dynamodb:PutItem", "<aws_dynamodb_table.operations.arn>"),
        "the runner reports through the events queue, it does not write operations"
    );
    // Tenants' state is reached only through the per-run state role, never with the task role.
    for (action, resource) in [
        ("dynamodb:PutItem", "<aws_dynamodb_table.tf_locks.arn>"),
        (
            "s3:GetObject",
            "<aws_s3_bucket.state.arn>/tenants/acme/clusters/cl-1/cluster.tfstate",
        ),
    ] {
        assert!(
            !allows(&runner, action, resource),
            "the task role may {action} on {resource}"
        );
    }
    for role in ["runner_state", "runner_engine"] {
        assert!(
            allows(&runner, "sts:AssumeRole", &format!("<aws_iam_role.{role}.arn>")),
            "the runner assumes {role} per run"
        );
    }
    let state = cfg.get("aws_iam_role_policy", "runner_state");
    let state = json(&cfg.eval_attr(state, "policy"));
    for (action, resource) in [
        ("dynamodb:PutItem", "<aws_dynamodb_table.tf_locks.arn>"),
        (
            "s3:PutObject",
            "<aws_s3_bucket.state.arn>/tenants/acme/clusters/cl-1/cluster.tfstate",
        ),
    ] {
        assert!(
            allows(&state, action, resource),
            "the state role may not {action} on {resource}"
        );
    }
    for action in ["kms:GenerateDataKey", "kms:Decrypt"] {
        assert!(
            allows(&runner, action, "<aws_kms_key.data.arn>"),
            "the runner opens sealed values and writes SSE-KMS objects: {action}"
        );
        assert!(!allows(
            &runner,
            action,
            "arn:aws:kms:us-east-1:111122223333:key/other"
        ));
    }
    for (function, policy) in policies.iter().chain([(&"runner".to_owned(), &runner)]) {
        assert!(
            !allows(
                policy,
                "s3:DeleteObjectVersion",
                "<aws_s3_bucket.state.arn>/tenants/a/x.tfstate"
            ),
            "{function} could erase state history"
        );
    }
    for function in ["ws", "log-fanout", "webhooks"] {
        assert!(
            !allows(
                &policies[function],
                "s3:GetObject",
                "<aws_s3_bucket.state.arn>/tenants/a/x.tfstate"
            ),
            "{function} has no business with Terraform state"
        );
    }
}

fn runner_policy(cfg: &Config) -> serde_json::Value {
    let runner = cfg.get("aws_iam_role_policy", "runner_task");
    json(&cfg.eval_attr(runner, "policy"))
}

/// Each function's IAM policy (and the runner's task role) allows every call on that function's AWS_CALLS
/// list (kept beside its code; the devstack tests check the code against the list).
fn check_call_lists(cfg: &Config) {
    let mut policies = function_policies(cfg);
    policies.insert("runner".to_owned(), runner_policy(cfg));
    let state = cfg.get("aws_iam_role_policy", "runner_state");
    policies.insert("runner-state".to_owned(), json(&cfg.eval_attr(state, "policy")));
    let mut problems = Vec::new();
    for (function, list) in call_lists() {
        assert!(!list.is_empty(), "{function} has an empty AWS_CALLS list");
        problems.extend(missing_grants(function, &policies[function], list));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn infra_matches_the_code() {
    let cfg = Config::load();
    let names = Names::new(PREFIX).unwrap();
    check_tables(&cfg, &names);
    check_queues(&cfg, &names);
    check_buckets(&cfg, &names);
    check_data_key(&cfg, &names);
    let fns = check_function_environments(&cfg);
    check_runner(&cfg, &fns["dispatcher"].0);
    check_event_sources(&cfg, &names, &fns);
    check_http_api(&cfg);
    check_websocket_api(&cfg);
    check_schedules_and_ecs_events(&cfg, &names);
    check_permissions(&cfg);
    check_call_lists(&cfg);
    // Not an error in itself, but a local the checks may need: say which, so a failure above is explained.
    eprintln!("locals not evaluated by the check: {:?}", cfg.unresolved_locals);
}

// ---- the engine -----------------------------------------------------------------------------------------

fn tf(dir: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let tools = strato_testbed::tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"));
    let out = Command::new(&tools.terraform)
        .args(args)
        .current_dir(dir)
        .envs(tools.engine_env())
        .envs(extra_env.iter().copied())
        .output()
        .expect("running the engine");
    if !out.status.success() {
        // The engine's debug log is on stderr; its error lines are the ones without a log level.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with('[') && !l.starts_with("  "))
            .collect();
        panic!(
            "terraform {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            errors.join("\n")
        );
    }
    out
}

/// A copy of infra/ (the engine writes `.terraform/` next to the configuration).
fn infra_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in tf_files() {
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn infra_validates_with_the_offline_engine() {
    let dir = infra_copy();
    tf(dir.path(), &["fmt", "-check", "-diff", "-no-color"], &[]);
    tf(
        dir.path(),
        &["init", "-backend=false", "-input=false", "-no-color"],
        &[],
    );
    let out = tf(dir.path(), &["validate", "-no-color"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("The configuration is valid"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn infra_plans_against_moto() {
    let moto = strato_testbed::shared_moto();
    let dir = infra_copy();
    std::fs::write(
        dir.path().join("strato_provider_override.tf.json"),
        strato_domain::render::aws_provider_override_tf_json(&moto.endpoint).unwrap(),
    )
    .unwrap();
    // Stand-ins for `cargo lambda build` output: plan only hashes them.
    let zips = dir.path().join("lambda");
    for f in function_configs().keys() {
        let d = zips.join(format!("strato-{f}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bootstrap.zip"), format!("not a zip: {f}")).unwrap();
    }
    let mut vars: serde_json::Map<String, serde_json::Value> = sample_variables()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    vars.insert("lambda_zip_dir".into(), zips.display().to_string().into());
    std::fs::write(
        dir.path().join("check.tfvars.json"),
        serde_json::Value::Object(vars).to_string(),
    )
    .unwrap();
    let creds = [
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "eu-west-1"),
    ];
    tf(
        dir.path(),
        &["init", "-backend=false", "-input=false", "-no-color"],
        &creds,
    );
    tf(
        dir.path(),
        &[
            "plan",
            "-input=false",
            "-no-color",
            "-var-file=check.tfvars.json",
            "-out=check.plan",
        ],
        &creds,
    );
    let shown = tf(dir.path(), &["show", "-json", "check.plan"], &creds);
    let text = String::from_utf8_lossy(&shown.stdout);
    // This engine prefixes some stdout writes with `o:`.
    let plan: serde_json::Value =
        serde_json::from_str(text.trim_start().trim_start_matches("o:")).expect("plan JSON");
    let changes = plan["resource_changes"].as_array().expect("resource_changes");
    let mut by_type: BTreeMap<String, usize> = BTreeMap::new();
    for c in changes {
        assert_eq!(
            c["change"]["actions"],
            serde_json::json!(["create"]),
            "{}",
            c["address"]
        );
        *by_type.entry(c["type"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    let count = |t: &str| by_type.get(t).copied().unwrap_or(0);
    assert_eq!(count("aws_dynamodb_table"), TABLES.len(), "{by_type:?}");
    assert_eq!(count("aws_sqs_queue"), 2 * QUEUES.len(), "{by_type:?}");
    assert_eq!(count("aws_s3_bucket"), BUCKETS.len(), "{by_type:?}");
    assert_eq!(
        count("aws_lambda_function"),
        function_configs().len(),
        "{by_type:?}"
    );
    assert_eq!(
        count("aws_secretsmanager_secret"),
        3,
        "agent token, ws ticket and run-proof secrets: {by_type:?}"
    );
    // Planned values known before apply: the webhooks function's environment as it will see it (the api's
    // holds secrets' ARNs, known only after apply).
    let webhooks = changes
        .iter()
        .find(|c| c["address"] == "aws_lambda_function.fn[\"webhooks\"]")
        .expect("the webhooks function is planned");
    let env = &webhooks["change"]["after"]["environment"][0]["variables"];
    assert_eq!(env["STRATO_RESOURCE_PREFIX"], PREFIX);
    assert_eq!(env["RUST_LOG"], "info", "{env}");
}

/// The per-run session policies the runner passes when it assumes its run roles (strato_domain::run_access),
/// evaluated as AWS does: a session may do what both the role's policy (infra/) and the session policy allow.
/// The state session reaches its own cluster's state and lock items and nothing of another tenant's or
/// cluster's; the engine session nothing of the deployment's own.
#[test]
fn run_sessions_reach_only_their_own_cluster() {
    use strato_domain::run_access::{StateScope, engine_session_policy, state_session_policy};
    let cfg = Config::load();
    let names = Names::new(PREFIX).unwrap();
    let role = json(&cfg.eval_attr(cfg.get("aws_iam_role_policy", "runner_state"), "policy"));
    let (bucket, table) = (names.bucket("state"), names.table("tf-locks"));
    let (acme, other): (strato_domain::ids::TenantId, strato_domain::ids::TenantId) =
        ("acme".parse().unwrap(), "globex".parse().unwrap());
    let (cluster, sibling) = (
        strato_domain::ids::ClusterId::generate(),
        strato_domain::ids::ClusterId::generate(),
    );
    let session = state_session_policy(&StateScope {
        partition: "aws",
        bucket: &bucket,
        lock_table: &table,
        tenant: &acme,
        cluster: &cluster,
    });
    // infra/'s placeholders for the bucket and table, as the role's policy names them.
    let role_view = |arn: String| {
        arn.replace(&format!("arn:aws:s3:::{bucket}"), "<aws_s3_bucket.state.arn>")
            .replace(
                &format!("arn:aws:dynamodb:eu-west-1:123456789012:table/{table}"),
                "<aws_dynamodb_table.tf_locks.arn>",
            )
    };
    let both = |action: &str, arn: String, ctx: RequestContext| {
        let role_ctx: RequestContext = ctx
            .iter()
            .map(|(k, v)| {
                let v = v
                    .iter()
                    .map(|x| x.replace(&bucket, "<aws_s3_bucket.state.bucket>"))
                    .collect();
                (*k, v)
            })
            .collect();
        let (in_session, in_role) = (
            allows_in(&session, action, &arn, &ctx),
            allows_in(&role, action, &role_view(arn.clone()), &role_ctx),
        );
        if std::env::var_os("STRATO_DEBUG_SESSIONS").is_some() {
            eprintln!("{action} {arn} {ctx:?}: session {in_session}, role {in_role} ({role_ctx:?})");
        }
        in_session && in_role
    };
    let object = |t: &strato_domain::ids::TenantId, c: &strato_domain::ids::ClusterId| {
        format!("arn:aws:s3:::{bucket}/tenants/{t}/clusters/{c}/main.tfstate")
    };
    let lock = |t: &strato_domain::ids::TenantId, c: &strato_domain::ids::ClusterId, suffix: &str| {
        vec![(
            "dynamodb:LeadingKeys",
            vec![format!("{bucket}/tenants/{t}/clusters/{c}/main.tfstate{suffix}")],
        )]
    };
    let table_arn = format!("arn:aws:dynamodb:eu-west-1:123456789012:table/{table}");
    for action in ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"] {
        assert!(
            both(action, object(&acme, &cluster), Vec::new()),
            "own state: {action}"
        );
        assert!(
            !both(action, object(&acme, &sibling), Vec::new()),
            "a sibling cluster's state: {action}"
        );
        assert!(
            !both(action, object(&other, &sibling), Vec::new()),
            "another tenant's state: {action}"
        );
    }
    for action in ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"] {
        for suffix in ["", "-md5"] {
            assert!(
                both(action, table_arn.clone(), lock(&acme, &cluster, suffix)),
                "own lock{suffix}: {action}"
            );
            assert!(
                !both(action, table_arn.clone(), lock(&other, &sibling, suffix)),
                "another tenant's lock{suffix}: {action}"
            );
        }
    }
    let list_prefix = |p: String| vec![("s3:prefix", vec![p])];
    let bucket_arn = format!("arn:aws:s3:::{bucket}");
    assert!(both(
        "s3:ListBucket",
        bucket_arn.clone(),
        list_prefix(format!("tenants/acme/clusters/{cluster}/workspaces/"))
    ));
    assert!(
        !both(
            "s3:ListBucket",
            bucket_arn.clone(),
            list_prefix("tenants/".into())
        ),
        "listing every tenant"
    );
    assert!(!both(
        "s3:ListBucket",
        bucket_arn,
        list_prefix(format!("tenants/globex/clusters/{sibling}/"))
    ));
    assert!(
        !allows(&session, "dynamodb:Scan", &table_arn),
        "a scan reads every lock"
    );
    assert!(!allows(
        &session,
        "s3:GetObject",
        &format!("arn:aws:s3:::{}/logs/x", names.bucket("artifacts"))
    ));

    // The providers' session: whatever the engine role's policies allow, nothing of the deployment's own.
    let engine = engine_session_policy("aws", PREFIX);
    for (action, arn) in [
        ("s3:GetObject", object(&other, &sibling)),
        (
            "dynamodb:GetItem",
            format!(
                "arn:aws:dynamodb:eu-west-1:123456789012:table/{}",
                names.table("operations")
            ),
        ),
        (
            "sqs:SendMessage",
            format!("arn:aws:sqs:eu-west-1:123456789012:{}", names.queue("events")),
        ),
        (
            "secretsmanager:GetSecretValue",
            format!("arn:aws:secretsmanager:eu-west-1:123456789012:secret:strato/{PREFIX}/clusters/x-AbCdEf"),
        ),
    ] {
        assert!(
            !allows(&engine, action, &arn),
            "the engine session may {action} on {arn}"
        );
    }
    assert!(
        allows(&engine, "ec2:CreateVpc", "*"),
        "what the engine role allows stays allowed"
    );
    assert!(allows(
        &engine,
        "s3:CreateBucket",
        "arn:aws:s3:::a-tenants-own-bucket"
    ));
}
