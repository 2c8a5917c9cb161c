//! Tables, queues, buckets and the data key as applied: exactly those of `strato_aws::resources`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use strato_aws::resources::{self, BUCKETS, Names, QUEUES, TABLES};

use super::checks::*;
use super::{State, StateRes, first, json_attr};

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
    /// FIFO high-throughput mode (deduplication and throughput per message group).
    high_throughput: bool,
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
            high_throughput: r.values["deduplication_scope"] == "messageGroup"
                && r.values["fifo_throughput_limit"] == "perMessageGroupId",
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
                high_throughput: q.high_throughput,
                visibility_timeout: q.visibility_timeout_secs.into(),
                redrive: Some((names.dlq(q.logical), q.max_receive_count.into())),
            },
        );
        // A DLQ keeps SQS's default visibility timeout and redrives nowhere.
        expected.insert(
            names.dlq(q.logical),
            QueueShape {
                fifo: q.fifo,
                high_throughput: false,
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
    let access_logs = format!("{}-access-logs", names.prefix());
    for r in state.all("aws_s3_bucket") {
        let name = r.s("bucket").to_owned();
        // Not data buckets: the access logs (below) and the OIDC issuer's documents (issuer.rs).
        if name == access_logs || name == format!("{}-oidc", names.prefix()) {
            continue;
        }
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
    check_access_logs(state, names, &access_logs);
}

/// The state bucket's server access logs: delivered under `state/` of their own bucket, which is closed to
/// the public, TLS only, SSE-S3 (log delivery cannot write SSE-KMS) and expires its objects.
fn check_access_logs(state: &State, names: &Names, bucket: &str) {
    let logging = bucket_part(state, "aws_s3_bucket_logging", &names.bucket("state"))
        .expect("the state bucket's access logging");
    assert_eq!(logging.s("target_bucket"), bucket);
    assert_eq!(logging.s("target_prefix"), "state/");
    let sse = bucket_part(
        state,
        "aws_s3_bucket_server_side_encryption_configuration",
        bucket,
    )
    .unwrap_or_else(|| panic!("{bucket}: default encryption"));
    let by_default = first(&first(&sse.values["rule"])["apply_server_side_encryption_by_default"]);
    assert_eq!(by_default["sse_algorithm"], "AES256", "{bucket}: SSE-S3");
    let block = bucket_part(state, "aws_s3_bucket_public_access_block", bucket)
        .unwrap_or_else(|| panic!("{bucket}: no public access block"));
    assert_eq!(block.values["restrict_public_buckets"], true, "{bucket}");
    let policy = json_attr(
        bucket_part(state, "aws_s3_bucket_policy", bucket).unwrap_or_else(|| panic!("{bucket}: no policy")),
        "policy",
    );
    let statements = policy["Statement"].as_array().unwrap();
    assert!(
        statements
            .iter()
            .any(|s| s["Effect"] == "Deny" && s["Condition"]["Bool"]["aws:SecureTransport"] == "false"),
        "{bucket}: TLS only"
    );
    assert!(
        bucket_part(state, "aws_s3_bucket_lifecycle_configuration", bucket).is_some(),
        "{bucket}: logs expire"
    );
}

/// Strato's data key rotates, and its alias is the one the code names it by; its key policy allows data
/// keys only with the encryption context the code sends (`strato_domain::sealed::KeyContext`) or to S3 for
/// the encrypted buckets. Returns its ARN.
pub fn check_data_key(state: &State, names: &Names) -> String {
    let alias = state.by("aws_kms_alias", "name", &names.kms_alias());
    let key = state.by("aws_kms_key", "arn", alias.s("target_key_arn"));
    assert_eq!(key.values["enable_key_rotation"], true, "the data key rotates");
    check_key_policy(&json_attr(key, "policy"), key.s("arn"), names);
    key.s("arn").to_owned()
}

/// The data key's policy (IAM still decides which principals): sealed values with `{tenant, purpose}`, bucket
/// encryption through S3; nothing else, whatever IAM allows.
fn check_key_policy(policy: &Value, key: &str, names: &Names) {
    use super::iam::{RequestContext, allows_in};
    use strato_domain::identity::PURPOSE_RUN_IDENTITY;
    use strato_domain::identity::cloud_tokens::PURPOSE_CLOUD_TOKEN;
    use strato_domain::sealed::{KeyContext, PURPOSE_EXTERNAL_ID, PURPOSE_PLAN, PURPOSE_VARIABLES};
    let sealed = |pairs: &[(&'static str, &str)]| -> RequestContext {
        let mut ctx: RequestContext = vec![(
            "kms:EncryptionContextKeys",
            pairs
                .iter()
                .map(|(k, _)| k.rsplit(':').next().unwrap().to_owned())
                .collect(),
        )];
        ctx.extend(pairs.iter().map(|(k, v)| (*k, vec![(*v).to_owned()])));
        ctx
    };
    let tenant = "acme".parse().unwrap();
    for purpose in [
        PURPOSE_VARIABLES,
        PURPOSE_EXTERNAL_ID,
        PURPOSE_PLAN,
        PURPOSE_RUN_IDENTITY,
        PURPOSE_CLOUD_TOKEN,
    ] {
        let pairs = KeyContext::new(&tenant, purpose).pairs();
        let ctx = sealed(&[
            ("kms:EncryptionContext:tenant", pairs["tenant"].as_str()),
            ("kms:EncryptionContext:purpose", pairs["purpose"].as_str()),
        ]);
        for action in ["kms:GenerateDataKey", "kms:Decrypt"] {
            assert!(
                allows_in(policy, action, key, &ctx),
                "{action} for {purpose}: {policy}"
            );
        }
    }
    let refused: [(&str, RequestContext); 4] = [
        ("no encryption context", Vec::new()),
        (
            "no tenant",
            sealed(&[("kms:EncryptionContext:purpose", "variables")]),
        ),
        (
            "an unknown purpose",
            sealed(&[
                ("kms:EncryptionContext:tenant", "acme"),
                ("kms:EncryptionContext:purpose", "anything"),
            ]),
        ),
        (
            "a context of other keys",
            sealed(&[
                ("kms:EncryptionContext:tenant", "acme"),
                ("kms:EncryptionContext:purpose", "variables"),
                ("kms:EncryptionContext:other", "x"),
            ]),
        ),
    ];
    for (what, ctx) in &refused {
        assert!(
            !allows_in(policy, "kms:Decrypt", key, ctx),
            "Decrypt with {what}: {policy}"
        );
    }
    // Bucket encryption: only through S3, only for the encrypted buckets' objects.
    let via_s3 = |bucket: &str| -> RequestContext {
        vec![
            ("kms:ViaService", vec!["s3.us-east-1.amazonaws.com".to_owned()]),
            (
                "kms:EncryptionContext:aws:s3:arn",
                vec![format!("arn:aws:s3:::{bucket}")],
            ),
        ]
    };
    for bucket in ["state", "artifacts"] {
        assert!(
            allows_in(policy, "kms:Decrypt", key, &via_s3(&names.bucket(bucket))),
            "{bucket}"
        );
    }
    assert!(!allows_in(policy, "kms:Decrypt", key, &via_s3("another-bucket")));
    let mut direct = via_s3(&names.bucket("state"));
    direct.remove(0);
    assert!(!allows_in(policy, "kms:Decrypt", key, &direct), "not through S3");
    // The administrators' statement carries no cryptographic use.
    assert!(!allows_in(policy, "kms:Encrypt", key, &Vec::new()));
}
