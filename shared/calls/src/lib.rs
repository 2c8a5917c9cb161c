//! The AWS calls each function's code makes, as IAM sees them: an action on a resource named logically (the
//! tables, queues and buckets of [`strato_aws::resources`], the runner's ECS task definition and cluster, the
//! WebSocket API's connections…). Each function crate keeps its list beside its code (`AWS_CALLS`);
//! `tests/tests/engine/infra_apply.rs` evaluates each function's IAM policy in `infra/` against that list, and the
//! devstack flow test records the calls the code really makes ([`recorder::CallRecorder`]) and checks each
//! is on the list. So a call without a grant fails CI twice: the code is checked against the list, the list
//! against `infra/`.

pub mod recorder;

use serde::{Deserialize, Serialize};

use strato_aws::resources::Names;

/// One IAM action on one resource, e.g. `dynamodb:Scan` on `Table("templates")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsCall {
    /// The IAM action (`service:Action`), not the SDK operation: a TransactWriteItems is listed as the
    /// PutItem/UpdateItem/DeleteItem/ConditionCheckItem of each item, a CopyObject as PutObject on the
    /// destination and GetObjectVersion on the source.
    pub action: &'static str,
    pub resource: Resource,
}

/// Shorthand for list entries.
pub const fn call(action: &'static str, resource: Resource) -> AwsCall {
    AwsCall { action, resource }
}

