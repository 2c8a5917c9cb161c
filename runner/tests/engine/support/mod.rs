//! Test bed for the runner: a private set of tables/queues/buckets on moto, the fixture templates
//! published, helpers to record clusters and operations, run the runner and read what it produced.

pub mod proxy;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use strato_aws::ports::KmsKeys;
use strato_aws::queues::QueueUrls;
use strato_aws::store::{LockOutcome, Quotas, Store};
use strato_domain::error::UserError;
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::messages::{LogLine, RunnerEvent};
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef,
};
use strato_domain::run_proof::{PROOF_FIELD, RunProofKey};
use strato_domain::sealed;
use strato_domain::ts;
use strato_runner::{Clients, Config, RunSummary, RunnerError};
use strato_terraform::artifacts;
use strato_terraform::bundle;
use strato_terraform::render::state_key;
use strato_testbed::{TestEngine, TestEnv};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub struct Bed {
    pub env: TestEnv,
    pub store: Store,
    pub queues: QueueUrls,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub tenant: TenantId,
    /// The engine of the matrix this bed runs (`tf015` or `modern`).
    pub engine: TestEngine,
}

pub struct Job {
    pub op: Operation,
    pub token: u64,
}

impl Bed {
    /// A bed with the PyPI bed's engine (Terraform 0.15, provider 3.39).
    pub async fn new() -> Self {
        Self::with_engine(TestEngine::tf015()).await
    }

    pub async fn with_engine(engine: TestEngine) -> Self {
        let env = TestEnv::new().await;
        for t in ["eks", "net"] {
            let b = bundle::pack(&fixtures().join("templates").join(t), &fixtures().join("modules")).unwrap();
            strato_aws::bundles::publish(&env.aws, &env.names, &b)
                .await
                .unwrap();
        }
        let store = Store::new(env.aws.dynamodb.clone(), &env.names);
        let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
        let secrets = aws_sdk_secretsmanager::Client::new(&env.aws.config);
        Self {
            env,
            store,
            queues,
            secrets,
            tenant: "acme".parse().unwrap(),
            engine,
        }
    }

