//! What a run may touch, as STS session policies. The runner never hands its own task-role credentials to
//! Terraform: it assumes two roles for each run and passes a session policy with each, so the credentials
//! the engine (and every module and provider inside it) holds are cut down to that run's cluster:
//!
//! - the **state role**, for the S3 backend: the cluster's own state objects and their lock and digest
//!   items, nothing else ([`state_session_policy`]);
//! - the **engine role**, for the providers in the platform account when the cluster has no target account:
//!   whatever the operator granted that role, minus every resource of Strato's own (by ARN pattern and by
//!   tag) and minus creating identities without the deployment's permissions boundary
//!   ([`engine_session_policy`]).
//!
//! A session's permissions are the intersection of the role's policy and the session policy, so these can
//! only narrow what infra/ grants the roles.

use serde_json::{Value, json};

use strato_domain::ids::{ClusterId, TenantId};

/// The AWS partition of a region (`aws`, `aws-cn`, `aws-us-gov`), for ARNs.
pub fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// Where one cluster's state lives in the platform's state bucket and lock table.
#[derive(Debug, Clone, Copy)]
pub struct StateScope<'a> {
    pub partition: &'a str,
    pub bucket: &'a str,
    pub lock_table: &'a str,
    pub tenant: &'a TenantId,
    pub cluster: &'a ClusterId,
}

impl StateScope<'_> {
    /// The cluster's key prefix in the bucket (every stage's state, and the backend's workspace prefix).
    pub fn prefix(&self) -> String {
        format!("tenants/{}/clusters/{}/", self.tenant, self.cluster)
    }
}

/// The S3 backend's session: read and write the cluster's own state objects, list only under its prefix,
/// and take, read and drop only its own lock and digest items (`<bucket>/<key>` and `<bucket>/<key>-md5`,
/// matched on the lock table's partition key).
pub fn state_session_policy(s: &StateScope<'_>) -> Value {
    let prefix = s.prefix();
    json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "OwnStateObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                "Resource": format!("arn:{}:s3:::{}/{prefix}*", s.partition, s.bucket),
            },
            {
                "Sid": "ListOwnPrefix",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": format!("arn:{}:s3:::{}", s.partition, s.bucket),
                "Condition": { "StringLike": { "s3:prefix": [format!("{prefix}*")] } },
            },
            {
                "Sid": "OwnLockAndDigestItems",
                "Effect": "Allow",
                "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"],
                "Resource": format!("arn:{}:dynamodb:*:*:table/{}", s.partition, s.lock_table),
                "Condition": {
                    "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [format!("{}/{prefix}*", s.bucket)] }
                },
            },
            {
                // The bucket's KMS key, through S3 only; which key is the role's policy's business.
                "Sid": "StateKeyThroughS3",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": "*",
                "Condition": { "StringLike": { "kms:ViaService": "s3.*.amazonaws.com" } },
            },
        ],
    })
}

/// The tag every resource of a deployment carries (infra/'s provider `default_tags`), valued with its prefix.
/// The engine session denies anything carrying it; resources without an ARN pattern (the KMS key, the APIs,
/// alarms, event source mappings) are covered only by it.
pub const DEPLOYMENT_TAG: &str = "strato:deployment";

/// The managed policy every IAM role or user created through the engine session must carry as its
/// permissions boundary (infra/modules/runner: `{prefix}-engine-boundary`).
pub fn engine_boundary_name(resource_prefix: &str) -> String {
    format!("{resource_prefix}-engine-boundary")
}