/// How many calls `parts` hold together (the length [`concat`] builds).
pub const fn total(parts: &[&[AwsCall]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` one after the other, at compile time: a function's list is the shared pieces of the code it
/// uses ([`COORDINATION`], [`QUEUE_URLS`]) and then its own calls, e.g.
/// `pub const AWS_CALLS: &[AwsCall] = &concat::<{ total(PARTS) }>(PARTS);`.
pub const fn concat<const N: usize>(parts: &[&[AwsCall]]) -> [AwsCall; N] {
    let mut out = [call("", Resource::DataKey); N];
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(n == N, "concat: N is not the parts' total");
    out
}

/// The store ([`strato_aws::store`]) and the coordination rules shared by the api, the dispatcher, status and
/// the scheduler (cluster locks, tenant slots and counters, the operations hand-off that wakes the next
/// queued operation); a transaction counts as its items' actions.
pub const COORDINATION: &[AwsCall] = &[
    call("dynamodb:GetItem", Resource::Table("clusters")),
    call("dynamodb:PutItem", Resource::Table("clusters")),
    call("dynamodb:UpdateItem", Resource::Table("clusters")),
    call("dynamodb:Query", Resource::Index("clusters", "by_cluster_id")),
    call("dynamodb:GetItem", Resource::Table("operations")),
    call("dynamodb:PutItem", Resource::Table("operations")),
    call("dynamodb:Query", Resource::Index("operations", "open_by_cluster")),
    call("dynamodb:Query", Resource::Index("operations", "open")),
    call("dynamodb:GetItem", Resource::Table("locks")),
    call("dynamodb:PutItem", Resource::Table("locks")),
    call("dynamodb:UpdateItem", Resource::Table("locks")),
    call("dynamodb:DeleteItem", Resource::Table("locks")),
    call("dynamodb:GetItem", Resource::Table("tenants")),
    call("dynamodb:UpdateItem", Resource::Table("tenants")),
    call("dynamodb:GetItem", Resource::Table("templates")),
    call("sqs:SendMessage", Resource::Queue("jobs")),
];

/// `QueueUrls::resolve` at start ([`strato_aws::queues`]): every queue's URL.
pub const QUEUE_URLS: &[AwsCall] = &[
    call("sqs:GetQueueUrl", Resource::Queue("jobs")),
    call("sqs:GetQueueUrl", Resource::Queue("events")),
    call("sqs:GetQueueUrl", Resource::Queue("logs")),
    call("sqs:GetQueueUrl", Resource::Queue("webhooks")),
    call("sqs:GetQueueUrl", Resource::Queue("rollouts")),
];

/// A resource by its logical name; [`Names`] gives the physical one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Any item of a table (logical name of [`strato_aws::resources::TABLES`]).
    Table(&'static str),
    /// The items of `table` whose partition key is `<physical bucket>/<keys>` (`*` wildcards): Terraform's
    /// lock and `-md5` digest items in `tf-locks`. In IAM: a `dynamodb:LeadingKeys` condition.
    TableKeys {
        table: &'static str,
        bucket: &'static str,
        keys: &'static str,
    },
    /// A global secondary index (Query only).
    Index(&'static str, &'static str),
    /// A queue (logical name of [`strato_aws::resources::QUEUES`]).
    Queue(&'static str),
    /// A bucket itself (listing), logical name of [`strato_aws::resources::BUCKETS`].
    Bucket(&'static str),
    /// Objects of a bucket whose key matches a `*` pattern.
    Object(&'static str, &'static str),
    /// Revisions of the runner's ECS task definition (`ecs:RunTask`, in the runner cluster).
    RunnerTaskDefinition,
    /// Tasks of the runner's ECS cluster (`ecs:ListTasks`, `ecs:DescribeTasks`).
    RunnerCluster,
    /// The runner's task and execution roles, passed to ECS by RunTask (`iam:PassRole`).
    RunnerRoles,
    /// WebSocket API connections (`execute-api:ManageConnections` on `@connections/*`).
    Connections,
    /// Tenants' target-account roles the runner assumes (`sts:AssumeRole` on `target_role_arns`).
    TargetRoles,
    /// The runner's per-run roles (`runner_state`, `runner_engine`), assumed with a session policy.
    RunRoles,
    /// Strato's KMS data key (`alias/<prefix>-data`): envelope encryption, SSE-KMS buckets.
    DataKey,
    /// Strato's asymmetric token-signing key (`alias/<prefix>-oidc`, given by ARN): runs' identity tokens.
    SigningKey,
    /// Secrets Manager secrets named `strato/<prefix>/<pattern>`.
    Secret(&'static str),
}

/// A call as the recorder saw it: which function made it, the IAM action and the resource (logical names
/// where the physical name is Strato's, `?<physical>` otherwise).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Observed {
    pub function: String,
    pub action: String,
    pub target: Target,
}

/// The resource of an observed call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Target {
    /// Items of a table; `leading_keys` are the partition-key values the request names (none for a Scan).
    Table {
        table: String,
        leading_keys: Vec<String>,
    },
    Index {
        table: String,
        index: String,
    },
    Queue(String),
    Bucket(String),
    Object {
        bucket: String,
        key: String,
    },
    /// A task definition family.
    TaskDefinition(String),
    /// An ECS cluster (name or ARN as sent).
    Cluster(String),
    Connections,
    /// A role ARN (AssumeRole).
    Role(String),
    /// A KMS key (the data key or the signing key; Decrypt does not name it).
    Key,
    /// A secret name without its `strato/<prefix>/` part.
    Secret(String),
    /// Something the recorder could not name (the request did not say).
    Unknown(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Table { table, leading_keys } if leading_keys.is_empty() => write!(f, "table {table}"),
            Target::Table { table, leading_keys } => write!(f, "table {table} keys {leading_keys:?}"),
            Target::Index { table, index } => write!(f, "index {table}/{index}"),
            Target::Queue(q) => write!(f, "queue {q}"),
            Target::Bucket(b) => write!(f, "bucket {b}"),
            Target::Object { bucket, key } => write!(f, "object {bucket}/{key}"),
            Target::TaskDefinition(t) => write!(f, "task definition {t}"),
            Target::Cluster(c) => write!(f, "ECS cluster {c}"),
            Target::Connections => write!(f, "WebSocket connections"),
            Target::Role(r) => write!(f, "role {r}"),
            Target::Key => write!(f, "KMS key"),
            Target::Secret(s) => write!(f, "secret {s}"),
            Target::Unknown(s) => write!(f, "unknown resource ({s})"),
        }
    }
}

/// IAM's wildcards: `*` matches any run of characters (`/` and `:` included), `?` exactly one (key policies
/// use `"?*"` for "not empty").
pub fn glob(pattern: &str, s: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            // Runs of `*` collapse: one is as good as many, and it keeps the search linear per star.
            Some((b'*', rest)) => {
                let rest = rest
                    .iter()
                    .position(|c| *c != b'*')
                    .map_or(&[][..], |i| &rest[i..]);
                rest.is_empty() || (0..=s.len()).any(|i| go(rest, &s[i..]))
            }
            Some((b'?', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), s.as_bytes())
}

impl Resource {
    /// Whether an observed call's resource is this one (`names` gives physical bucket names for key patterns).
    pub fn covers(&self, names: &Names, target: &Target) -> bool {
        match (self, target) {
            (Resource::Table(t), Target::Table { table, .. }) => t == table,
            (
                Resource::TableKeys {
                    table: t,
                    bucket,
                    keys,
                },
                Target::Table { table, leading_keys },
            ) => {
                let pattern = format!("{}/{keys}", names.bucket(bucket));
                t == table && !leading_keys.is_empty() && leading_keys.iter().all(|k| glob(&pattern, k))
            }
            (Resource::Index(t, i), Target::Index { table, index }) => t == table && i == index,
            (Resource::Queue(q), Target::Queue(name)) => q == name,
            (Resource::Bucket(b), Target::Bucket(name)) => b == name,
            (Resource::Object(b, pattern), Target::Object { bucket, key }) => {
                b == bucket && glob(pattern, key)
            }
            (Resource::RunnerTaskDefinition, Target::TaskDefinition(family)) => {
                *family == format!("{}-runner", names.prefix())
            }
            (Resource::RunnerCluster, Target::Cluster(c)) => {
                let name = format!("{}-runner", names.prefix());
                *c == name || c.ends_with(&format!(":cluster/{name}"))
            }
            (Resource::Connections, Target::Connections) => true,
            (Resource::RunRoles, Target::Role(r)) => {
                let p = names.prefix();
                r.ends_with(&format!("role/{p}-runner-state"))
                    || r.ends_with(&format!("role/{p}-runner-engine"))
            }
            // Any role: which ones is `target_role_arns`' business, checked by AWS at assume time.
            (Resource::TargetRoles, Target::Role(_)) => true,
            // The recorder does not tell keys apart; the action does (only the signing key signs).
            (Resource::DataKey | Resource::SigningKey, Target::Key) => true,
            (Resource::Secret(pattern), Target::Secret(name)) => glob(pattern, name),
            _ => false,
        }
    }
}

/// The observed calls of `function` that `list` does not cover, as "function X calls ACTION on RESOURCE"
/// lines (empty when the list covers everything).
pub fn uncovered<'a>(
    names: &Names,
    function: &str,
    list: &[AwsCall],
    observed: impl IntoIterator<Item = &'a Observed>,
) -> Vec<String> {
    observed
        .into_iter()
        .filter(|o| o.function == function)
        .filter(|o| {
            !list
                .iter()
                .any(|c| c.action == o.action && c.resource.covers(names, &o.target))
        })
        .map(|o| {
            format!(
                "function {function} calls {} on {} but its AWS_CALLS list does not say so",
                o.action, o.target
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_like_iam() {
        assert!(glob("tenants/*", "tenants/a/b"));
        assert!(glob("tenants/*-md5", "tenants/a/b.tfstate-md5"));
        assert!(!glob("tenants/*-md5", "tenants/a/b.tfstate"));
        assert!(glob("a*b*c", "aXbYc"));
        assert!(!glob("a*b*c", "aXc"));
        assert!(glob("x", "x") && !glob("x", "xy"));
        // `?` is one character: "?*" is IAM's "not empty".
        assert!(glob("?*", "acme") && !glob("?*", ""));
        assert!(glob("a?c", "abc") && !glob("a?c", "ac"));
        assert!(!glob("ab*ba", "aba"), "prefix and suffix may not overlap");
    }

    #[test]
    fn a_recorded_kms_call_is_covered_by_an_entry_of_its_action_on_either_key() {
        let names = Names::new("strato-t").unwrap();
        let seen = |action: &str| Observed {
            function: "dispatcher".into(),
            action: action.into(),
            target: Target::Key,
        };
        let list = [
            call("kms:Sign", Resource::SigningKey),
            call("kms:GenerateDataKey", Resource::DataKey),
        ];
        let observed = [seen("kms:Sign"), seen("kms:GenerateDataKey"), seen("kms:Decrypt")];
        assert_eq!(
            uncovered(&names, "dispatcher", &list, &observed),
            vec!["function dispatcher calls kms:Decrypt on KMS key but its AWS_CALLS list does not say so"]
        );
    }

    #[test]
    fn key_patterns_cover_only_their_keys() {
        let names = Names::new("strato-t").unwrap();
        let digests = Resource::TableKeys {
            table: "tf-locks",
            bucket: "state",
            keys: "tenants/*-md5",
        };
        let item = |k: &str| Target::Table {
            table: "tf-locks".into(),
            leading_keys: vec![k.into()],
        };
        assert!(digests.covers(
            &names,
            &item("strato-t-state/tenants/a/clusters/c/main.tfstate-md5")
        ));
        assert!(!digests.covers(&names, &item("strato-t-state/tenants/a/clusters/c/main.tfstate")));
        assert!(!digests.covers(&names, &item("other/tenants/a/x-md5")));
        let scan = Target::Table {
            table: "tf-locks".into(),
            leading_keys: vec![],
        };
        assert!(
            !digests.covers(&names, &scan),
            "a keyless call is not limited to the keys"
        );
        assert!(Resource::Table("tf-locks").covers(&names, &scan));
    }
}