    pub fn spec(&self, template: &str, name: &str, vars: Value) -> ClusterSpec {
        ClusterSpec {
            name: name.parse().unwrap(),
            template: TemplateRef {
                name: template.into(),
                version: "0.1.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "us-east-1".into(),
            variables: serde_json::from_value(vars).unwrap(),
            target: None,
        }
    }

    /// Records a cluster with its create operation and takes the cluster lock for it.
    pub async fn create(&self, spec: ClusterSpec) -> (Cluster, Job) {
        self.create_sealed(spec, &[]).await
    }

    /// Strato's KMS key on moto.
    pub fn keys(&self) -> KmsKeys {
        KmsKeys::new(&self.env.aws.kms, &self.env.names)
    }

    /// Issues the bed tenant's external id (as `GET /v1/tenant/target-access` does) and returns it.
    pub async fn issue_external_id(&self) -> String {
        let id = sealed::generate_external_id();
        let env = sealed::seal_external_id(&self.keys(), &self.tenant, &id)
            .await
            .unwrap();
        assert!(
            self.store
                .issue_tenant_external_id(&self.tenant, &env)
                .await
                .unwrap()
        );
        id.expose().to_owned()
    }

    /// Like [`create`](Self::create), with the `sealed` variables sealed as the api seals sensitive ones.
    pub async fn create_sealed(&self, mut spec: ClusterSpec, sealed_vars: &[&str]) -> (Cluster, Job) {
        let now = ts::now();
        let id = ClusterId::generate();
        sealed::seal_variables(
            &self.keys(),
            &self.tenant,
            &id,
            |k| sealed_vars.contains(&k),
            &mut spec.variables,
        )
        .await
        .unwrap();
        let mut c = Cluster::new(self.tenant.clone(), id, spec.clone(), now);
        c.transition(ClusterState::Provisioning).unwrap();
        let mut op = Operation::new(
            self.tenant.clone(),
            c.cluster_id.clone(),
            OperationKind::Create,
            now,
        );
        op.spec = Some(spec);
        self.store
            .create_cluster(&c, &op, &Quotas::default())
            .await
            .unwrap()
            .unwrap();
        let token = self.lock(&c.cluster_id, &op).await;
        (c, Job { op, token })
    }

    /// Records a further operation and takes the lock for it.
    pub async fn operation(&self, c: &Cluster, kind: OperationKind, spec: Option<ClusterSpec>) -> Job {
        let mut op = Operation::new(self.tenant.clone(), c.cluster_id.clone(), kind, ts::now());
        op.spec = spec;
        self.store
            .add_operation(&op, &Quotas::default())
            .await
            .unwrap()
            .unwrap();
        let token = self.lock(&c.cluster_id, &op).await;
        Job { op, token }
    }

    /// Records an estimate (no cluster: the operation's id is synthetic) and takes the lock on that id, as
    /// the dispatcher does.
    pub async fn estimate(&self, spec: ClusterSpec) -> Job {
        let mut op = Operation::new(
            self.tenant.clone(),
            ClusterId::generate(),
            OperationKind::Estimate,
            ts::now(),
        );
        op.spec = Some(spec);
        self.store
            .add_operation(&op, &Quotas::default())
            .await
            .unwrap()
            .unwrap();
        let token = self.lock(&op.cluster_id, &op).await;
        Job { op, token }
    }

    async fn lock(&self, c: &ClusterId, op: &Operation) -> u64 {
        match self
            .store
            .acquire_cluster_lock(c, &op.operation_id, time::Duration::hours(2), ts::now())
            .await
            .unwrap()
        {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            other => panic!("lock: {other:?}"),
        }
    }

    pub async fn release(&self, c: &Cluster, job: &Job) {
        self.store
            .release_cluster_lock(&c.cluster_id, &job.op.operation_id, job.token)
            .await
            .unwrap();
    }

    /// The environment the dispatcher + container image would give the runner.
    pub fn runner_env(&self, job: &Job, endpoint: &str) -> HashMap<String, String> {
        let mut m: HashMap<String, String> = [
            ("STRATO_OPERATION_ID", job.op.operation_id.to_string()),
            ("STRATO_FENCING_TOKEN", job.token.to_string()),
            ("STRATO_RUN_PROOF", run_proof(job)),
            ("STRATO_RESOURCE_PREFIX", self.env.names.prefix().to_owned()),
            ("STRATO_ENGINE_ROLE_ARN", ENGINE_ROLE.to_owned()),
            ("STRATO_STATE_ROLE_ARN", STATE_ROLE.to_owned()),
            ("STRATO_TERRAFORM", self.engine.terraform.display().to_string()),
            ("STRATO_PROVIDER_ENDPOINT", endpoint.to_owned()),
            ("STRATO_HEARTBEAT_SECS", "1".to_owned()),
            ("STRATO_GRACE_SECS", "30".to_owned()),
            ("STRATO_RETRY_BASE_MS", "300".to_owned()),
            ("STRATO_AGENT_TOKEN_SECRET", "test-secret".to_owned()),
            // moto's STS does not evaluate trust policies: the external-id probe would refuse every role.
            ("STRATO_UNSAFE_SKIP_EXTERNAL_ID_PROBE", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for (k, v) in self.engine.engine_env() {
            m.insert(k, v);
        }
        m
    }

    pub fn engine_env(&self) -> Vec<(String, String)> {
        let mut v = self.engine.engine_env();
        v.push(("AWS_ACCESS_KEY_ID".into(), "testing".into()));
        v.push(("AWS_SECRET_ACCESS_KEY".into(), "testing".into()));
        v
    }

    pub fn config(&self, job: &Job, overrides: &[(&str, &str)]) -> Config {
        let mut env = self.runner_env(job, &self.env.endpoint);
        for (k, v) in overrides {
            env.insert((*k).to_owned(), (*v).to_owned());
        }
        let mut cfg = Config::from_lookup(|k| env.get(k).cloned()).unwrap();
        cfg.extra_engine_env = self.engine_env();
        cfg
    }

    /// Runs the runner's library entry point in-process.
    pub async fn run(&self, cfg: Config) -> Result<RunSummary, RunnerError> {
        let clients = Clients::new(self.env.aws.clone(), &cfg).await.unwrap();
        strato_runner::run_operation(cfg, clients).await
    }

    /// Every event on the events queue (drained), each checked to carry its run's proof.
    pub async fn events(&self) -> Vec<RunnerEvent> {
        self.raw_events()
            .await
            .iter()
            .map(|b| {
                let v: serde_json::Value = serde_json::from_str(b).unwrap();
                let ev: RunnerEvent = serde_json::from_value(v.clone()).unwrap();
                let proof = v[PROOF_FIELD].as_str();
                assert!(
                    proof.is_some_and(|p| p == proof_key().proof(ev.operation_id(), ev.fencing_token())),
                    "a runner event without its run's proof: {b}"
                );
                ev
            })
            .collect()
    }

    /// Every message body on the events queue (drained).
    pub async fn raw_events(&self) -> Vec<String> {
        self.env.drain(&self.queues.events).await
    }

    /// Raw bodies of every message on the logs queue (drained).
    pub async fn log_frames(&self) -> Vec<String> {
        self.env.drain(&self.queues.logs).await
    }

    async fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        self.env.object_bytes(bucket, key).await
    }

    /// The archived user log, chunk by chunk in key order, and the completion marker's last seq.
    pub async fn archived_log(&self, job: &Job) -> (Vec<LogLine>, Option<u64>) {
        let bucket = self.env.names.bucket("artifacts");
        let list = self
            .env
            .aws
            .s3
            .list_objects_v2()
            .bucket(&bucket)
            .prefix(artifacts::log_prefix(&job.op.operation_id))
            .send()
            .await
            .unwrap();
        let mut keys: Vec<String> = list
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_owned))
            .collect();
        keys.sort();
        let mut lines = Vec::new();
        for k in keys
            .iter()
            .filter(|k| artifacts::parse_log_chunk_key(k).is_some())
        {
            let body = self.get(&bucket, k).await.unwrap();
            for l in String::from_utf8(body).unwrap().lines() {
                lines.push(serde_json::from_str(l).unwrap());
            }
        }
        let complete = self
            .get(&bucket, &artifacts::log_complete_key(&job.op.operation_id))
            .await
            .map(|b| String::from_utf8(b).unwrap().trim().parse().unwrap());
        (lines, complete)
    }

