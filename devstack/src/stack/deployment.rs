//! devstack on a deployment: the resources `infra/` applied (into moto) instead of `create_all`'s. The
//! example root's outputs (`terraform output -json`) name them; each function runs with the environment
//! the deployment gave its Lambda (read back from the emulator, secrets resolved from Secrets Manager as
//! the functions' `main` does), and each runner with its task definition's environment and secrets. Only
//! what points at devstack's own emulations is replaced (see [`LOCAL_FUNCTION_KEYS`], [`LOCAL_RUNNER_KEYS`]).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_ecs::types::ContainerDefinition;
use serde_json::Value;
use strato_aws::aws::AwsClients;
use strato_aws::ports::RunnerSettings;
use strato_aws::resources::{self, Names};

use crate::error::DevstackError;

/// The seven functions, by their key in the deployment's `functions` output.
pub const FUNCTIONS: &[&str] = &[
    "api",
    "dispatcher",
    "status",
    "ws",
    "log-fanout",
    "scheduler",
    "webhooks",
];

/// Function settings that name an endpoint only devstack has (its WebSocket emulation's `@connections`).
pub const LOCAL_FUNCTION_KEYS: &[&str] = &["STRATO_WS_MANAGEMENT_ENDPOINT"];

/// Runner settings that name the image's own files or AWS's endpoints: devstack's local engine and moto
/// take their place (a Fargate task's image has `tofu` at its own path; here it is the machine's engine).
pub const LOCAL_RUNNER_KEYS: &[&str] = &["STRATO_TERRAFORM", "STRATO_PROVIDER_ENDPOINT", "AWS_ENDPOINT_URL"];

/// What the example root's outputs say about the deployment.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub prefix: String,
    pub region: String,
    /// Logical function name → Lambda function name.
    pub functions: BTreeMap<String, String>,
    pub tables: BTreeMap<String, String>,
    /// Logical queue name → queue URL.
    pub queues: BTreeMap<String, String>,
    pub buckets: BTreeMap<String, String>,
    pub runner: RunnerSettings,
    pub kms_key_arn: String,
}

/// What devstack takes from the applied deployment, resolved.
#[derive(Debug, Clone)]
pub struct Applied {
    /// Each function's Lambda environment, `NAME_ARN` secrets resolved to `NAME`.
    pub function_env: BTreeMap<String, HashMap<String, String>>,
    /// The runner container's environment and secrets (ECS `secrets` resolved), minus [`LOCAL_RUNNER_KEYS`].
    pub runner_env: Vec<(String, String)>,
}

impl Applied {
    /// `function`'s setting `key` as the deployment gave it.
    pub fn get(&self, function: &str, key: &str) -> Option<String> {
        self.function_env.get(function)?.get(key).cloned()
    }
}

fn config_err(reason: impl Into<String>) -> DevstackError {
    DevstackError::Config {
        field: "deployment outputs (terraform output -json of infra/example)",
        reason: reason.into(),
    }
}

fn string_map(v: &Value, key: &str) -> Result<BTreeMap<String, String>, DevstackError> {
    v.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| config_err(format!("`{key}` is missing or not a map")))?
        .iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) if !s.is_empty() => Ok((k.clone(), s.to_owned())),
            _ => Err(config_err(format!("`{key}.{k}` is not a non-empty string"))),
        })
        .collect()
}

fn string(v: &Value, path: &str) -> Result<String, DevstackError> {
    v.pointer(&format!("/{}", path.replace('.', "/")))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| config_err(format!("`{path}` is missing or empty")))
}

fn strings(v: &Value, path: &str) -> Result<Vec<String>, DevstackError> {
    v.pointer(&format!("/{}", path.replace('.', "/")))
        .and_then(Value::as_array)
        .ok_or_else(|| config_err(format!("`{path}` is missing or not a list")))?
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| config_err(format!("`{path}` holds a non-string")))
        })
        .collect()
}

