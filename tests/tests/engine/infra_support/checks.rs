//! The consistency checks between infra/ (as applied) and the code: tables, queues, buckets and the data key
//! exactly those of `strato_aws::resources`; every function's environment accepted by its own
//! `Config::from_lookup` and holding nothing it does not read (the runner's container likewise); each queue
//! feeding its consumer with partial batch responses within its visibility timeout; HTTP and WebSocket routes;
//! schedules' input as the scheduler's `Tick`; ECS task state changes to the events queue; and the IAM
//! policies against each function's AWS_CALLS list and a few things they must not allow.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use strato_aws::resources::{self, Names};

pub use super::data_checks::*;
use super::iam::allows;
pub use super::permissions_checks::*;
pub use super::runner_checks::*;
use super::{FUNCTIONS, Network, PREFIX, REGION, State, StateRes, json_attr};

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

pub fn opt(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

#[derive(Debug, PartialEq, Eq)]
pub struct TableShape {
    pub hash: String,
    pub range: Option<String>,
    pub indexes: BTreeSet<(String, String, Option<String>)>,
    pub ttl: Option<String>,
}

/// Runs `from_lookup` against an environment and returns the variables it asked for.
pub fn asked_for(
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
        if *function == "dispatcher" {
            assert_eq!(
                batch,
                u64::from(strato_dispatcher::BATCH_SIZE.unsigned_abs()),
                "the dispatcher's batch size (a job behind its cluster's earlier job must not lose deliveries)"
            );
        }
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
    for r in strato_api::routes::ROUTES {
        let key = declared
            .keys()
            .filter(|k| matches(k, r.method, r.path))
            .min_by_key(|k| (k.contains("{proxy+}"), k.starts_with("ANY")))
            .unwrap_or_else(|| panic!("no HTTP API route reaches {} {}", r.method, r.path));
        // Routes without a tenant scope: liveness, and the agent's own token.
        let open = r.scope().is_none();
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