    /// Prints the archived log (for failing tests).
    pub async fn dump_log(&self, job: &Job) {
        for l in self.archived_log(job).await.0 {
            eprintln!("{:>5} {:<16} {:?} {}", l.seq, l.step, l.stream, l.text);
        }
    }

    /// The stage's Terraform state in the platform bucket (`None` if never written).
    pub async fn state(&self, c: &Cluster, stage: &str) -> Option<Value> {
        let key = state_key(&c.tenant_id, &c.cluster_id, stage);
        let body = self.get(&self.env.names.bucket("state"), &key).await?;
        Some(serde_json::from_slice(&body).unwrap())
    }

    /// Resource types in a stage's state.
    pub async fn state_types(&self, c: &Cluster, stage: &str) -> Vec<String> {
        let Some(s) = self.state(c, stage).await else {
            return Vec::new();
        };
        let mut v: Vec<String> = s["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["mode"] == "managed")
            .map(|r| r["type"].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    }

    /// Terraform state locks currently held (digest entries excluded).
    pub async fn held_locks(&self) -> Vec<String> {
        let r = self
            .env
            .aws
            .dynamodb
            .scan()
            .table_name(self.env.names.table("tf-locks"))
            .send()
            .await
            .unwrap();
        r.items()
            .iter()
            .filter_map(|i| i.get("LockID").and_then(|v| v.as_s().ok()).cloned())
            .filter(|id| !id.ends_with("-md5"))
            .collect()
    }
}

/// The error of the run's one final event, which must be a failure.
pub fn the_failure(events: &[RunnerEvent]) -> &UserError {
    let finals = final_events(events);
    let [RunnerEvent::Failed { error, .. }] = finals[..] else {
        panic!("expected one failure: {finals:#?}");
    };
    error
}

pub fn final_events(events: &[RunnerEvent]) -> Vec<&RunnerEvent> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                RunnerEvent::Succeeded { .. } | RunnerEvent::Failed { .. } | RunnerEvent::Cancelled { .. }
            )
        })
        .collect()
}