/// The boundary's ARN in the engine role's account (`arn:<p>:iam::<account>:role/…` → `…:policy/<name>`),
/// for the templates' managed `permissions_boundary` variable; `None` when the role ARN is not an IAM role's.
pub fn engine_boundary_arn(engine_role_arn: &str, resource_prefix: &str) -> Option<String> {
    let mut parts = engine_role_arn.splitn(6, ':');
    let (arn, partition, service, _region, account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let valid = arn == "arn"
        && service == "iam"
        && !partition.is_empty()
        && !account.is_empty()
        && resource.starts_with("role/");
    valid.then(|| {
        format!(
            "arn:{partition}:iam::{account}:policy/{}",
            engine_boundary_name(resource_prefix)
        )
    })
}

/// IAM writes that grant an identity permissions: through the engine session only onto a role or user that
/// carries the deployment's boundary (`iam:PermissionsBoundary` is the new or current boundary of the role or
/// user these act on), so nothing a module creates can reach more than the boundary allows.
const GRANTING_IAM_WRITES: [&str; 8] = [
    "iam:CreateRole",
    "iam:PutRolePermissionsBoundary",
    "iam:AttachRolePolicy",
    "iam:PutRolePolicy",
    "iam:CreateUser",
    "iam:PutUserPermissionsBoundary",
    "iam:AttachUserPolicy",
    "iam:PutUserPolicy",
];

/// The providers' session in the platform account: what the engine role allows, except
///
/// - every resource of the deployment named by `resource_prefix`, by ARN pattern (its tables, queues,
///   buckets, secrets, IAM roles and policies — the boundary included —, Lambda functions, ECS cluster, task
///   definitions and tasks, the ECR repository, log groups, the data key's alias, rules and schedules) and
///   by the [`DEPLOYMENT_TAG`] (the KMS key, the APIs and whatever has no name of the prefix's);
/// - granting IAM writes onto roles or users without the deployment's boundary, and removing a boundary.
///
/// A module or provider therefore cannot change Strato's code, roles, task definition, key or logs, nor
/// create an identity that could. STS refuses session policies over 2,048 packed characters: this is
/// compact on purpose (one wildcard per ARN shape).
pub fn engine_session_policy(partition: &str, resource_prefix: &str) -> Value {
    let (p, x) = (partition, resource_prefix);
    json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WhatTheEngineRoleAllows",
                "Effect": "Allow",
                "Action": "*",
                "Resource": "*",
            },
            {
                "Sid": "NothingOfStratosOwn",
                "Effect": "Deny",
                "Action": "*",
                "Resource": [
                    format!("arn:{p}:s3:::{x}-*"),
                    format!("arn:{p}:dynamodb:*:*:table/{x}-*"),
                    format!("arn:{p}:sqs:*:*:{x}-*"),
                    format!("arn:{p}:secretsmanager:*:*:secret:strato/{x}/*"),
                    // The deployment's roles and policies (the boundary included). Written out: IAM (and
                    // moto) refuse a wildcard where the resource type goes.
                    format!("arn:{p}:iam::*:role/{x}-*"),
                    format!("arn:{p}:iam::*:policy/{x}-*"),
                    format!("arn:{p}:lambda:*:*:function:{x}-*"),
                    // cluster/, task-definition/, task/<cluster>/, service/.
                    format!("arn:{p}:ecs:*:*:*/{x}-*"),
                    format!("arn:{p}:ecr:*:*:repository/{x}-*"),
                    // /aws/lambda/, /ecs/, /aws/apigateway/, /aws/events/ (and their streams).
                    format!("arn:{p}:logs:*:*:log-group:*/{x}-*"),
                    format!("arn:{p}:kms:*:*:alias/{x}-*"),
                    format!("arn:{p}:events:*:*:rule/{x}-*"),
                    format!("arn:{p}:scheduler:*:*:schedule/*/{x}-*"),
                ],
            },
            {
                "Sid": "NothingTaggedStratos",
                "Effect": "Deny",
                "Action": "*",
                "Resource": "*",
                "Condition": { "StringEquals": { format!("aws:ResourceTag/{DEPLOYMENT_TAG}"): x } },
            },
            {
                "Sid": "IdentitiesOnlyWithinTheBoundary",
                "Effect": "Deny",
                "Action": GRANTING_IAM_WRITES,
                "Resource": "*",
                "Condition": {
                    "StringNotLike": {
                        "iam:PermissionsBoundary": format!("arn:{p}:iam::*:policy/{}", engine_boundary_name(x))
                    }
                },
            },
            {
                "Sid": "BoundariesStay",
                "Effect": "Deny",
                "Action": ["iam:DeleteRolePermissionsBoundary", "iam:DeleteUserPermissionsBoundary"],
                "Resource": "*",
            },
        ],
    })
}

#[cfg(test)]
mod eval;
#[cfg(test)]
mod tests;
