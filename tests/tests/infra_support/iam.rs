//! IAM policy evaluation for infra_check.rs: whether a policy document allows an action on a resource in a
//! request context (condition keys), and the sample request each `AwsCall` of a function's list makes in
//! the evaluated configuration's placeholder world (`<aws_dynamodb_table.templates.arn>` …).
//!
//! Follows IAM's rules as far as these policies use them: `*` wildcards in actions and resources, an
//! explicit Deny wins, every condition operator of a statement must hold, a key missing from the request
//! fails a plain operator and passes `ForAllValues:` (IAM's own pitfall, kept so a check cannot be fooled by
//! a condition AWS would not apply). An operator it does not know fails the check loudly.

use serde_json::Value;
use strato_aws::calls::{AwsCall, Resource, glob};

/// Condition keys of one request: key → values.
pub type RequestContext = Vec<(&'static str, Vec<String>)>;

fn list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
        Value::Null => Vec::new(),
        other => panic!("not a string or list: {other}"),
    }
}

/// Whether one operator (`StringLike`, `ForAllValues:StringLike`, `ArnEquals`…) holds for `key` = `wanted`.
fn operator_holds(op: &str, key: &str, wanted: &[String], ctx: &RequestContext) -> bool {
    let (set, op) = match op.split_once(':') {
        Some((set @ ("ForAllValues" | "ForAnyValue"), rest)) => (Some(set), rest),
        _ => (None, op),
    };
    let (op, if_exists) = op.strip_suffix("IfExists").map_or((op, false), |o| (o, true));
    let matches = |value: &str| -> bool {
        wanted.iter().any(|w| match op {
            "StringEquals" => w == value,
            "StringLike" | "ArnLike" | "ArnEquals" => glob(w, value),
            other => panic!("condition operator {other} is not implemented by the infra check"),
        })
    };
    let values = ctx.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    match (set, values) {
        (Some("ForAllValues"), None) => true,
        (Some("ForAllValues"), Some(v)) => v.iter().all(|x| matches(x)),
        (Some(_), None) => false,
        (Some(_), Some(v)) => v.iter().any(|x| matches(x)),
        (None, None) => if_exists,
        (None, Some(v)) => v.iter().any(|x| matches(x)),
    }
}

fn conditions_hold(condition: &Value, ctx: &RequestContext) -> bool {
    let Some(ops) = condition.as_object() else {
        return true;
    };
    ops.iter().all(|(op, keys)| {
        keys.as_object()
            .unwrap_or_else(|| panic!("condition {op}: {keys}"))
            .iter()
            .all(|(key, wanted)| operator_holds(op, key, &list(wanted), ctx))
    })
}

fn statement_applies(st: &Value, action: &str, resource: &str, ctx: &RequestContext) -> bool {
    assert!(
        st.get("NotAction").is_none() && st.get("NotResource").is_none(),
        "NotAction/NotResource are not implemented by the infra check: {st}"
    );
    list(&st["Action"]).iter().any(|a| glob(a, action))
        && list(&st["Resource"]).iter().any(|r| glob(r, resource))
        && conditions_hold(&st["Condition"], ctx)
}

/// Whether `policy` allows `action` on `resource` for a request with condition keys `ctx`.
pub fn allows_in(policy: &Value, action: &str, resource: &str, ctx: &RequestContext) -> bool {
    let statements = policy["Statement"].as_array().cloned().unwrap_or_default();
    let applying = |effect: &str| {
        statements
            .iter()
            .any(|st| st["Effect"] == effect && statement_applies(st, action, resource, ctx))
    };
    !applying("Deny") && applying("Allow")
}

/// [`allows_in`] for a request with no condition keys.
pub fn allows(policy: &Value, action: &str, resource: &str) -> bool {
    allows_in(policy, action, resource, &Vec::new())
}

fn table_arn(logical: &str) -> String {
    format!("<aws_dynamodb_table.{}.arn>", logical.replace('-', "_"))
}

const ACCOUNT_ARN: &str = "<data.aws_partition.current.partition>:{service}:eu-west-1:<data.aws_caller_identity.current.account_id>";

fn arn(service: &str, rest: &str) -> String {
    format!("arn:{}:{rest}", ACCOUNT_ARN.replace("{service}", service))
}

