//! Stack setup: the runner's ECS cluster and task definition, and publishing the template catalog.

use super::*;

/// The runner's ECS cluster and task definition, and the dispatcher settings that point at them.
pub(super) async fn ecs_setup(
    ecs: &aws_sdk_ecs::Client,
    http: &reqwest::Client,
    endpoint: &str,
    region: &str,
    names: &Names,
) -> Result<RunnerSettings, DevstackError> {
    let cluster = format!("{}-runner", names.prefix()); // as infra/ names it (modules/runner)
    ecs.create_cluster()
        .cluster_name(&cluster)
        .send()
        .await
        .map_err(|e| DevstackError::aws("CreateCluster", e))?;
    let family = format!("{}-runner", names.prefix());
    ecs.register_task_definition()
        .family(&family)
        .requires_compatibilities(Compatibility::Fargate)
        .network_mode(NetworkMode::Awsvpc)
        .cpu("1024")
        .memory("2048")
        .container_definitions(
            ContainerDefinition::builder()
                .name(RUNNER_CONTAINER)
                .image("strato-runner:devstack")
                // moto answers RunTask with HTTP 500 without a container-level memory.
                .memory(2048)
                .essential(true)
                .build(),
        )
        .send()
        .await
        .map_err(|e| DevstackError::aws("RegisterTaskDefinition", e))?;
    let subnets = crate::moto_ctl::ec2_values(http, endpoint, region, "DescribeSubnets", "subnetId").await?;
    let groups =
        crate::moto_ctl::ec2_values(http, endpoint, region, "DescribeSecurityGroups", "groupId").await?;
    Ok(RunnerSettings {
        cluster,
        task_definition: family,
        container: RUNNER_CONTAINER.into(),
        subnets: subnets.into_iter().take(1).collect(),
        security_groups: groups.into_iter().take(1).collect(),
        assign_public_ip: false,
    })
}

/// Publishes every template under `templates_root/catalog` (modules from `templates_root/modules`) and the
/// extra ones. A template that does not pack or publish is reported and skipped: the stack still starts.
pub(super) async fn publish_templates(
    aws: &AwsClients,
    names: &Names,
    config: &DevstackConfig,
) -> Vec<(String, String)> {
    let outcome = publish_catalog(
        aws,
        names,
        config.templates_root.as_deref(),
        &config.extra_templates,
    )
    .await;
    for (dir, e) in &outcome.failed {
        tracing::warn!(template = %dir, error = %e, "template not published");
    }
    tracing::info!(published = ?outcome.published, "template catalog");
    outcome.published
}

/// What [`publish_catalog`] did.
#[derive(Debug, Default)]
pub struct Published {
    /// (name, version) of each template published (or already there with the same content).
    pub published: Vec<(String, String)>,
    /// Template directory → why it was not published.
    pub failed: BTreeMap<String, String>,
}

/// Every template directory under `root/catalog` (with `root/modules`) and then `extra`, as (template
/// directory, modules directory).
pub fn catalog_dirs(root: Option<&Path>, extra: &[(PathBuf, PathBuf)]) -> Vec<(PathBuf, PathBuf)> {
    let mut dirs: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(root) = root {
        let catalog = root.join("catalog");
        let modules = root.join("modules");
        if let Ok(entries) = std::fs::read_dir(&catalog) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(strato_terraform::bundle::MANIFEST_FILE).is_file())
                .collect();
            found.sort();
            dirs.extend(found.into_iter().map(|p| (p, modules.clone())));
        }
    }
    dirs.extend(extra.iter().cloned());
    dirs
}

/// Packs and publishes every template under `root/catalog` (modules from `root/modules`) and `extra`
/// (template directory, modules directory) straight into the table and bucket of the stack named by
/// `names`: devstack's own at start, or a deployment's before any operator can sign in
/// (`strato-devstack publish --direct`). A version already published with other content is refused.
pub async fn publish_catalog(
    aws: &AwsClients,
    names: &Names,
    root: Option<&Path>,
    extra: &[(PathBuf, PathBuf)],
) -> Published {
    let mut out = Published::default();
    for (dir, modules) in catalog_dirs(root, extra) {
        let bundle = match strato_terraform::bundle::pack(&dir, &modules) {
            Ok(b) => b,
            Err(e) => {
                out.failed.insert(dir.display().to_string(), e.to_string());
                continue;
            }
        };
        match strato_aws::bundles::publish(aws, names, &bundle).await {
            Ok(()) => out.published.push((
                bundle.template.name().to_owned(),
                bundle.template.version().to_owned(),
            )),
            Err(e) => {
                out.failed.insert(dir.display().to_string(), e.to_string());
            }
        }
    }
    out
}

/// What [`publish_through_api`] did.
#[derive(Debug, Default)]
pub struct PublishedThroughApi {
    /// (name, version) of each version the API published.
    pub published: Vec<(String, String)>,
    /// (name, version) of each the API already had (a 409: versions are immutable; a changed template
    /// is published as a new version).
    pub kept: Vec<(String, String)>,
    /// Template directory → why it was not published (the API's problem, or why it did not pack).
    pub failed: BTreeMap<String, String>,
}

