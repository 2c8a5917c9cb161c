//! A run on the fakes: the operation recorded in the fake store with its cluster lock taken, the runner's
//! fixture templates published (`runner/tests/fixtures`: `net` is one stage `main`, `eks` two stages
//! `network` then `cluster`, `locked` is `net` with a provider lock file), a scripted engine, and readers of
//! what the run did.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strato_domain::error::UserError;
use strato_domain::ids::ClusterId;
use strato_domain::messages::{LogLine, RunnerEvent};
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef,
};
use strato_domain::ports::{ClusterLocks, LockOutcome};
use strato_fakes::{FakeClock, FakeStore};

use crate::fakes::{
    Cmd, FakeCloud, FakeEngine, FakeKeys, FakeKube, FakePorts, FakeReporter, FakeRunStore, FakeSecrets,
    FakeSignals, FakeSinks, Reply,
};
use crate::ports::RunPorts;
use crate::workspace::TFVARS_FILE;
use crate::{Config, RunSummary, RunnerError, run_with};

pub const ENGINE_ROLE: &str = "arn:aws:iam::123456789012:role/test-runner-engine";
pub const STATE_ROLE: &str = "arn:aws:iam::123456789012:role/test-runner-state";

/// One operation's run on the fakes; every fake is shared with the run, so the test reads what it did.
pub struct Bed {
    pub cfg: Config,
    pub store: FakeRunStore,
    pub sinks: FakeSinks,
    pub reporter: FakeReporter,
    pub secrets: FakeSecrets,
    pub keys: FakeKeys,
    pub cloud: FakeCloud,
    pub engine: FakeEngine,
    pub signals: FakeSignals,
    pub kube: FakeKube,
    pub op: Operation,
    pub cluster: Cluster,
    pub token: u64,
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

impl Bed {
    /// An operation of `kind` on a cluster of fixture template `template` (`net` or `eks`), with the
    /// default engine (1.8.3).
    pub async fn new(kind: OperationKind, template: &str) -> Self {
        Self::with_engine(kind, template, FakeEngine::default()).await
    }

    /// A drift check of fixture template `net` that finds nothing: init, a plan without changes, its JSON,
    /// no outputs.
    pub async fn quiet_drift_check() -> Self {
        let bed = Self::new(OperationKind::DriftCheck, "net").await;
        bed.engine
            .expect(Cmd::Init, Reply::ok())
            .expect(Cmd::Plan, Reply::no_changes())
            .expect(Cmd::Show, Reply::json(&plan(&[])))
            .expect(Cmd::Output, Reply::json(&outputs(&[])));
        bed
    }