/// The requests (resource ARN, condition keys) an entry of a list stands for. A pattern (`tenants/*`) is
/// sent as is: a policy's wildcard covers it only if it covers every key the pattern stands for.
pub fn requests(c: &AwsCall) -> Vec<(String, RequestContext)> {
    let cluster = || vec![("ecs:cluster", vec!["<aws_ecs_cluster.runner.arn>".to_owned()])];
    match c.resource {
        // A key no statement limited to some keys could mean: such a statement does not cover a whole table.
        Resource::Table(t) => vec![(
            table_arn(t),
            vec![("dynamodb:LeadingKeys", vec!["any-key".to_owned()])],
        )],
        Resource::TableKeys { table, bucket, keys } => vec![(
            table_arn(table),
            vec![(
                "dynamodb:LeadingKeys",
                vec![format!("<aws_s3_bucket.{bucket}.bucket>/{keys}")],
            )],
        )],
        Resource::Index(t, i) => vec![(format!("{}/index/{i}", table_arn(t)), Vec::new())],
        Resource::Queue(q) => vec![(format!("<aws_sqs_queue.{q}.arn>"), Vec::new())],
        Resource::Bucket(b) => vec![(format!("<aws_s3_bucket.{b}.arn>"), Vec::new())],
        Resource::Object(b, key) => vec![(format!("<aws_s3_bucket.{b}.arn>/{key}"), Vec::new())],
        Resource::RunnerTaskDefinition => vec![(
            arn("ecs", "task-definition/<aws_ecs_task_definition.runner.family>:3"),
            cluster(),
        )],
        Resource::RunnerCluster => vec![(arn("ecs", "task/strato-check-runner/0123abcd"), cluster())],
        Resource::RunnerRoles => ["runner_task", "runner_execution"]
            .map(|r| {
                (
                    format!("<aws_iam_role.{r}.arn>"),
                    vec![("iam:PassedToService", vec!["ecs-tasks.amazonaws.com".to_owned()])],
                )
            })
            .into(),
        Resource::Connections => vec![(
            "<aws_apigatewayv2_api.ws.execution_arn>/live/POST/@connections/abc".to_owned(),
            Vec::new(),
        )],
        Resource::RunRoles => ["runner_state", "runner_engine"]
            .map(|r| (format!("<aws_iam_role.{r}.arn>"), Vec::new()))
            .into(),
        Resource::DataKey => vec![("<aws_kms_key.data.arn>".to_owned(), Vec::new())],
        Resource::TargetRoles => vec![(
            "arn:aws:iam::111122223333:role/strato-target".to_owned(),
            Vec::new(),
        )],
        Resource::Secret(name) => vec![(
            arn(
                "secretsmanager",
                &format!("secret:strato/strato-check/{name}-AbCdEf"),
            ),
            Vec::new(),
        )],
    }
}

/// Every entry of `list` the policy does not allow, as "function X calls ACTION on RESOURCE but infra/ does
/// not allow it".
pub fn missing_grants(function: &str, policy: &Value, list: &[AwsCall]) -> Vec<String> {
    let mut out = Vec::new();
    for c in list {
        for (resource, ctx) in requests(c) {
            if !allows_in(policy, c.action, &resource, &ctx) {
                out.push(format!(
                    "function {function} calls {} on {:?} ({resource}, {ctx:?}) but infra/ does not allow it",
                    c.action, c.resource
                ));
            }
        }
    }
    out
}

/// Each function's list and the runner's, by the key of `aws_iam_role_policy.function` ("runner": the
/// runner's task role).
pub fn call_lists() -> [(&'static str, &'static [AwsCall]); 9] {
    [
        ("api", strato_api::AWS_CALLS),
        ("dispatcher", strato_dispatcher::AWS_CALLS),
        ("status", strato_status::AWS_CALLS),
        ("ws", strato_ws::AWS_CALLS),
        ("log-fanout", strato_log_fanout::AWS_CALLS),
        ("scheduler", strato_scheduler::AWS_CALLS),
        ("webhooks", strato_webhooks::AWS_CALLS),
        ("runner", strato_runner::AWS_CALLS),
        ("runner-state", strato_runner::STATE_ROLE_CALLS),
    ]
}
