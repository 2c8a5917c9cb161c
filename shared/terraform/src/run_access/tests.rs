use super::eval::{Context, allows};
use super::*;

const PREFIX: &str = "strato-prod";

fn arn(service: &str, rest: &str) -> String {
    format!("arn:aws:{service}:eu-west-1:123456789012:{rest}")
}

#[test]
fn partitions_follow_the_region() {
    assert_eq!(partition("eu-west-1"), "aws");
    assert_eq!(partition("cn-north-1"), "aws-cn");
    assert_eq!(partition("us-gov-west-1"), "aws-us-gov");
}

#[test]
fn session_policies_fit_stss_packed_size_limit() {
    // STS refuses session policies over 2,048 characters (packed); ids are at their longest here (a
    // resource prefix has at most 30 characters: strato_aws::resources::Names).
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
        engine_session_policy("aws-us-gov", &"p".repeat(30)),
    ] {
        let packed = serde_json::to_string(&p).unwrap();
        assert!(packed.len() < 2048, "{} characters: {packed}", packed.len());
    }
}

/// What a malicious module or provider in a platform-account run would try against the deployment: each
/// kind of resource Strato owns, with an action that would take it over (or read it), the request's
/// resource as AWS builds it and the resource's tags where the ARN carries no name.
fn stratos_own() -> Vec<(&'static str, &'static str, String, Context<'static>)> {
    const TAGGED: Context = &[("aws:ResourceTag/strato:deployment", &[PREFIX])];
    let iam = |rest: &str| format!("arn:aws:iam::123456789012:{rest}");
    vec![
        (
            "state bucket",
            "s3:GetObject",
            format!("arn:aws:s3:::{PREFIX}-state/tenants/globex/x"),
            &[],
        ),
        (
            "table",
            "dynamodb:PutItem",
            arn("dynamodb", &format!("table/{PREFIX}-operations")),
            &[],
        ),
        (
            "queue",
            "sqs:SendMessage",
            arn("sqs", &format!("{PREFIX}-events")),
            &[],
        ),
        (
            "secret",
            "secretsmanager:GetSecretValue",
            arn(
                "secretsmanager",
                &format!("secret:strato/{PREFIX}/run-proof-secret-AbCdEf"),
            ),
            &[],
        ),
        (
            "runner task role",
            "iam:AttachRolePolicy",
            iam(&format!("role/{PREFIX}-runner-task")),
            &[],
        ),
        (
            "runner task role (passed)",
            "iam:PassRole",
            iam(&format!("role/{PREFIX}-runner-task")),
            &[],
        ),
        (
            "engine role itself",
            "iam:PutRolePolicy",
            iam(&format!("role/{PREFIX}-runner-engine")),
            &[],
        ),
        (
            "a function's role",
            "iam:UpdateAssumeRolePolicy",
            iam(&format!("role/{PREFIX}-api")),
            &[],
        ),
        (
            "the boundary",
            "iam:CreatePolicyVersion",
            iam(&format!("policy/{PREFIX}-engine-boundary")),
            &[],
        ),
        (
            "function code",
            "lambda:UpdateFunctionCode",
            arn("lambda", &format!("function:{PREFIX}-dispatcher")),
            &[],
        ),
        (
            "function configuration",
            "lambda:UpdateFunctionConfiguration",
            arn("lambda", &format!("function:{PREFIX}-status")),
            &[],
        ),
        (
            "task definition",
            "ecs:RegisterTaskDefinition",
            arn("ecs", &format!("task-definition/{PREFIX}-runner:4")),
            &[],
        ),
        (
            "runner cluster",
            "ecs:RunTask",
            arn("ecs", &format!("task-definition/{PREFIX}-runner:3")),
            &[],
        ),
        (
            "runner tasks",
            "ecs:StopTask",
            arn("ecs", &format!("task/{PREFIX}-runner/0123abcd")),
            &[],
        ),
        (
            "repository",
            "ecr:PutImage",
            arn("ecr", &format!("repository/{PREFIX}-runner")),
            &[],
        ),
        (
            "function log group",
            "logs:DeleteLogGroup",
            arn("logs", &format!("log-group:/aws/lambda/{PREFIX}-api")),
            &[],
        ),
        (
            "runner log stream",
            "logs:PutLogEvents",
            arn(
                "logs",
                &format!("log-group:/ecs/{PREFIX}-runner:log-stream:runner/x"),
            ),
            &[],
        ),
        (
            "access log group",
            "logs:PutRetentionPolicy",
            arn("logs", &format!("log-group:/aws/apigateway/{PREFIX}-http")),
            &[],
        ),
        (
            "data key alias",
            "kms:UpdateAlias",
            arn("kms", &format!("alias/{PREFIX}-data")),
            &[],
        ),
        (
            "data key",
            "kms:ScheduleKeyDeletion",
            arn("kms", "key/1234abcd-12ab-34cd-56ef-1234567890ab"),
            TAGGED,
        ),
        (
            "data key (use)",
            "kms:Decrypt",
            arn("kms", "key/1234abcd-12ab-34cd-56ef-1234567890ab"),
            TAGGED,
        ),
        (
            "HTTP API",
            "apigateway:PATCH",
            "arn:aws:apigateway:eu-west-1::/apis/a1b2c3".to_owned(),
            TAGGED,
        ),
        (
            "alarm",
            "cloudwatch:DeleteAlarms",
            arn("cloudwatch", &format!("alarm:{PREFIX}-jobs-queue-age")),
            TAGGED,
        ),
        (
            "event rule",
            "events:PutTargets",
            arn("events", &format!("rule/{PREFIX}-runner-task-stopped")),
            &[],
        ),
        (
            "schedule",
            "scheduler:UpdateSchedule",
            arn("scheduler", &format!("schedule/default/{PREFIX}-drift")),
            &[],
        ),
    ]
}