impl Deployment {
    /// From `terraform output -json` (`{"name": {"value": …}}`) or from plain `{"name": value}`.
    pub fn from_outputs(outputs: &Value) -> Result<Self, DevstackError> {
        let obj = outputs
            .as_object()
            .ok_or_else(|| config_err("not a JSON object"))?;
        let v: serde_json::Map<String, Value> = obj
            .iter()
            .map(|(k, o)| (k.clone(), o.get("value").cloned().unwrap_or_else(|| o.clone())))
            .collect();
        let v = Value::Object(v);
        Ok(Self {
            prefix: string(&v, "resource_prefix")?,
            region: string(&v, "region")?,
            functions: string_map(&v, "functions")?,
            tables: string_map(&v, "tables")?,
            queues: string_map(&v, "queues")?,
            buckets: string_map(&v, "buckets")?,
            runner: RunnerSettings {
                cluster: string(&v, "runner.cluster_arn")?,
                task_definition: string(&v, "runner.task_definition_arn")?,
                container: string(&v, "runner.container")?,
                subnets: strings(&v, "runner.subnets")?,
                security_groups: strings(&v, "runner.security_groups")?,
                assign_public_ip: v
                    .pointer("/runner/assign_public_ip")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            kms_key_arn: string(&v, "kms_key_arn")?,
        })
    }

    /// The functions find their tables, queues and buckets by name from the prefix (`Names`): the
    /// deployment must have created exactly those, or the functions would talk to something else.
    pub fn check_names(&self, names: &Names) -> Result<(), DevstackError> {
        let mut wrong = Vec::new();
        let mut compare = |kind: &str, have: &BTreeMap<String, String>, want: Vec<(&str, String)>| {
            let logical: Vec<&str> = want.iter().map(|(l, _)| *l).collect();
            for extra in have.keys().filter(|k| !logical.contains(&k.as_str())) {
                wrong.push(format!("{kind} `{extra}` is not one Strato uses"));
            }
            for (l, name) in want {
                match have.get(l) {
                    // Queues are given by URL: the name is its last path segment.
                    Some(h) if h == &name || h.rsplit('/').next() == Some(name.as_str()) => {}
                    Some(h) => wrong.push(format!("{kind} `{l}` is {h}; the functions use {name}")),
                    None => wrong.push(format!("{kind} `{l}` ({name}) is missing")),
                }
            }
        };
        compare(
            "table",
            &self.tables,
            resources::TABLES
                .iter()
                .map(|t| (t.logical, names.table(t.logical)))
                .collect(),
        );
        compare(
            "queue",
            &self.queues,
            resources::QUEUES
                .iter()
                .map(|q| (q.logical, names.queue(q.logical)))
                .collect(),
        );
        compare(
            "bucket",
            &self.buckets,
            resources::BUCKETS
                .iter()
                .map(|b| (b.logical, names.bucket(b.logical)))
                .collect(),
        );
        let missing: Vec<&&str> = FUNCTIONS
            .iter()
            .filter(|f| !self.functions.contains_key(**f))
            .collect();
        if !missing.is_empty() {
            wrong.push(format!("functions {missing:?} are missing"));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(config_err(wrong.join("; ")))
        }
    }
}

impl super::StackEnv {
    /// `function`'s configuration source: on a deployment, the environment it gave that Lambda (with
    /// `local` for [`LOCAL_FUNCTION_KEYS`]); otherwise devstack's own settings, `local`.
    pub fn lookup_for<'a>(
        &'a self,
        function: &'a str,
        local: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| match &self.applied {
            Some(a) if !LOCAL_FUNCTION_KEYS.contains(&key) => a.get(function, key),
            _ => local(key),
        }
    }
}

/// Reads back what the deployment gave each function and the runner (see the module docs).
pub(super) async fn read_applied(
    d: &Deployment,
    aws: &AwsClients,
    ecs: &aws_sdk_ecs::Client,
    http: &reqwest::Client,
    endpoint: &str,
) -> Result<Applied, DevstackError> {
    let mut function_env = BTreeMap::new();
    for (logical, name) in &d.functions {
        let env = lambda_environment(http, endpoint, &d.region, name).await?;
        let resolved = strato_aws::secret_env::resolve(env, &aws.config)
            .await
            .map_err(|e| DevstackError::step(format!("resolving the {logical} function's secrets"), e))?;
        function_env.insert(logical.clone(), resolved);
    }
    let task = ecs
        .describe_task_definition()
        .task_definition(&d.runner.task_definition)
        .send()
        .await
        .map_err(|e| DevstackError::aws("DescribeTaskDefinition", e))?;
    let container = task
        .task_definition()
        .map(|t| t.container_definitions())
        .unwrap_or_default()
        .iter()
        .find(|c| c.name() == Some(d.runner.container.as_str()))
        .ok_or_else(|| {
            config_err(format!(
                "the task definition {} has no container `{}`",
                d.runner.task_definition, d.runner.container
            ))
        })?;
    let runner_env = container_env(container, aws).await?;
    Ok(Applied {
        function_env,
        runner_env,
    })
}

