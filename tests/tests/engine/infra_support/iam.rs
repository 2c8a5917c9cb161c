//! IAM policy evaluation for the infra checks: whether a policy document allows an action on a resource in a
//! request context (condition keys), and the request each `AwsCall` of a function's list makes against the
//! applied deployment (real ARNs read from its state).
//!
//! Follows IAM's rules as far as these policies use them: `*` wildcards in actions and resources, an
//! explicit Deny wins, every condition operator of a statement must hold, a key missing from the request
//! fails a plain operator and passes `ForAllValues:` (IAM's own pitfall, kept so a check cannot be fooled by
//! a condition AWS would not apply). An operator it does not know fails the check loudly.

use serde_json::Value;
use strato_aws::resources::Names;
use strato_calls::{AwsCall, Resource, glob};

use super::{ACCOUNT, PREFIX, REGION, State};

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
    // A negated operator (the engine boundary's StringNotLike) holds for a missing key, as in IAM.
    let (negated, op) = match op {
        "StringNotEquals" => (true, "StringEquals"),
        "StringNotLike" => (true, "StringLike"),
        "ArnNotLike" => (true, "ArnLike"),
        other => (false, other),
    };
    let matches = |value: &str| -> bool {
        let any = wanted.iter().any(|w| match op {
            "StringEquals" => w == value,
            "StringLike" | "ArnLike" | "ArnEquals" => glob(w, value),
            other => panic!("condition operator {other} is not implemented by the infra check"),
        });
        any != negated
    };
    let values = ctx.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    match (set, values) {
        (Some("ForAllValues"), None) => true,
        (Some("ForAllValues"), Some(v)) => v.iter().all(|x| matches(x)),
        (Some(_), None) => false,
        (Some(_), Some(v)) => v.iter().any(|x| matches(x)),
        (None, None) => if_exists || negated,
        (None, Some(v)) if negated => v.iter().all(|x| matches(x)),
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

/// The applied deployment's ARNs, by the logical names the call lists use.
pub struct World<'a> {
    pub state: &'a State,
    pub names: &'a Names,
}

impl World<'_> {
    pub fn table(&self, logical: &str) -> String {
        self.state
            .arn_of("aws_dynamodb_table", "name", &self.names.table(logical))
    }
    pub fn queue(&self, logical: &str) -> String {
        self.state
            .arn_of("aws_sqs_queue", "name", &self.names.queue(logical))
    }
    pub fn bucket(&self, logical: &str) -> String {
        format!("arn:aws:s3:::{}", self.names.bucket(logical))
    }
    pub fn role(&self, name: &str) -> String {
        self.state
            .arn_of("aws_iam_role", "name", &format!("{PREFIX}-{name}"))
    }
    pub fn cluster(&self) -> String {
        self.state
            .arn_of("aws_ecs_cluster", "name", &format!("{PREFIX}-runner"))
    }
    pub fn data_key(&self) -> String {
        self.state
            .by("aws_kms_alias", "name", &self.names.kms_alias())
            .s("target_key_arn")
            .to_owned()
    }
    /// The key `alias/<prefix>-oidc` points at (the signing generation).
    pub fn signing_key(&self) -> String {
        self.state
            .by("aws_kms_alias", "name", &self.names.oidc_key_alias())
            .s("target_key_arn")
            .to_owned()
    }
    pub fn ws_execution_arn(&self) -> String {
        self.state
            .by("aws_apigatewayv2_api", "name", &format!("{PREFIX}-ws"))
            .s("execution_arn")
            .to_owned()
    }
    pub fn account_arn(&self, service: &str, rest: &str) -> String {
        format!("arn:aws:{service}:{REGION}:{ACCOUNT}:{rest}")
    }
}

/// The requests (resource ARN, condition keys) an entry of a list stands for. A pattern (`tenants/*`) is
/// sent as is: a policy's wildcard covers it only if it covers every key the pattern stands for.
pub fn requests(c: &AwsCall, w: &World) -> Vec<(String, RequestContext)> {
    let cluster = || vec![("ecs:cluster", vec![w.cluster()])];
    match c.resource {
        // A key no statement limited to some keys could mean: such a statement does not cover a whole table.
        Resource::Table(t) => vec![(
            w.table(t),
            vec![("dynamodb:LeadingKeys", vec!["any-key".to_owned()])],
        )],
        Resource::TableKeys { table, bucket, keys } => vec![(
            w.table(table),
            vec![(
                "dynamodb:LeadingKeys",
                vec![format!("{}/{keys}", w.names.bucket(bucket))],
            )],
        )],
        Resource::Index(t, i) => vec![(format!("{}/index/{i}", w.table(t)), Vec::new())],
        Resource::Queue(q) => vec![(w.queue(q), Vec::new())],
        Resource::Bucket(b) => vec![(w.bucket(b), Vec::new())],
        Resource::Object(b, key) => vec![(format!("{}/{key}", w.bucket(b)), Vec::new())],
        Resource::RunnerTaskDefinition => vec![(
            w.account_arn("ecs", &format!("task-definition/{PREFIX}-runner:3")),
            cluster(),
        )],
        Resource::RunnerCluster => vec![(
            w.account_arn("ecs", &format!("task/{PREFIX}-runner/0123abcd")),
            cluster(),
        )],
        Resource::RunnerRoles => ["runner-task", "runner-execution"]
            .map(|r| {
                (
                    w.role(r),
                    vec![("iam:PassedToService", vec!["ecs-tasks.amazonaws.com".to_owned()])],
                )
            })
            .into(),
        Resource::Connections => vec![(
            format!("{}/live/POST/@connections/abc", w.ws_execution_arn()),
            Vec::new(),
        )],
        Resource::RunRoles => ["runner-state", "runner-engine"]
            .map(|r| (w.role(r), Vec::new()))
            .into(),
        Resource::DataKey => vec![(w.data_key(), Vec::new())],
        Resource::SigningKey => vec![(w.signing_key(), Vec::new())],
        Resource::TargetRoles => vec![(
            "arn:aws:iam::111122223333:role/strato-target".to_owned(),
            Vec::new(),
        )],
        // A named secret is the applied one (its ARN ends in AWS's random suffix); a pattern stands for any.
        Resource::Secret(name) if !name.contains('*') => {
            let arn = w.state.arn_of(
                "aws_secretsmanager_secret",
                "name",
                &format!("strato/{PREFIX}/{name}"),
            );
            vec![(arn, Vec::new())]
        }
        Resource::Secret(name) => vec![(
            w.account_arn("secretsmanager", &format!("secret:strato/{PREFIX}/{name}-AbCdEf")),
            Vec::new(),
        )],
    }
}

/// Every entry of `list` the policy does not allow, as "function X calls ACTION on RESOURCE but infra/ does
/// not allow it".
pub fn missing_grants(function: &str, policy: &Value, list: &[AwsCall], w: &World) -> Vec<String> {
    let mut out = Vec::new();
    for c in list {
        for (resource, ctx) in requests(c, w) {
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

/// Each function's list and the runner's, by function name ("runner": the runner's task role,
/// "runner-state": its per-run state role): the lists devstack checks recorded calls against, and the
/// state role's.
pub fn call_lists() -> Vec<(&'static str, &'static [AwsCall])> {
    let mut lists = crate::deployment_run::devstack_support::aws_call_lists().to_vec();
    lists.push(("runner-state", strato_runner::STATE_ROLE_CALLS));
    lists
}
