//! The per-run session policies the runner passes when it assumes its run roles (strato_terraform::run_access),
//! evaluated as AWS does against the applied state role: a session may do what both the role's policy and
//! the session policy allow. The state session reaches its own cluster's state and lock items and nothing of
//! another tenant's or cluster's; the engine session nothing of the deployment's own.

use strato_aws::resources::Names;
use strato_domain::ids::{ClusterId, TenantId};
use strato_terraform::run_access::{
    DEPLOYMENT_TAG, StateScope, engine_boundary_arn, engine_boundary_name, engine_session_policy,
    state_session_policy,
};

use super::checks::role_policy;
use super::iam::{RequestContext, allows, allows_in};
use super::{ACCOUNT, PREFIX, REGION, State, json_attr};

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
    engine_boundary_matches_the_session(state, &engine);
}

/// The applied boundary (on the engine role, and required on every role a template creates) keeps out of
/// the deployment what the session keeps out: the runner's roles, the functions, the task definition, the
/// data key (by its tag), the log groups; and the boundary the runner passes templates is the applied one.
fn engine_boundary_matches_the_session(state: &State, session: &serde_json::Value) {
    let policy = state.by("aws_iam_policy", "name", &engine_boundary_name(PREFIX));
    let boundary = json_attr(policy, "policy");
    let engine_role = state.by("aws_iam_role", "name", &format!("{PREFIX}-runner-engine"));
    assert_eq!(
        engine_role.s("permissions_boundary"),
        policy.s("arn"),
        "the engine role carries the boundary"
    );
    assert_eq!(
        engine_boundary_arn(engine_role.s("arn"), PREFIX).as_deref(),
        Some(policy.s("arn")),
        "the runner names the applied boundary"
    );
    let key = state.by("aws_kms_alias", "name", &format!("alias/{PREFIX}-data"));
    let key = state.by("aws_kms_key", "arn", key.s("target_key_arn"));
    assert_eq!(
        key.values["tags_all"][DEPLOYMENT_TAG], PREFIX,
        "the data key carries the deployment's tag"
    );
    let arn = |service: &str, rest: &str| format!("arn:aws:{service}:{REGION}:{ACCOUNT}:{rest}");
    let tagged: RequestContext = vec![("aws:ResourceTag/strato:deployment", vec![PREFIX.to_owned()])];
    for (action, resource, ctx) in [
        (
            "iam:AttachRolePolicy",
            state.arn_of("aws_iam_role", "name", &format!("{PREFIX}-runner-task")),
            Vec::new(),
        ),
        (
            "lambda:UpdateFunctionCode",
            state.arn_of("aws_lambda_function", "function_name", &format!("{PREFIX}-api")),
            Vec::new(),
        ),
        (
            "ecs:RegisterTaskDefinition",
            arn("ecs", &format!("task-definition/{PREFIX}-runner:9")),
            Vec::new(),
        ),
        (
            "ecr:PutImage",
            arn("ecr", &format!("repository/{PREFIX}-runner")),
            Vec::new(),
        ),
        (
            "logs:DeleteLogGroup",
            arn("logs", &format!("log-group:/aws/lambda/{PREFIX}-status")),
            Vec::new(),
        ),
        ("iam:CreatePolicyVersion", policy.s("arn").to_owned(), Vec::new()),
        ("kms:ScheduleKeyDeletion", key.s("arn").to_owned(), tagged.clone()),
        (
            "iam:CreateRole",
            "arn:aws:iam::123456789012:role/demo-eks".to_owned(),
            Vec::new(),
        ),
    ] {
        assert!(
            !allows_in(session, action, &resource, &ctx),
            "the engine session may {action} on {resource}"
        );
        assert!(
            !allows_in(&boundary, action, &resource, &ctx),
            "the boundary lets {action} on {resource}"
        );
    }
    let bounded: RequestContext = vec![("iam:PermissionsBoundary", vec![policy.s("arn").to_owned()])];
    for p in [session, &boundary] {
        assert!(allows_in(
            p,
            "iam:CreateRole",
            "arn:aws:iam::123456789012:role/demo-eks",
            &bounded
        ));
        assert!(allows(p, "eks:CreateCluster", &arn("eks", "cluster/demo")));
    }
}
