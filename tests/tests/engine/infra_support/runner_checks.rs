//! The runner's task definition as applied: its container's environment accepted by the runner's own config
//! and nothing more, its X-Ray daemon sidecar, its logs, its image repository.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};

use super::checks::*;
use super::iam::allows;
use super::{PREFIX, State, StateRes, json_attr};

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
        .remove(strato_telemetry::xray::DAEMON_ADDRESS_ENV)
        .expect("the runner is pointed at its sidecar");
    let address = strato_telemetry::xray::parse_daemon_address(&address).expect("a daemon address");
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
    ("rollouts", "api"),
];
