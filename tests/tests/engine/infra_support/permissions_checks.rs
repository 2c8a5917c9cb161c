//! The IAM policies as applied, against each function's and the runner's AWS_CALLS lists and a few things
//! they must not allow.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use strato_aws::resources::{Names, QUEUES};
use strato_calls::Resource;

use super::checks::*;
use super::iam::{World, allows, allows_in, call_lists, missing_grants};
use super::{FUNCTIONS, PREFIX, State, json_attr};

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
    // The audit log is append-only: no function may change or remove an entry; the functions that record
    // actions only put, and only the api reads (GET /v1/audit).
    let audit = w.table("audit");
    for (function, policy) in &policies {
        for action in [
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:BatchWriteItem",
            "dynamodb:PartiQLUpdate",
            "dynamodb:PartiQLDelete",
            "dynamodb:DeleteTable",
        ] {
            assert!(
                !allows(policy, action, &audit),
                "{function} may not {action} on the audit log"
            );
        }
        let appends = ["api", "dispatcher", "scheduler", "status"].contains(&function.as_str());
        assert_eq!(
            allows(policy, "dynamodb:PutItem", &audit),
            appends,
            "{function} PutItem on the audit log"
        );
        assert_eq!(
            allows(policy, "dynamodb:Query", &audit),
            function == "api",
            "{function} Query of the audit log"
        );
    }
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