/// The container's `environment`, and its `secrets` read from Secrets Manager as ECS injects them.
async fn container_env(
    c: &ContainerDefinition,
    aws: &AwsClients,
) -> Result<Vec<(String, String)>, DevstackError> {
    let mut env: Vec<(String, String)> = c
        .environment()
        .iter()
        .filter_map(|kv| Some((kv.name()?.to_owned(), kv.value().unwrap_or_default().to_owned())))
        .collect();
    let sm = aws_sdk_secretsmanager::Client::new(&aws.config);
    for s in c.secrets() {
        let value = sm
            .get_secret_value()
            .secret_id(s.value_from())
            .send()
            .await
            .map_err(|e| DevstackError::aws("GetSecretValue", e))?;
        env.push((
            s.name().to_owned(),
            value.secret_string().unwrap_or_default().to_owned(),
        ));
    }
    env.retain(|(k, _)| !LOCAL_RUNNER_KEYS.contains(&k.as_str()));
    Ok(env)
}

/// A Lambda function's environment as the emulator holds it (Lambda's REST API; moto checks no signature,
/// and the workspace has no Lambda SDK client for this one read).
async fn lambda_environment(
    http: &reqwest::Client,
    endpoint: &str,
    region: &str,
    name: &str,
) -> Result<HashMap<String, String>, DevstackError> {
    let step = format!("reading the Lambda function {name}'s configuration");
    let url = format!(
        "{}/2015-03-31/functions/{name}/configuration",
        endpoint.trim_end_matches('/')
    );
    let resp = http
        .get(url)
        // moto picks the service and region from the signing scope.
        .header(
            "Authorization",
            format!("AWS4-HMAC-SHA256 Credential=testing/20260101/{region}/lambda/aws4_request"),
        )
        .send()
        .await
        .map_err(|e| DevstackError::step(&step, e))?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| DevstackError::step(&step, e))?;
    if !status.is_success() {
        return Err(DevstackError::step(&step, format!("HTTP {status}: {body}")));
    }
    Ok(body
        .pointer("/Environment/Variables")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outputs(prefix: &str) -> Value {
        let names = Names::new(prefix).unwrap();
        let tables: BTreeMap<_, _> = resources::TABLES
            .iter()
            .map(|t| (t.logical, names.table(t.logical)))
            .collect();
        let queues: BTreeMap<_, _> = resources::QUEUES
            .iter()
            .map(|q| {
                (
                    q.logical,
                    format!("http://moto/123456789012/{}", names.queue(q.logical)),
                )
            })
            .collect();
        let buckets: BTreeMap<_, _> = resources::BUCKETS
            .iter()
            .map(|b| (b.logical, names.bucket(b.logical)))
            .collect();
        let functions: BTreeMap<_, _> = FUNCTIONS.iter().map(|f| (*f, format!("{prefix}-{f}"))).collect();
        // The shape `terraform output -json` prints.
        let v = json!({
            "resource_prefix": prefix, "region": "us-east-1", "tables": tables, "queues": queues,
            "buckets": buckets, "functions": functions, "kms_key_arn": "arn:aws:kms:us-east-1:1:key/k",
            "runner": {"cluster_arn": "c", "task_definition_arn": "t", "container": "runner",
                       "subnets": ["subnet-1"], "security_groups": [], "assign_public_ip": false},
        });
        Value::Object(
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), json!({"value": v, "sensitive": false})))
                .collect(),
        )
    }

    #[test]
    fn outputs_naming_the_functions_resources_are_accepted() {
        let d = Deployment::from_outputs(&outputs("strato-x")).unwrap();
        assert_eq!(d.runner.subnets, ["subnet-1"]);
        d.check_names(&Names::new("strato-x").unwrap()).unwrap();
    }

    #[test]
    fn a_deployment_whose_names_the_functions_would_not_find_is_refused() {
        let d = Deployment::from_outputs(&outputs("strato-x")).unwrap();
        let err = d
            .check_names(&Names::new("strato-y").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("table `clusters` is strato-x-clusters; the functions use strato-y-clusters"),
            "{err}"
        );
        let mut o = outputs("strato-x");
        o["tables"]["value"].as_object_mut().unwrap().remove("locks");
        o["functions"]["value"].as_object_mut().unwrap().remove("ws");
        let err = Deployment::from_outputs(&o)
            .unwrap()
            .check_names(&Names::new("strato-x").unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("table `locks` (strato-x-locks) is missing"), "{err}");
        assert!(err.contains("functions [\"ws\"] are missing"), "{err}");
        let mut o = outputs("strato-x");
        o["runner"]["value"]
            .as_object_mut()
            .unwrap()
            .remove("cluster_arn");
        let err = Deployment::from_outputs(&o).unwrap_err().to_string();
        assert!(err.contains("`runner.cluster_arn` is missing"), "{err}");
    }
}