#[test]
fn the_engine_session_denies_every_resource_stratos_own() {
    let session = engine_session_policy("aws", PREFIX);
    let reached: Vec<String> = stratos_own()
        .into_iter()
        .filter(|(_, action, resource, ctx)| allows(&session, action, resource, ctx))
        .map(|(what, action, resource, _)| format!("{what}: {action} on {resource}"))
        .collect();
    assert!(
        reached.is_empty(),
        "the engine session reaches Strato's own:\n{}",
        reached.join("\n")
    );
}

#[test]
fn the_engine_session_creates_identities_only_within_the_deployments_boundary() {
    let session = engine_session_policy("aws", PREFIX);
    let role = "arn:aws:iam::123456789012:role/prod-3f2a9c1d-eks-node";
    let boundary =
        engine_boundary_arn("arn:aws:iam::123456789012:role/strato-prod-runner-engine", PREFIX).unwrap();
    let bounded: &[(&str, &[&str])] = &[("iam:PermissionsBoundary", &[boundary.as_str()])];
    let elsewhere: &[(&str, &[&str])] = &[(
        "iam:PermissionsBoundary",
        &["arn:aws:iam::123456789012:policy/AdminAll"],
    )];
    for action in GRANTING_IAM_WRITES {
        assert!(
            allows(&session, action, role, bounded),
            "{action} with the boundary"
        );
        assert!(
            !allows(&session, action, role, &[]),
            "{action} without a boundary"
        );
        assert!(
            !allows(&session, action, role, elsewhere),
            "{action} with another boundary"
        );
    }
    for action in [
        "iam:DeleteRolePermissionsBoundary",
        "iam:DeleteUserPermissionsBoundary",
    ] {
        assert!(!allows(&session, action, role, bounded), "{action}");
    }
    // What templates do in the platform account stays allowed.
    for (action, resource) in [
        ("ec2:CreateVpc", "*".to_owned()),
        ("eks:CreateCluster", arn("eks", "cluster/prod-3f2a9c1d")),
        ("iam:PassRole", role.to_owned()),
        ("iam:GetRole", role.to_owned()),
        ("s3:CreateBucket", "arn:aws:s3:::a-tenants-own-bucket".to_owned()),
        ("kms:CreateKey", "*".to_owned()),
        (
            "logs:CreateLogGroup",
            arn("logs", "log-group:/aws/eks/prod-3f2a9c1d/cluster"),
        ),
    ] {
        assert!(allows(&session, action, &resource, &[]), "{action} on {resource}");
    }
}

#[test]
fn the_boundary_is_in_the_engine_roles_account_and_partition() {
    assert_eq!(
        engine_boundary_arn(
            "arn:aws-cn:iam::210987654321:role/strato-prod-runner-engine",
            "strato-prod"
        )
        .as_deref(),
        Some("arn:aws-cn:iam::210987654321:policy/strato-prod-engine-boundary")
    );
    for not_a_role in [
        "",
        "role/x",
        "arn:aws:sts::1:assumed-role/x/y",
        "arn:aws:iam::1:user/x",
    ] {
        assert_eq!(
            engine_boundary_arn(not_a_role, "strato-prod"),
            None,
            "{not_a_role}"
        );
    }
}
