//! The per-run session policies the runner passes when it assumes its run roles (strato_domain::run_access),
//! evaluated as AWS does against the applied state role: a session may do what both the role's policy and
//! the session policy allow. The state session reaches its own cluster's state and lock items and nothing of
//! another tenant's or cluster's; the engine session nothing of the deployment's own.

use strato_aws::resources::Names;
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::run_access::{StateScope, engine_session_policy, state_session_policy};

use super::checks::role_policy;
use super::iam::{RequestContext, allows, allows_in};
use super::{ACCOUNT, PREFIX, REGION, State};

pub fn run_sessions_reach_only_their_own_cluster(state: &State, names: &Names) {
    let role = role_policy(state, "runner-state");
    let (bucket, table) = (names.bucket("state"), names.table("tf-locks"));
    let table_arn = state.arn_of("aws_dynamodb_table", "name", &table);
    assert_eq!(
        table_arn,
        format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}")
    );
    let (acme, other): (TenantId, TenantId) = ("acme".parse().unwrap(), "globex".parse().unwrap());
    let (cluster, sibling) = (ClusterId::generate(), ClusterId::generate());
    let session = state_session_policy(&StateScope {
        partition: "aws",
        bucket: &bucket,
        lock_table: &table,
        tenant: &acme,
        cluster: &cluster,
    });
    let both = |action: &str, arn: &str, ctx: RequestContext| {
        let (in_session, in_role) = (
            allows_in(&session, action, arn, &ctx),
            allows_in(&role, action, arn, &ctx),
        );
        if std::env::var_os("STRATO_DEBUG_SESSIONS").is_some() {
            eprintln!("{action} {arn} {ctx:?}: session {in_session}, role {in_role}");
        }
        in_session && in_role
    };
    let object =
        |t: &TenantId, c: &ClusterId| format!("arn:aws:s3:::{bucket}/tenants/{t}/clusters/{c}/main.tfstate");
    let lock = |t: &TenantId, c: &ClusterId, suffix: &str| {
        vec![(
            "dynamodb:LeadingKeys",
            vec![format!("{bucket}/tenants/{t}/clusters/{c}/main.tfstate{suffix}")],
        )]
    };
    for action in ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"] {
        assert!(
            both(action, &object(&acme, &cluster), Vec::new()),
            "own state: {action}"
        );
        assert!(
            !both(action, &object(&acme, &sibling), Vec::new()),
            "a sibling cluster's state: {action}"
        );
        assert!(
            !both(action, &object(&other, &sibling), Vec::new()),
            "another tenant's state: {action}"
        );
    }
    for action in ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"] {
        for suffix in ["", "-md5"] {
            assert!(
                both(action, &table_arn, lock(&acme, &cluster, suffix)),
                "own lock{suffix}: {action}"
            );
            assert!(
                !both(action, &table_arn, lock(&other, &sibling, suffix)),
                "another tenant's lock{suffix}: {action}"
            );
        }
    }
    let list_prefix = |p: String| vec![("s3:prefix", vec![p])];
    let bucket_arn = format!("arn:aws:s3:::{bucket}");
    assert!(both(
        "s3:ListBucket",
        &bucket_arn,
        list_prefix(format!("tenants/acme/clusters/{cluster}/workspaces/"))
    ));
    assert!(
        !both("s3:ListBucket", &bucket_arn, list_prefix("tenants/".into())),
        "listing every tenant"
    );
    assert!(!both(
        "s3:ListBucket",
        &bucket_arn,
        list_prefix(format!("tenants/globex/clusters/{sibling}/"))
    ));
    assert!(
        !allows(&session, "dynamodb:Scan", &table_arn),
        "a scan reads every lock"
    );
    assert!(!allows(
        &session,
        "s3:GetObject",
        &format!("arn:aws:s3:::{}/logs/x", names.bucket("artifacts"))
    ));

    // The providers' session: whatever the engine role's policies allow, nothing of the deployment's own.
    let engine = engine_session_policy("aws", PREFIX);
    for (action, arn) in [
        ("s3:GetObject", object(&other, &sibling)),
        (
            "dynamodb:GetItem",
            state.arn_of("aws_dynamodb_table", "name", &names.table("operations")),
        ),
        (
            "sqs:SendMessage",
            state.arn_of("aws_sqs_queue", "name", &names.queue("events")),
        ),
        (
            "secretsmanager:GetSecretValue",
            format!("arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:strato/{PREFIX}/clusters/x-AbCdEf"),
        ),
        (
            "secretsmanager:GetSecretValue",
            state.arn_of(
                "aws_secretsmanager_secret",
                "name",
                &format!("strato/{PREFIX}/run-proof-secret"),
            ),
        ),
    ] {
        assert!(
            !allows(&engine, action, &arn),
            "the engine session may {action} on {arn}"
        );
    }
    assert!(
        allows(&engine, "ec2:CreateVpc", "*"),
        "what the engine role allows stays allowed"
    );
    assert!(allows(
        &engine,
        "s3:CreateBucket",
        "arn:aws:s3:::a-tenants-own-bucket"
    ));
}