/// Packs each of `dirs` and publishes it through the operator's API route (`api` carries an operator
/// token): the API runs publishing's checks and records the operator in the platform's audit log.
pub async fn publish_through_api(
    api: &strato_cli::api::Api,
    dirs: &[(PathBuf, PathBuf)],
) -> PublishedThroughApi {
    let mut out = PublishedThroughApi::default();
    for (dir, modules) in dirs {
        let bundle = match strato_terraform::bundle::pack(dir, modules) {
            Ok(b) => b,
            Err(e) => {
                out.failed.insert(dir.display().to_string(), e.to_string());
                continue;
            }
        };
        let id = (
            bundle.template.name().to_owned(),
            bundle.template.version().to_owned(),
        );
        match api.publish_template(&bundle).await {
            Ok(_) => out.published.push(id),
            Err(strato_cli::CliError::Api(p)) if p.status == 409 => out.kept.push(id),
            Err(e) => {
                out.failed.insert(dir.display().to_string(), e.to_string());
            }
        }
    }
    out
}

/// The config with the runners' engine chosen (when it names none), logged either way.
pub(super) async fn choose_engine(mut config: DevstackConfig) -> Result<DevstackConfig, DevstackError> {
    let engine = match config.engine.take() {
        Some(e) => e,
        None => tokio::task::spawn_blocking(strato_testbed::preferred_engine)
            .await
            .map_err(|e| DevstackError::step("choosing the engine", e))?
            .map_err(DevstackError::TestBed)?,
    };
    tracing::info!(engine = %engine.describe(), "the runners' Terraform engine");
    config.engine = Some(engine);
    Ok(config)
}

/// The runner's environment from the stack (the task's overrides come on top).
pub(super) fn runner_env(
    env: &StackEnv,
    config: &DevstackConfig,
    plugin_cache: Option<&Path>,
) -> Vec<(String, String)> {
    let engine = config.engine.as_ref();
    let var = |k: &str, default: &str| {
        std::env::var(k)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.into())
    };
    let mut out: Vec<(String, String)> = vec![
        ("AWS_ENDPOINT_URL".into(), env.endpoint.clone()),
        ("AWS_ACCESS_KEY_ID".into(), var("AWS_ACCESS_KEY_ID", "testing")),
        (
            "AWS_SECRET_ACCESS_KEY".into(),
            var("AWS_SECRET_ACCESS_KEY", "testing"),
        ),
        ("AWS_REGION".into(), env.region.clone()),
        ("AWS_DEFAULT_REGION".into(), env.region.clone()),
        ("STRATO_RESOURCE_PREFIX".into(), env.names.prefix().to_owned()),
        // moto's STS issues a session for any role of its account and enforces no policy: the roles and
        // the runs' session policies are exercised here, their effect only in infra_apply's evaluation.
        (
            "STRATO_ENGINE_ROLE_ARN".into(),
            format!(
                "arn:aws:iam::123456789012:role/{}-runner-engine",
                env.names.prefix()
            ),
        ),
        (
            "STRATO_STATE_ROLE_ARN".into(),
            format!(
                "arn:aws:iam::123456789012:role/{}-runner-state",
                env.names.prefix()
            ),
        ),
        ("STRATO_PROVIDER_ENDPOINT".into(), env.endpoint.clone()),
        (
            "STRATO_TERRAFORM".into(),
            engine
                .map_or(&env.tools.terraform, |e| &e.terraform)
                .display()
                .to_string(),
        ),
        ("STRATO_AGENT_TOKEN_SECRET".into(), env.agent_token_secret.clone()),
        ("STRATO_TOOLS_DIR".into(), env.tools.root.display().to_string()),
        // A moto gap, not a choice: moto's STS does not evaluate trust policies (every AssumeRole succeeds),
        // so the probe that refuses a target role assumable without the tenant's external id would refuse
        // every role here. In AWS the runner never has this set.
        ("STRATO_UNSAFE_SKIP_EXTERNAL_ID_PROBE".into(), "true".into()),
    ];
    out.extend(engine.map_or_else(|| env.tools.engine_env(), |e| e.engine_env()));
    if env.recorder.is_some() {
        let log = env.runner_call_log().display().to_string();
        out.push((strato_calls::recorder::CALL_LOG_ENV.into(), log));
    }
    // The bed's provider cache only: a modern engine links its unpacked mirror (and would fill a cache).
    if let Some(c) = plugin_cache.filter(|_| !engine.is_some_and(|e| e.is_modern())) {
        out.push(("TF_PLUGIN_CACHE_DIR".into(), c.display().to_string()));
    }
    if config.s3_compatible_on_emulator {
        out.push(("STRATO_S3_COMPATIBLE_ENDPOINT".into(), env.endpoint.clone()));
    }
    out.extend(config.runner_env.iter().cloned());
    out
}