pub fn steps_started(events: &[RunnerEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunnerEvent::StepStarted { step, .. } => Some(step.clone()),
            _ => None,
        })
        .collect()
}

pub async fn wait_for_step(bed: &Bed, events: &mut Vec<RunnerEvent>, step: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        events.extend(bed.events().await);
        if steps_started(events).iter().any(|s| s == step) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "step {step} never started: {events:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

pub async fn wait_for_log(bed: &Bed, job: &Job, needle: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        if bed
            .archived_log(job)
            .await
            .0
            .iter()
            .any(|l| l.text.contains(needle))
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "log line {needle:?} never archived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

/// A raw EC2 Query API call to moto (no SDK for EC2 in the workspace): for out-of-band changes in drift tests.
pub async fn ec2_call(endpoint: &str, form: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = endpoint.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
    let req = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded; charset=utf-8\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=00\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// What the modern engine must show when a bed runs it: the runner reported that engine's version and
/// the AWS provider >= 5 (so it cannot have fallen back to the 0.15 bed or the provider 3 dialect), and no
/// engine command of the run printed a deprecation or any warning but the lock file's note that a
/// filesystem mirror gives only this platform's checksums. With `tf015`: that engine and provider 3.39.
pub async fn assert_engine_used_cleanly(bed: &Bed, job: &Job) {
    let (lines, _) = bed.archived_log(job).await;
    let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    let engine_note = text
        .iter()
        .find(|t| t.starts_with("engine ") && t.contains(&bed.engine.terraform.display().to_string()))
        .unwrap_or_else(|| panic!("no engine note in {text:#?}"));
    let short = bed.engine.version.split('-').next().unwrap_or_default();
    assert!(
        engine_note.ends_with(short),
        "{engine_note} is not {}",
        bed.engine.version
    );
    let provider = format!("AWS provider {}", bed.engine.provider_version);
    assert!(
        text.iter().any(|t| t.starts_with(&provider)),
        "no {provider:?} note: {text:#?}"
    );
    if bed.engine.is_modern() {
        assert!(
            text.iter().any(|t| t.contains("(Modern provider settings)")),
            "{text:#?}"
        );
        // Known and accepted (see `allowed_warning`): nothing else may warn.
        // Each warning with the lines that say what it is about.
        let bad: Vec<String> = text
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                (t.contains("Warning:") || t.contains("Deprecat")) && !allowed_warning(&text, *i)
            })
            .map(|(i, _)| text[i..(i + 8).min(text.len())].join("\n"))
            .collect();
        assert!(
            bad.is_empty(),
            "warnings from the modern engine:\n{}",
            bad.join("\n---\n")
        );
    }
}

/// Whether the warning at `text[i]` is one of the two the modern engine prints for reasons outside the
/// templates and the runner's rendering:
/// - "Incomplete lock file information for providers" (`init`): a filesystem mirror gives only this
///   platform's checksums;
/// - the S3 backend's "dynamodb_table is deprecated; use use_lockfile" (Terraform >= 1.11): Strato's state
///   locks are DynamoDB items (leftover locks of dead runs are released there, `state_lock.rs`); moving to
///   S3 lock files is a change of its own (issue 17 report), so exactly this deprecation is let through.
fn allowed_warning(text: &[&str], i: usize) -> bool {
    let about = text[i..(i + 4).min(text.len())].join(" ");
    about.contains("Incomplete lock file information for providers")
        || (about.contains("Deprecated Parameter") && about.contains("\"dynamodb_table\" is deprecated"))
}

/// The deployment's engine and state roles (moto's STS issues sessions for any role of its account).
pub const ENGINE_ROLE: &str = "arn:aws:iam::123456789012:role/strato-test-runner-engine";
pub const STATE_ROLE: &str = "arn:aws:iam::123456789012:role/strato-test-runner-state";

/// The dispatcher's key, as the tests stand in for it.
pub fn proof_key() -> RunProofKey {
    RunProofKey::new(b"runner-tests-run-proof-key-32-bytes!".to_vec()).unwrap()
}

/// The proof the dispatcher would start `job`'s runner with.
pub fn run_proof(job: &Job) -> String {
    proof_key().proof(&job.op.operation_id, job.token)
}