    pub async fn with_engine(kind: OperationKind, template: &str, engine: FakeEngine) -> Self {
        let clock = FakeClock::default();
        let store = FakeRunStore::new(FakeStore::new(clock.clone()));
        let cloud = FakeCloud::default();
        for t in ["net", "eks", "locked", "clouds", "agent"] {
            let bundle = strato_terraform::bundle::pack(
                &fixtures().join("templates").join(t),
                &fixtures().join("modules"),
            )
            .unwrap();
            store.put_template(cloud.publish(&bundle));
        }
        let spec = ClusterSpec {
            name: "demo".parse().unwrap(),
            template: TemplateRef {
                name: format!("runner-{template}"),
                version: "0.1.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "us-east-1".into(),
            variables: Default::default(),
            target: None,
        };
        let now = strato_domain::ports::Clock::now(&clock);
        let tenant = "acme".parse().unwrap();
        let mut cluster = Cluster::new(tenant, ClusterId::generate(), spec.clone(), now);
        if kind == OperationKind::Create {
            cluster.transition(ClusterState::Provisioning).unwrap();
        }
        let mut op = Operation::new(cluster.tenant_id.clone(), cluster.cluster_id.clone(), kind, now);
        op.spec = Some(spec);
        if kind.has_cluster() {
            store.store.put_cluster(cluster.clone());
        }
        store.store.put_operation(op.clone());
        let token = match store
            .store
            .acquire_lock(&op.cluster_id, &op.operation_id, time::Duration::hours(2), now)
            .await
            .unwrap()
        {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            other => panic!("lock: {other:?}"),
        };
        let op_id = op.operation_id.to_string();
        let token_text = token.to_string();
        let env: HashMap<&str, &str> = [
            ("STRATO_OPERATION_ID", op_id.as_str()),
            ("STRATO_FENCING_TOKEN", token_text.as_str()),
            ("STRATO_RUN_PROOF", "run-proof-of-the-test"),
            ("STRATO_RESOURCE_PREFIX", "test"),
            ("STRATO_ENGINE_ROLE_ARN", ENGINE_ROLE),
            ("STRATO_STATE_ROLE_ARN", STATE_ROLE),
            ("STRATO_AGENT_TOKEN_SECRET", "agent-token-secret"),
        ]
        .into();
        let mut cfg = Config::from_lookup(|k| env.get(k).map(|v| (*v).to_owned())).unwrap();
        // Fast guards: a cancel is seen within milliseconds, retries wait a millisecond, a state lock that
        // may be held fails at once.
        cfg.heartbeat = Duration::from_millis(10);
        cfg.retry_base = Duration::from_millis(1);
        cfg.state_lock_wait = Duration::ZERO;
        Self {
            cfg,
            store,
            sinks: FakeSinks::default(),
            reporter: FakeReporter::default(),
            secrets: FakeSecrets::default(),
            keys: FakeKeys::default(),
            cloud,
            engine,
            signals: FakeSignals::default(),
            kube: FakeKube::default(),
            op,
            cluster,
            token,
        }
    }

    /// Changes the recorded operation (as the API or an approver would have before the run).
    pub fn edit_op(&mut self, f: impl FnOnce(&mut Operation)) {
        f(&mut self.op);
        self.store.store.put_operation(self.op.clone());
    }

    fn ports(&self) -> RunPorts<FakePorts> {
        RunPorts {
            store: self.store.clone(),
            sinks: self.sinks.clone(),
            reporter: self.reporter.clone(),
            secrets: self.secrets.clone(),
            keys: self.keys.clone(),
            cloud: self.cloud.clone(),
            engine: self.engine.clone(),
            signals: self.signals.clone(),
            kube: self.kube.clone(),
        }
    }

    /// Runs the operation to its end.
    pub async fn run(&self) -> Result<RunSummary, RunnerError> {
        tokio::time::timeout(Duration::from_secs(30), run_with(self.cfg.clone(), self.ports()))
            .await
            .expect("a run on the fakes ends within seconds")
    }

    /// Runs the operation; its one final event, which must also be the last event sent.
    pub async fn run_to_final(&self) -> RunnerEvent {
        let summary = self.run().await.expect("a final event was sent");
        let finals = self.reporter.finals();
        assert_eq!(finals.len(), 1, "exactly one final event: {finals:#?}");
        assert_eq!(
            self.reporter.all().last(),
            Some(&finals[0]),
            "the final event comes after every progress event"
        );
        assert_eq!(summary.final_event, finals[0]);
        finals[0].clone()
    }

    /// Runs the operation, which must fail; the error its final event carries.
    pub async fn run_to_failure(&self) -> UserError {
        match self.run_to_final().await {
            RunnerEvent::Failed { error, .. } => error,
            other => panic!("expected a failure: {other:#?}\nlog: {:#?}", self.log()),
        }
    }

    /// Runs the operation, which must succeed; its outputs.
    pub async fn run_to_success(&self) -> serde_json::Map<String, Value> {
        match self.run_to_final().await {
            RunnerEvent::Succeeded { outputs, .. } => outputs.into_iter().collect(),
            other => panic!("expected success: {other:#?}\nlog: {:#?}", self.log()),
        }
    }

    /// The steps started, in order.
    pub fn steps(&self) -> Vec<String> {
        self.reporter
            .progress()
            .into_iter()
            .filter_map(|e| match e {
                RunnerEvent::StepStarted { step, .. } => Some(step),
                _ => None,
            })
            .collect()
    }

    /// Whether step `name` finished, and how.
    pub fn finished(&self, name: &str) -> Vec<bool> {
        self.reporter
            .progress()
            .into_iter()
            .filter_map(|e| match e {
                RunnerEvent::StepFinished { step, ok, .. } if step == name => Some(ok),
                _ => None,
            })
            .collect()
    }

    /// The archived log.
    pub fn log_lines(&self) -> Vec<LogLine> {
        self.sinks.archived_lines()
    }

    /// The archived log's texts.
    pub fn log(&self) -> Vec<String> {
        self.log_lines().into_iter().map(|l| l.text).collect()
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.log().iter().any(|t| t.contains(needle))
    }

    /// The state object key of `stage` in the platform's bucket.
    pub fn state_key(&self, stage: &str) -> String {
        strato_terraform::render::state_key(&self.cluster.tenant_id, &self.cluster.cluster_id, stage)
    }

    /// The Terraform state lock id of `stage` on the platform's bucket, and its table.
    pub fn state_lock(&self, stage: &str) -> (String, String) {
        let bucket = self.cfg.names.bucket("state");
        (
            self.cfg.names.table("tf-locks"),
            strato_aws::state_lock::lock_id(&bucket, &self.state_key(stage)),
        )
    }
}

/// A plan (`show -json`) changing `resources`, each `(address, type, action)`.
pub fn plan(resources: &[(&str, &str, &str)]) -> Value {
    let changes: Vec<Value> = resources
        .iter()
        .map(|(address, ty, action)| {
            json!({
                "address": address,
                "mode": "managed",
                "type": ty,
                "change": {"actions": [action], "after": {}},
            })
        })
        .collect();
    json!({ "format_version": "1.0", "resource_changes": changes })
}

/// The fixture network's plan: a VPC and a security group to add.
pub fn vpc_plan() -> Value {
    plan(&[
        ("aws_vpc.this", "aws_vpc", "create"),
        ("aws_security_group.this", "aws_security_group", "create"),
    ])
}

/// `output -json` of `(name, value, sensitive)`.
pub fn outputs(values: &[(&str, Value, bool)]) -> Value {
    let mut m = serde_json::Map::new();
    for (name, value, sensitive) in values {
        m.insert(
            (*name).to_owned(),
            json!({"sensitive": sensitive, "type": "string", "value": value}),
        );
    }
    Value::Object(m)
}

/// A stage's create or update that goes through: init, a plan with changes, its JSON, the apply, then
/// The `eks` fixture's `network` outputs: a VPC, `subnets` and a security group.
pub fn network_outputs(subnets: &[&str]) -> Value {
    outputs(&[
        ("vpc_id", "vpc-1".into(), false),
        ("subnet_ids", json!(subnets), false),
        ("security_group_id", "sg-1".into(), false),
    ])
}

/// Runs `bed` (a create of the `eks` fixture) to success, its `network` stage applying with
/// [`network_outputs`] of `subnets` and its `cluster` stage planning no changes (its plan shown as
/// `shown`): the inputs the `cluster` stage got (its tfvars).
pub async fn cluster_stage_inputs(bed: &Bed, subnets: &[&str], shown: &Value) -> Value {
    applies(&bed.engine, "network", &vpc_plan(), &network_outputs(subnets));
    let inputs = std::sync::Arc::new(std::sync::Mutex::new(Value::Null));
    let seen = inputs.clone();
    bed.engine
        .expect_in("cluster", Cmd::Init, Reply::ok())
        .expect_in(
            "cluster",
            Cmd::Plan,
            Reply::no_changes().on_start(move |dir| {
                let text = std::fs::read_to_string(dir.join(TFVARS_FILE)).unwrap();
                *seen.lock().unwrap() = serde_json::from_str(&text).unwrap();
            }),
        )
        .expect_in("cluster", Cmd::Show, Reply::json(shown))
        .expect_in("cluster", Cmd::Output, Reply::json(&outputs(&[])));
    bed.run_to_success().await;
    bed.engine.assert_done();
    inputs.lock().unwrap().clone()
}

/// outputs while the state is refreshed.
pub fn applies(engine: &FakeEngine, stage: &str, plan: &Value, outs: &Value) {
    engine
        .expect_in(stage, Cmd::Init, Reply::ok())
        .expect_in(stage, Cmd::Plan, Reply::changes(b"saved plan"))
        .expect_in(stage, Cmd::Show, Reply::json(plan))
        .expect_in(stage, Cmd::Apply, Reply::ok().stdout("Apply complete!"))
        .expect_in(stage, Cmd::Output, Reply::json(outs))
        .expect_in(stage, Cmd::Refresh, Reply::ok());
}

/// A stage planned up to its budget and policy checks: init, a plan with changes, its JSON.
pub fn plans(engine: &FakeEngine, stage: &str, plan: &Value) {
    engine
        .expect_in(stage, Cmd::Init, Reply::ok())
        .expect_in(stage, Cmd::Plan, Reply::changes(b"saved plan"))
        .expect_in(stage, Cmd::Show, Reply::json(plan));
}

/// The cleanup of a failed create's `stage`: the state lists `before`, the destroy succeeds, the state is
/// then empty.
pub fn cleans_up(engine: &FakeEngine, stage: &str, before: &[&str]) {
    engine
        .expect_in(stage, Cmd::StateList, Reply::ok().stdout(&before.join("\n")))
        .expect_in(stage, Cmd::Destroy, Reply::ok())
        .expect_in(stage, Cmd::StateList, Reply::ok());
}

/// `Error:` diagnostics the classifier calls transient (EC2 throttling).
pub const THROTTLED: &str =
    "Error: Error creating VPC: RequestLimitExceeded: Request limit exceeded.\n\tstatus code: 503";

/// `Error:` diagnostics of a permanent failure (invalid configuration).
pub const BAD_SUBNET: &str = "Error: error creating subnet: InvalidSubnet.Range: The CIDR '10.99.1.0/24' is invalid.\n\tstatus code: 400";

/// The access key id of each profile of the run's credentials file, read (while a command runs) from the
/// stage directory `dir` the engine was started in.
pub fn credential_profiles(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let path = dir.join("../..").join(crate::workspace::CREDENTIALS_FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut out = std::collections::BTreeMap::new();
    let mut profile = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            profile = name.to_owned();
        } else if let Some(key) = line.strip_prefix("aws_access_key_id = ") {
            out.insert(profile.clone(), key.to_owned());
        }
    }
    out
}
