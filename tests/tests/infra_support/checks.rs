//! The consistency checks between infra/ (as applied) and the code: tables, queues, buckets and the data key
//! exactly those of `strato_aws::resources`; every function's environment accepted by its own
//! `Config::from_lookup` and holding nothing it does not read (the runner's container likewise); each queue
//! feeding its consumer with partial batch responses within its visibility timeout; HTTP and WebSocket routes;
//! schedules' input as the scheduler's `Tick`; ECS task state changes to the events queue; and the IAM
//! policies against each function's AWS_CALLS list and a few things they must not allow.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use strato_aws::calls::Resource;
use strato_aws::resources::{self, BUCKETS, Names, QUEUES, TABLES};
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};

use super::iam::{World, allows, allows_in, call_lists, missing_grants};
use super::{FUNCTIONS, Network, PREFIX, REGION, State, StateRes, first, json_attr};

/// Equal maps, or a failure naming what is missing, extra or different.
pub fn assert_same<V: PartialEq + std::fmt::Debug>(
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

fn opt(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

#[derive(Debug, PartialEq, Eq)]
struct TableShape {
    hash: String,
    range: Option<String>,
    indexes: BTreeSet<(String, String, Option<String>)>,
    ttl: Option<String>,
}

pub fn check_tables(state: &State, names: &Names) {
    let mut declared = BTreeMap::new();
    for r in state.all("aws_dynamodb_table") {
        let name = r.s("name").to_owned();
        assert_eq!(
            r.s("billing_mode"),
            "PAY_PER_REQUEST",
            "{name}: on-demand billing"
        );
        assert_eq!(
            r.block("point_in_time_recovery")["enabled"],
            true,
            "{name}: point-in-time recovery"
        );
        let indexes: BTreeSet<_> = r.values["global_secondary_index"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                assert_eq!(g["projection_type"], "ALL", "{name}: index projection");
                (
                    opt(&g["name"]).unwrap(),
                    opt(&g["hash_key"]).unwrap(),
                    opt(&g["range_key"]),
                )
            })
            .collect();
        let ttl = r.block("ttl");
        let shape = TableShape {
            hash: r.s("hash_key").to_owned(),
            range: opt(&r.values["range_key"]),
            ttl: (ttl["enabled"] == true).then(|| opt(&ttl["attribute_name"]).unwrap()),
            indexes,
        };
        // Exactly the key attributes are defined (DynamoDB rejects others), all strings.
        let attributes: BTreeMap<String, String> = r.values["attribute"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (opt(&a["name"]).unwrap(), opt(&a["type"]).unwrap()))
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
pub struct QueueShape {
    fifo: bool,
    pub visibility_timeout: u64,
    /// (DLQ name, max receive count)
    redrive: Option<(String, u64)>,
}

/// Applied queues by name, and ARN → name.
pub fn declared_queues(state: &State) -> (BTreeMap<String, QueueShape>, BTreeMap<String, String>) {
    let by_arn: BTreeMap<String, String> = state
        .all("aws_sqs_queue")
        .map(|r| (r.s("arn").to_owned(), r.s("name").to_owned()))
        .collect();
    let mut declared = BTreeMap::new();
    for r in state.all("aws_sqs_queue") {
        let name = r.s("name").to_owned();
        let redrive = opt(&r.values["redrive_policy"]).map(|p| {
            let p: Value = serde_json::from_str(&p).unwrap();
            let target = p["deadLetterTargetArn"].as_str().expect("deadLetterTargetArn");
            (
                by_arn[target].clone(),
                p["maxReceiveCount"].as_u64().expect("maxReceiveCount"),
            )
        });
        let shape = QueueShape {
            fifo: r.values["fifo_queue"] == true,
            visibility_timeout: r.values["visibility_timeout_seconds"].as_u64().unwrap(),
            redrive,
        };
        assert!(
            declared.insert(name.clone(), shape).is_none(),
            "queue {name} declared twice"
        );
    }
    (declared, by_arn)
}

pub fn check_queues(state: &State, names: &Names) {
    let (declared, _) = declared_queues(state);
    let mut expected = BTreeMap::new();
    for q in QUEUES {
        expected.insert(
            names.queue(q.logical),
            QueueShape {
                fifo: q.fifo,
                visibility_timeout: q.visibility_timeout_secs.into(),
                redrive: Some((names.dlq(q.logical), q.max_receive_count.into())),
            },
        );
        // A DLQ keeps SQS's default visibility timeout and redrives nowhere.
        expected.insert(
            names.dlq(q.logical),
            QueueShape {
                fifo: q.fifo,
                visibility_timeout: 30,
                redrive: None,
            },
        );
    }
    assert_same(
        &declared,
        &expected,
        "SQS queues in infra/ vs strato_aws::resources::QUEUES",
    );
    // Every DLQ has its alarm.
    let alarmed: BTreeSet<String> = state
        .all("aws_cloudwatch_metric_alarm")
        .map(|a| {
            a.values["dimensions"]["QueueName"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for q in QUEUES {
        assert!(
            alarmed.contains(&names.dlq(q.logical)),
            "no alarm on {}",
            names.dlq(q.logical)
        );
    }
}

/// The resource of `kind` attached to bucket `name` (versioning, encryption, lifecycle…), if any.
fn bucket_part<'a>(state: &'a State, kind: &str, name: &str) -> Option<&'a StateRes> {
    state.all(kind).find(|r| r.s("bucket") == name)
}

pub fn check_buckets(state: &State, names: &Names, data_key: &str) {
    let mut declared = BTreeMap::new();
    for r in state.all("aws_s3_bucket") {
        let name = r.s("bucket").to_owned();
        let def = BUCKETS
            .iter()
            .find(|b| names.bucket(b.logical) == name)
            .unwrap_or_else(|| panic!("{name}: not in resources::BUCKETS"));
        let versioned = bucket_part(state, "aws_s3_bucket_versioning", &name)
            .is_some_and(|v| v.block("versioning_configuration")["status"] == "Enabled");
        // Default encryption: Strato's key with bucket keys, or SSE-S3.
        let sse = bucket_part(state, "aws_s3_bucket_server_side_encryption_configuration", &name)
            .unwrap_or_else(|| panic!("{name}: default encryption"));
        let rules = sse.values["rule"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "{name}: one encryption rule");
        let by_default = first(&rules[0]["apply_server_side_encryption_by_default"]);
        if def.kms {
            assert_eq!(by_default["sse_algorithm"], "aws:kms", "{name}: SSE-KMS");
            assert_eq!(
                by_default["kms_master_key_id"], data_key,
                "{name}: encrypted with Strato's key"
            );
            assert_eq!(rules[0]["bucket_key_enabled"], true, "{name}: bucket keys");
        } else {
            assert_eq!(by_default["sse_algorithm"], "AES256", "{name}: SSE-S3");
        }
        let lifecycle = bucket_part(state, "aws_s3_bucket_lifecycle_configuration", &name);
        let has =
            |block: &str| {
                lifecycle.is_some_and(|l| {
                    l.values["rule"].as_array().unwrap().iter().any(|r| {
                        r["status"] == "Enabled" && r[block].as_array().is_some_and(|b| !b.is_empty())
                    })
                })
            };
        match def.expires {
            resources::Expiry::Never => assert!(lifecycle.is_none(), "{name}: no lifecycle rule"),
            resources::Expiry::NoncurrentVersions => {
                assert!(
                    has("noncurrent_version_expiration"),
                    "{name}: replaced versions expire"
                )
            }
            resources::Expiry::Objects => assert!(has("expiration"), "{name}: objects expire"),
        }
        // Closed to the public, TLS only.
        let block = bucket_part(state, "aws_s3_bucket_public_access_block", &name)
            .unwrap_or_else(|| panic!("{name}: no public access block"));
        for flag in [
            "block_public_acls",
            "block_public_policy",
            "ignore_public_acls",
            "restrict_public_buckets",
        ] {
            assert_eq!(block.values[flag], true, "{name}: {flag}");
        }
        let policy = json_attr(
            bucket_part(state, "aws_s3_bucket_policy", &name).unwrap_or_else(|| panic!("{name}: no policy")),
            "policy",
        );
        let tls = policy["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["Effect"] == "Deny" && s["Condition"]["Bool"]["aws:SecureTransport"] == "false");
        assert!(tls, "{name}: TLS only");
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
}

/// Strato's data key rotates, and its alias is the one the code names it by. Returns its ARN.
pub fn check_data_key(state: &State, names: &Names) -> String {
    let alias = state.by("aws_kms_alias", "name", &names.kms_alias());
    let key = state.by("aws_kms_key", "arn", alias.s("target_key_arn"));
    assert_eq!(key.values["enable_key_rotation"], true, "the data key rotates");
    key.s("arn").to_owned()
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

macro_rules! config_of {
    ($krate:ident) => {
        (|get| {
            $krate::Config::from_lookup(get)
                .map(drop)
                .map_err(|e| e.to_string())
        }) as FromLookup
    };
}

/// Each function's own configuration parser: the authority on what it requires.
pub fn function_configs() -> BTreeMap<&'static str, FromLookup> {
    BTreeMap::from([
        ("api", config_of!(strato_api)),
        ("dispatcher", config_of!(strato_dispatcher)),
        ("status", config_of!(strato_status)),
        ("ws", config_of!(strato_ws)),
        ("log-fanout", config_of!(strato_log_fanout)),
        ("scheduler", config_of!(strato_scheduler)),
        ("webhooks", config_of!(strato_webhooks)),
    ])
}

/// Read by the runtime rather than by `Config` (tracing's env filter).
const RUNTIME_VARS: &[&str] = &["RUST_LOG"];

/// A function as applied: environment, timeout, ARN.
pub struct Function {
    pub env: BTreeMap<String, String>,
    pub timeout: u64,
    pub arn: String,
    pub role: String,
}

/// Function name → what was applied; also checks runtime, architecture, handler, tracing and the zip path.
pub fn functions(state: &State) -> BTreeMap<String, Function> {
    let mut out = BTreeMap::new();
    for r in state.all("aws_lambda_function") {
        let name = r.s("function_name");
        let key = name
            .strip_prefix(&format!("{PREFIX}-"))
            .unwrap_or_else(|| panic!("{name}: not prefixed"));
        assert_eq!(r.s("handler"), "bootstrap", "{key}");
        assert_eq!(
            r.s("runtime"),
            "provided.al2023",
            "{key}: OS-only runtime on Amazon Linux 2023"
        );
        assert_eq!(r.values["architectures"], json!(["arm64"]), "{key}: arm64");
        assert_eq!(r.block("tracing_config")["mode"], "Active", "{key}: tracing");
        // cargo lambda writes target/lambda/<binary>/bootstrap.zip; binaries are strato-<function>.
        assert!(
            r.s("filename").ends_with(&format!("/strato-{key}/bootstrap.zip")),
            "{key}: zip path"
        );
        let env = r.block("environment")["variables"]
            .as_object()
            .unwrap_or_else(|| panic!("{key}: no environment"))
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let f = Function {
            env,
            timeout: r.values["timeout"].as_u64().unwrap(),
            arn: r.s("arn").to_owned(),
            role: r.s("role").to_owned(),
        };
        out.insert(key.to_owned(), f);
    }
    out
}

/// JSON logs into each function's own log group: from the planned values (`logging_config` does not survive
/// moto's read-back, see infra_apply.rs).
pub fn check_logging(planned: &[StateRes]) {
    let lambdas: Vec<&StateRes> = planned
        .iter()
        .filter(|r| r.kind == "aws_lambda_function")
        .collect();
    assert_eq!(lambdas.len(), FUNCTIONS.len());
    for r in lambdas {
        let logging = r.block("logging_config");
        assert_eq!(logging["log_format"], "JSON", "{}: JSON logs", r.address);
        assert_eq!(
            logging["log_group"],
            format!("/aws/lambda/{}", r.s("function_name")),
            "{}",
            r.address
        );
    }
}

pub fn check_function_environments(state: &State, network: &Network) -> BTreeMap<String, Function> {
    let fns = functions(state);
    let configs = function_configs();
    assert_eq!(
        fns.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        configs.keys().copied().collect(),
        "the seven control-plane functions"
    );
    for (name, from_lookup) in &configs {
        let env = &fns[*name].env;
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
        // Secrets reach functions only by reference, never as values in their (describable) environment.
        for var in strato_aws::secret_env::SECRET_VARS {
            assert!(
                !env.contains_key(*var),
                "{name}: {var} in plain text; give {var}_ARN"
            );
        }
    }
    let (api, ws) = (&fns["api"].env, &fns["ws"].env);
    let secret = |n: &str| {
        state.arn_of(
            "aws_secretsmanager_secret",
            "name",
            &format!("strato/{PREFIX}/{n}"),
        )
    };
    assert_eq!(api["STRATO_TENANT_CLAIM"], ws["STRATO_TENANT_CLAIM"]);
    assert_eq!(api["STRATO_AGENT_TOKEN_SECRET_ARN"], secret("agent-token-secret"));
    assert_eq!(ws["STRATO_JWT_SECRET_ARN"], secret("ws-jwt-secret"));
    assert_eq!(
        fns["dispatcher"].env["STRATO_RUN_PROOF_SECRET_ARN"],
        secret("run-proof-secret")
    );
    assert_eq!(
        fns["dispatcher"].env.get("STRATO_RUN_PROOF_SECRET_ARN"),
        fns["status"].env.get("STRATO_RUN_PROOF_SECRET_ARN"),
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
        api["STRATO_RUNNER_ROLE_ARN"],
        state.arn_of("aws_iam_role", "name", &format!("{PREFIX}-runner-task"))
    );
    assert_eq!(
        ws.get("STRATO_WS_MANAGEMENT_ENDPOINT"),
        fns["log-fanout"].env.get("STRATO_WS_MANAGEMENT_ENDPOINT")
    );
    let ws_api = state.by("aws_apigatewayv2_api", "name", &format!("{PREFIX}-ws"));
    let stage = state
        .all("aws_apigatewayv2_stage")
        .find(|s| s.s("api_id") == ws_api.s("id"))
        .expect("ws stage");
    assert_eq!(
        ws["STRATO_WS_MANAGEMENT_ENDPOINT"],
        format!(
            "https://{}.execute-api.{REGION}.amazonaws.com/{}",
            ws_api.s("id"),
            stage.s("name")
        ),
        "the @connections endpoint is the WebSocket API's stage"
    );
    let cluster = state.arn_of("aws_ecs_cluster", "name", &format!("{PREFIX}-runner"));
    let dispatcher = &fns["dispatcher"].env;
    assert_eq!(dispatcher["STRATO_RUNNER_CLUSTER"], cluster);
    assert_eq!(fns["scheduler"].env["STRATO_RUNNER_CLUSTER"], cluster);
    assert_eq!(
        dispatcher["STRATO_RUNNER_TASK_DEFINITION"],
        state
            .all("aws_ecs_task_definition")
            .next()
            .expect("task definition")
            .s("arn")
    );
    assert_eq!(dispatcher["STRATO_RUNNER_SUBNETS"], network.subnets.join(","));
    assert_eq!(
        dispatcher["STRATO_RUNNER_SECURITY_GROUPS"],
        network.security_groups.join(",")
    );
    fns
}

/// The runner's X-Ray daemon sidecar: not essential, listening where the runner's
/// `AWS_XRAY_DAEMON_ADDRESS` points (read by its telemetry, so taken out of `env` before the check of what
/// the runner's config reads), both within the task's memory, the task role allowed to send segments.
fn check_xray_sidecar(
    state: &State,
    td: &StateRes,
    containers: &[Value],
    runner: &Value,
    env: &mut BTreeMap<String, String>,
) {
    let daemon = containers
        .iter()
        .find(|c| c["name"] == "xray-daemon")
        .unwrap_or_else(|| panic!("no X-Ray daemon sidecar in {containers:?}"));
    assert_eq!(daemon["essential"], false, "a dead daemon must not stop a run");
    let address = env
        .remove(strato_aws::xray::DAEMON_ADDRESS_ENV)
        .expect("the runner is pointed at its sidecar");
    let address = strato_aws::xray::parse_daemon_address(&address).expect("a daemon address");
    assert!(address.ip().is_loopback(), "awsvpc: the sidecar is on localhost");
    assert_eq!(
        daemon["portMappings"][0],
        json!({"containerPort": address.port(), "protocol": "udp"})
    );
    let memory = |c: &Value| c["memory"].as_u64().expect("a hard memory limit");
    let task_memory: u64 = td.s("memory").parse().unwrap();
    assert!(
        memory(runner) + memory(daemon) <= task_memory,
        "the containers' hard limits exceed the task's memory"
    );
    assert!(
        memory(runner) >= task_memory - 128,
        "the runner keeps nearly all of it"
    );
    let policy = state.by("aws_iam_role_policy", "name", &format!("{PREFIX}-runner-task"));
    assert!(
        allows(&json_attr(policy, "policy"), "xray:PutTraceSegments", "*"),
        "the sidecar sends as the task role"
    );
}

pub fn check_runner(state: &State, dispatcher_env: &BTreeMap<String, String>) {
    let td = state
        .all("aws_ecs_task_definition")
        .next()
        .expect("the runner's task definition");
    assert_eq!(td.values["requires_compatibilities"], json!(["FARGATE"]));
    assert_eq!(td.s("network_mode"), "awsvpc");
    let platform = td.block("runtime_platform");
    assert_eq!(platform["cpu_architecture"], "ARM64", "arm64 Fargate");
    assert_eq!(platform["operating_system_family"], "LINUX");
    let defs = json_attr(td, "container_definitions");
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
            let value = e["value"]
                .as_str()
                .unwrap_or_else(|| panic!("ECS needs string values: {e}"));
            (e["name"].as_str().unwrap().to_owned(), value.to_owned())
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
    check_xray_sidecar(state, td, containers, runner, &mut env);
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
    let http = state.by("aws_apigatewayv2_api", "name", &format!("{PREFIX}-http"));
    assert_eq!(env["STRATO_CONTROL_PLANE_URL"], http.s("api_endpoint"));
    for (var, role) in [
        ("STRATO_STATE_ROLE_ARN", "runner-state"),
        ("STRATO_ENGINE_ROLE_ARN", "runner-engine"),
    ] {
        assert_eq!(
            env[var],
            state.arn_of("aws_iam_role", "name", &format!("{PREFIX}-{role}")),
            "{var}"
        );
    }
    assert_eq!(
        runner["logConfiguration"]["logDriver"], "awslogs",
        "runner logs go to CloudWatch"
    );
    // The image's repository: tags immutable, scanned on push, old images expire.
    let repo = state.by("aws_ecr_repository", "name", &format!("{PREFIX}-runner"));
    assert_eq!(repo.s("image_tag_mutability"), "IMMUTABLE");
    assert_eq!(repo.block("image_scanning_configuration")["scan_on_push"], true);
    assert!(
        runner["image"]
            .as_str()
            .unwrap()
            .starts_with(repo.s("repository_url")),
        "the runner runs from its repository"
    );
    assert!(
        state
            .all("aws_ecr_lifecycle_policy")
            .any(|p| p.s("repository") == repo.s("name"))
    );
}

/// Queue → the function that consumes it (README: architecture).
pub const CONSUMERS: &[(&str, &str)] = &[
    ("jobs", "dispatcher"),
    ("events", "status"),
    ("logs", "log-fanout"),
    ("webhooks", "webhooks"),
];

pub fn check_event_sources(state: &State, names: &Names, fns: &BTreeMap<String, Function>) {
    let (queues, by_arn) = declared_queues(state);
    let by_fn_arn: BTreeMap<&str, &str> = fns.iter().map(|(k, f)| (f.arn.as_str(), k.as_str())).collect();
    let mut mapped = BTreeMap::new();
    for m in state.all("aws_lambda_event_source_mapping") {
        assert_eq!(
            m.values["function_response_types"],
            json!(["ReportBatchItemFailures"]),
            "{}: partial batch responses",
            m.address
        );
        assert_eq!(m.values["enabled"], true, "{}", m.address);
        let batch = m.values["batch_size"].as_u64().expect("batch_size");
        assert!((1..=10).contains(&batch), "{}: SQS batch size {batch}", m.address);
        let queue = by_arn[m.s("event_source_arn")].clone();
        let function = by_fn_arn
            .get(m.s("function_arn"))
            .unwrap_or_else(|| panic!("{}: not one of the functions", m.address));
        if *function == "webhooks" {
            assert_eq!(
                batch,
                u64::from(strato_webhooks::BATCH_SIZE.unsigned_abs()),
                "the webhooks function's batch size (hanging receivers must fit its timeout)"
            );
        }
        assert!(
            mapped.insert(queue, (*function).to_owned()).is_none(),
            "{}: queue mapped twice",
            m.address
        );
    }
    let expected: BTreeMap<String, String> = CONSUMERS
        .iter()
        .map(|(q, f)| (names.queue(q), (*f).to_owned()))
        .collect();
    assert_eq!(mapped, expected, "queue → consuming function");
    for (logical, function) in CONSUMERS {
        let queue = &names.queue(logical);
        let visibility = queues[queue].visibility_timeout;
        let timeout = fns[*function].timeout;
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

fn routes_of(state: &State, api: &StateRes) -> Vec<StateRes> {
    state
        .all("aws_apigatewayv2_route")
        .filter(|r| r.s("api_id") == api.s("id"))
        .cloned()
        .collect()
}

fn integration_of<'a>(state: &'a State, api: &StateRes) -> &'a StateRes {
    let all: Vec<&StateRes> = state
        .all("aws_apigatewayv2_integration")
        .filter(|r| r.s("api_id") == api.s("id"))
        .collect();
    assert_eq!(all.len(), 1, "{}: one integration", api.s("name"));
    all[0]
}

pub fn check_http_api(state: &State, fns: &BTreeMap<String, Function>) {
    let api = state.by("aws_apigatewayv2_api", "name", &format!("{PREFIX}-http"));
    let integration = integration_of(state, api);
    assert_eq!(integration.s("payload_format_version"), "2.0");
    let api_fn = state.by("aws_lambda_function", "function_name", &format!("{PREFIX}-api"));
    assert_eq!(integration.s("integration_uri"), api_fn.s("invoke_arn"));
    assert!(fns.contains_key("api"));
    let mut declared: BTreeMap<String, String> = BTreeMap::new();
    for r in routes_of(state, api) {
        assert_eq!(r.s("target"), format!("integrations/{}", integration.s("id")));
        declared.insert(r.s("route_key").to_owned(), r.s("authorization_type").to_owned());
    }
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
        assert_eq!(
            declared[key],
            if open { "NONE" } else { "JWT" },
            "{} {} (route {key})",
            r.method,
            r.path
        );
        used.insert(key.clone());
    }
    let unused: Vec<&String> = declared.keys().filter(|k| !used.contains(*k)).collect();
    assert!(
        unused.is_empty(),
        "HTTP API routes the api does not serve: {unused:?}"
    );
    // Throttled, and access logs that join the function's logs on the Lambda request id.
    let stage = state
        .all("aws_apigatewayv2_stage")
        .find(|s| s.s("api_id") == api.s("id"))
        .expect("http stage");
    let limits = stage.block("default_route_settings");
    assert!(
        limits["throttling_rate_limit"].as_f64().unwrap() > 0.0,
        "HTTP API throttling"
    );
    let format: Value =
        serde_json::from_str(stage.block("access_log_settings")["format"].as_str().unwrap()).unwrap();
    for var in [
        "$context.requestId",
        "$context.integration.requestId",
        "$context.integrationErrorMessage",
        "$context.status",
    ] {
        assert!(
            format.as_object().unwrap().values().any(|v| v == var),
            "access logs carry {var}"
        );
    }
}

pub fn check_websocket_api(state: &State) {
    let api = state.by("aws_apigatewayv2_api", "name", &format!("{PREFIX}-ws"));
    assert_eq!(api.s("protocol_type"), "WEBSOCKET");
    assert_eq!(api.s("route_selection_expression"), "$request.body.action");
    let keys: BTreeSet<String> = routes_of(state, api)
        .iter()
        .map(|r| r.s("route_key").to_owned())
        .collect();
    let want: BTreeSet<String> = ["$connect", "$disconnect", "subscribe", "unsubscribe", "ping"]
        .map(String::from)
        .into();
    assert_eq!(keys, want, "WebSocket routes");
    let ws_fn = state.by("aws_lambda_function", "function_name", &format!("{PREFIX}-ws"));
    assert_eq!(
        integration_of(state, api).s("integration_uri"),
        ws_fn.s("invoke_arn")
    );
}

pub fn check_schedules_and_ecs_events(state: &State, names: &Names, fns: &BTreeMap<String, Function>) {
    let mut tasks = BTreeSet::new();
    for s in state.all("aws_scheduler_schedule") {
        let target = s.block("target");
        assert_eq!(target["arn"], fns["scheduler"].arn, "{}", s.address);
        let input = target["input"].as_str().unwrap();
        let tick: strato_scheduler::Tick =
            serde_json::from_str(input).unwrap_or_else(|e| panic!("{} input {input}: {e}", s.address));
        tasks.insert(format!("{:?}", tick.task));
        // The schedule's role may invoke the scheduler and nothing else.
        let role = state.by("aws_iam_role", "arn", target["role_arn"].as_str().unwrap());
        let policy = json_attr(state.by("aws_iam_role_policy", "role", role.s("name")), "policy");
        assert!(allows(&policy, "lambda:InvokeFunction", &fns["scheduler"].arn));
        assert!(!allows(&policy, "lambda:InvokeFunction", &fns["api"].arn));
    }
    assert_eq!(
        tasks,
        ["Drift", "Sweep"].map(String::from).into(),
        "both scheduler ticks"
    );

    let rule = state.by(
        "aws_cloudwatch_event_rule",
        "name",
        &format!("{PREFIX}-runner-task-stopped"),
    );
    let pattern = json_attr(rule, "event_pattern");
    assert_eq!(pattern["detail-type"], json!(["ECS Task State Change"]));
    let cluster = state.arn_of("aws_ecs_cluster", "name", &format!("{PREFIX}-runner"));
    assert_eq!(pattern["detail"]["clusterArn"], json!([cluster]));
    let target = state.by("aws_cloudwatch_event_target", "rule", rule.s("name"));
    let events = state.by("aws_sqs_queue", "name", &names.queue("events"));
    assert_eq!(
        target.s("arn"),
        events.s("arn"),
        "task state changes go to the events queue"
    );
    let queue_policy = json_attr(
        state.by("aws_sqs_queue_policy", "queue_url", events.s("url")),
        "policy",
    );
    let st = &queue_policy["Statement"][0];
    assert_eq!(st["Principal"]["Service"], "events.amazonaws.com");
    assert_eq!(
        st["Condition"]["ArnEquals"]["aws:SourceArn"],
        rule.s("arn"),
        "only this rule may send"
    );
}

/// A role's inline policy, by role name (`{prefix}-{name}`).
pub fn role_policy(state: &State, name: &str) -> Value {
    json_attr(
        state.by("aws_iam_role_policy", "role", &format!("{PREFIX}-{name}")),
        "policy",
    )
}

/// Each function's policy document.
pub fn function_policies(state: &State) -> BTreeMap<String, Value> {
    FUNCTIONS
        .iter()
        .map(|f| ((*f).to_owned(), role_policy(state, f)))
        .collect()
}

/// The policies beyond the call lists: own logs and traces, who may use the data key, consume and send to
/// which queue, the lock table's digest/lock split, the runner's reach. Long because each rule is one
/// assertion with its reason; kept together so the whole least-privilege picture reads in one place.
pub fn check_permissions(state: &State, names: &Names, fns: &BTreeMap<String, Function>) {
    let w = World { state, names };
    let policies = function_policies(state);
    for (key, f) in fns {
        assert_eq!(f.role, w.role(key), "{key} runs with its own role");
        let group = state.by(
            "aws_cloudwatch_log_group",
            "name",
            &format!("/aws/lambda/{PREFIX}-{key}"),
        );
        assert!(
            allows(
                &policies[key],
                "logs:PutLogEvents",
                &format!("{}:*", group.s("arn"))
            ),
            "{key} writes its own logs"
        );
        assert!(
            allows(&policies[key], "xray:PutTraceSegments", "*"),
            "{key} sends its traces"
        );
    }
    // Strato's data key: the api seals (and shows the tenant's external id), the functions that read SSE-KMS
    // artifacts decrypt; nobody else uses it.
    let key = w.data_key();
    for (function, actions) in [
        ("api", &["kms:GenerateDataKey", "kms:Decrypt"][..]),
        ("status", &["kms:Decrypt"][..]),
        ("ws", &["kms:Decrypt"][..]),
    ] {
        for action in actions {
            assert!(
                allows(&policies[function], action, &key),
                "{function} may not {action} on the data key"
            );
        }
    }
    for (function, policy) in &policies {
        if !["api", "status", "ws"].contains(&function.as_str()) {
            assert!(
                !allows(policy, "kms:Decrypt", &key),
                "{function} has no use for the data key"
            );
        }
    }
    assert!(!allows(&policies["status"], "kms:GenerateDataKey", &key));
    // A mapping is refused unless the function's role may consume its queue.
    for (queue, function) in CONSUMERS {
        for action in [
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        ] {
            assert!(
                allows(&policies[*function], action, &w.queue(queue)),
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
            .filter(|q| allows(&policies[function], "sqs:SendMessage", &w.queue(q)))
            .collect();
        assert_eq!(
            granted, listed,
            "queues {function} may send to (infra/ vs its AWS_CALLS)"
        );
    }
    assert!(
        !allows(&policies["webhooks"], "dynamodb:PutItem", &w.table("tenants")),
        "the webhooks function only reads tenants"
    );
    // Terraform's lock table: the runner's engine locks states; of the functions only the api writes there,
    // and only the state digests a restore puts back (`<state bucket>/tenants/*-md5`), nothing else.
    let state_bucket = names.bucket("state");
    let lock_key = |k: &str| vec![("dynamodb:LeadingKeys", vec![format!("{state_bucket}/{k}")])];
    let tf_locks = w.table("tf-locks");
    for (function, policy) in &policies {
        for action in [
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
        ] {
            let digest = lock_key("tenants/acme/clusters/cl-1/main.tfstate-md5");
            assert_eq!(
                allows_in(policy, action, &tf_locks, &digest),
                function == "api" && action == "dynamodb:PutItem",
                "{function} {action} on a state digest"
            );
            let lock = lock_key("tenants/acme/clusters/cl-1/main.tfstate");
            let may_delete_stale = function == "scheduler" && action == "dynamodb:DeleteItem";
            assert_eq!(
                allows_in(policy, action, &tf_locks, &lock),
                may_delete_stale,
                "{function} {action} on a state lock (only the scheduler, deleting a dead runner's lock)"
            );
        }
    }
    for action in ["dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query"] {
        assert!(
            !allows_in(&policies["api"], action, &tf_locks, &lock_key("x-md5")),
            "the api only writes digests: not {action}"
        );
    }

    let runner = role_policy(state, "runner-task");
    assert!(
        !allows(&runner, "dynamodb:PutItem", &w.table("operations")),
        "the runner reports through the events queue, it does not write operations"
    );
    // Tenants' state is reached only through the per-run state role, never with the task role.
    let state_object = format!("{}/tenants/acme/clusters/cl-1/cluster.tfstate", w.bucket("state"));
    for (action, resource) in [
        ("dynamodb:PutItem", tf_locks.as_str()),
        ("s3:GetObject", state_object.as_str()),
    ] {
        assert!(
            !allows(&runner, action, resource),
            "the task role may {action} on {resource}"
        );
    }
    for role in ["runner-state", "runner-engine"] {
        assert!(
            allows(&runner, "sts:AssumeRole", &w.role(role)),
            "the runner assumes {role} per run"
        );
    }
    let state_role = role_policy(state, "runner-state");
    for (action, resource) in [
        ("dynamodb:PutItem", tf_locks.as_str()),
        ("s3:PutObject", state_object.as_str()),
    ] {
        assert!(
            allows(&state_role, action, resource),
            "the state role may not {action} on {resource}"
        );
    }
    for action in ["kms:GenerateDataKey", "kms:Decrypt"] {
        assert!(
            allows(&runner, action, &key),
            "the runner opens sealed values and writes SSE-KMS objects: {action}"
        );
        assert!(!allows(
            &runner,
            action,
            "arn:aws:kms:us-east-1:111122223333:key/other"
        ));
    }
    let history = format!("{}/tenants/a/x.tfstate", w.bucket("state"));
    for (function, policy) in policies.iter().chain([(&"runner".to_owned(), &runner)]) {
        assert!(
            !allows(policy, "s3:DeleteObjectVersion", &history),
            "{function} could erase state history"
        );
    }
    for function in ["ws", "log-fanout", "webhooks"] {
        assert!(
            !allows(&policies[function], "s3:GetObject", &history),
            "{function} has no business with Terraform state"
        );
    }
}

/// Each function's IAM policy (and the runner's task and state roles) allows every call on that function's
/// AWS_CALLS list (kept beside its code; the devstack tests check the code against the list).
pub fn check_call_lists(state: &State, names: &Names) {
    let w = World { state, names };
    let mut policies = function_policies(state);
    policies.insert("runner".to_owned(), role_policy(state, "runner-task"));
    policies.insert("runner-state".to_owned(), role_policy(state, "runner-state"));
    let mut problems = Vec::new();
    for (function, list) in call_lists() {
        assert!(!list.is_empty(), "{function} has an empty AWS_CALLS list");
        problems.extend(missing_grants(function, &policies[function], list, &w));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every check on the applied state (`planned`: the resources of a plan of the same configuration, for what
/// moto does not read back).
pub fn all(state: &State, planned: &[StateRes], network: &Network) {
    let names = Names::new(PREFIX).unwrap();
    check_tables(state, &names);
    check_queues(state, &names);
    let key = check_data_key(state, &names);
    check_buckets(state, &names, &key);
    let fns = check_function_environments(state, network);
    check_logging(planned);
    check_runner(state, &fns["dispatcher"].env);
    check_event_sources(state, &names, &fns);
    check_http_api(state, &fns);
    check_websocket_api(state);
    check_schedules_and_ecs_events(state, &names, &fns);
    check_permissions(state, &names, &fns);
    check_call_lists(state, &names);
    super::observability::check_alarms(state);
    super::observability::check_dashboard(state);
    super::sessions::run_sessions_reach_only_their_own_cluster(state, &names);
}
