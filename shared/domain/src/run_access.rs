//! What a run may touch, as STS session policies. The runner never hands its own task-role credentials to
//! Terraform: it assumes two roles for each run and passes a session policy with each, so the credentials
//! the engine (and every module and provider inside it) holds are cut down to that run's cluster:
//!
//! - the **state role**, for the S3 backend: the cluster's own state objects and their lock and digest
//!   items, nothing else ([`state_session_policy`]);
//! - the **engine role**, for the providers in the platform account when the cluster has no target account:
//!   whatever the operator granted that role, minus every table, queue, bucket and secret of Strato's own
//!   ([`engine_session_policy`]).
//!
//! A session's permissions are the intersection of the role's policy and the session policy, so these can
//! only narrow what infra/ grants the roles.

use serde_json::{Value, json};

use crate::ids::{ClusterId, TenantId};

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

/// The providers' session in the platform account: what the engine role allows, except anything of the
/// deployment named by `resource_prefix` (its tables, queues, buckets and secrets), which no template has a
/// reason to touch.
pub fn engine_session_policy(partition: &str, resource_prefix: &str) -> Value {
    let p = partition;
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
                    format!("arn:{p}:s3:::{resource_prefix}-*"),
                    format!("arn:{p}:dynamodb:*:*:table/{resource_prefix}-*"),
                    format!("arn:{p}:sqs:*:*:{resource_prefix}-*"),
                    format!("arn:{p}:secretsmanager:*:*:secret:strato/{resource_prefix}/*"),
                ],
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_follow_the_region() {
        assert_eq!(partition("eu-west-1"), "aws");
        assert_eq!(partition("cn-north-1"), "aws-cn");
        assert_eq!(partition("us-gov-west-1"), "aws-us-gov");
    }

    #[test]
    fn session_policies_fit_stss_packed_size_limit() {
        // STS refuses session policies over 2,048 characters (packed); ids are at their longest here.
        let tenant: TenantId = "t".repeat(63).parse().unwrap_or_else(|_| "acme".parse().unwrap());
        let cluster = ClusterId::generate();
        let s = StateScope {
            partition: "aws-us-gov",
            bucket: &"b".repeat(63),
            lock_table: &"l".repeat(200),
            tenant: &tenant,
            cluster: &cluster,
        };
        for p in [
            state_session_policy(&s),
            engine_session_policy("aws-us-gov", &"p".repeat(40)),
        ] {
            let packed = serde_json::to_string(&p).unwrap();
            assert!(packed.len() < 2048, "{} characters: {packed}", packed.len());
        }
    }
}
