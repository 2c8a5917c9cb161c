//! Test world shared by the dispatcher and status tests (the status tests include this file by path): a
//! fresh set of Strato resources on the process's moto, an ECS cluster and FARGATE task definition for the
//! runner, a dispatcher context, and helpers that act as the API (records) and as Lambda (SQS events).
#![allow(dead_code)] // each test crate uses a different subset

use std::collections::BTreeMap;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_ecs::types::{Compatibility, ContainerDefinition, NetworkMode};
use aws_sdk_sqs::operation::receive_message::builders::ReceiveMessageFluentBuilder;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use serde_json::{Value, json};
use strato_aws::queues::QueueUrls;
use strato_aws::store::{Quotas, Store};
use strato_dispatcher::{Config, Ctx, RunnerSettings};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::{CloudProvider, Cluster, ClusterSpec, Operation, OperationKind, TemplateRef};
use strato_domain::run_proof::{PROOF_FIELD, RunProofKey};
use strato_domain::ts;
use strato_testbed::TestEnv;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct World {
    pub env: TestEnv,
    pub store: Store,
    pub ecs: aws_sdk_ecs::Client,
    pub config: Config,
    pub dispatcher: Ctx,
    pub queues: QueueUrls,
}

/// A raw HTTP POST to moto (its control API and EC2's query API need no SDK client).
async fn moto_post(endpoint: &str, path: &str, headers: &str, body: &str) -> String {
    let addr = endpoint.trim_start_matches("http://");
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to moto");
    s.write_all(req.as_bytes()).await.expect("send to moto");
    let mut resp = String::new();
    s.read_to_string(&mut resp).await.expect("read from moto");
    assert!(
        resp.starts_with("HTTP/1.1 20") || resp.starts_with("HTTP/1.0 20"),
        "{resp}"
    );
    resp
}

/// moto advances a task's `lastStatus` on every describe unless told not to; tests want tasks to stay put.
async fn ecs_manual_progression(endpoint: &str) {
    let body = r#"{"model_name":"ecs::task","transition":{"progression":"manual","times":1000000}}"#;
    moto_post(
        endpoint,
        "/moto-api/state-manager/set-transition",
        "Content-Type: application/json\r\n",
        body,
    )
    .await;
}

/// The first `<tag>` value of an EC2 describe call: moto checks that RunTask's subnets and security groups
/// exist, and its default VPC has both.
async fn ec2_first(endpoint: &str, action: &str, tag: &str) -> String {
    let headers = "Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, \
                   SignedHeaders=host, Signature=0\r\nContent-Type: application/x-www-form-urlencoded\r\n";
    let resp = moto_post(
        endpoint,
        "/",
        headers,
        &format!("Action={action}&Version=2016-11-15"),
    )
    .await;
    let open = format!("<{tag}>");
    let start = resp.find(&open).unwrap_or_else(|| panic!("no {tag} in {resp}")) + open.len();
    let end = start + resp[start..].find('<').unwrap();
    resp[start..end].to_owned()
}

/// The spec the tests' clusters and estimates ask for: `aws-eks-basic` 1.2.0 with two nodes.
fn spec(name: &str) -> ClusterSpec {
    ClusterSpec {
        name: name.parse().unwrap(),
        template: TemplateRef {
            name: "aws-eks-basic".into(),
            version: "1.2.0".into(),
        },
        provider: CloudProvider::Aws,
        region: "us-east-1".into(),
        variables: BTreeMap::from([("node_count".into(), json!(2))]),
        target: None,
    }
}

impl World {
    pub async fn new() -> Self {
        let env = TestEnv::new().await;
        ecs_manual_progression(&env.endpoint).await;
        let ecs = aws_sdk_ecs::Client::new(&env.aws.config);
        let prefix = env.names.prefix().to_owned();
        let cluster = format!("{prefix}-runners");
        ecs.create_cluster().cluster_name(&cluster).send().await.unwrap();
        let family = format!("{prefix}-runner");
        ecs.register_task_definition()
            .family(&family)
            .requires_compatibilities(Compatibility::Fargate)
            .network_mode(NetworkMode::Awsvpc)
            .cpu("1024")
            .memory("2048")
            .container_definitions(
                ContainerDefinition::builder()
                    .name("runner")
                    .image("strato-runner:test")
                    .memory(2048)
                    .essential(true)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let config = Config {
            names: env.names.clone(),
            runner: RunnerSettings {
                cluster,
                task_definition: family,
                container: "runner".into(),
                subnets: vec![ec2_first(&env.endpoint, "DescribeSubnets", "subnetId").await],
                security_groups: vec![ec2_first(&env.endpoint, "DescribeSecurityGroups", "groupId").await],
                assign_public_ip: false,
            },
            run_proofs: run_proofs(),
            audit_retention_days: strato_aws::ports::AUDIT_RETENTION_DAYS,
            operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
            oidc_issuer: None,
            oidc_signing_key: env.names.oidc_key_alias(),
        };
        let dispatcher = Ctx::new(config.clone(), &env.aws, ecs.clone()).await.unwrap();
        let queues = dispatcher.queues.clone();
        Self {
            store: Store::new(env.aws.dynamodb.clone(), &env.names),
            env,
            ecs,
            config,
            dispatcher,
            queues,
        }
    }

    /// Records a cluster and its create operation the way the API does (one transaction with the name
    /// reservation and the tenant's counters).
    /// The status function's context on this world's resources, with the world's run-proof key and the
    /// default retentions.
    pub async fn status_ctx(&self) -> strato_status::Ctx {
        let config = strato_status::Config {
            names: self.env.names.clone(),
            run_proofs: run_proofs(),
            audit_retention_days: strato_aws::ports::AUDIT_RETENTION_DAYS,
            operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
            approval_ttl: strato_domain::approval::DEFAULT_APPROVAL_TTL,
        };
        strato_status::Ctx::new(config, &self.env.aws).await.unwrap()
    }

    pub async fn new_cluster(&self, tenant: &str, name: &str) -> (Cluster, Operation) {
        let now = ts::now();
        let spec = spec(name);
        let mut cluster = Cluster::new(tenant.parse().unwrap(), ClusterId::generate(), spec.clone(), now);
        cluster.version = 1;
        let mut op = Operation::new(
            cluster.tenant_id.clone(),
            cluster.cluster_id.clone(),
            OperationKind::Create,
            now,
        );
        op.spec = Some(spec);
        op.requested_by = Some("user-1".into());
        let quotas = self.store.quotas(&cluster.tenant_id).await.unwrap();
        self.store
            .create_cluster(&cluster, &op, &quotas)
            .await
            .unwrap()
            .unwrap();
        (cluster, op)
    }

    /// A further operation on an existing cluster, as the API records it. Updates carry a changed spec.
    pub async fn new_op(&self, cluster: &Cluster, kind: OperationKind) -> Operation {
        let mut op = Operation::new(
            cluster.tenant_id.clone(),
            cluster.cluster_id.clone(),
            kind,
            ts::now(),
        );
        let mut spec = cluster.spec.clone();
        if kind == OperationKind::Update {
            spec.variables.insert("node_count".into(), json!(3));
        }
        op.spec = Some(spec);
        let quotas = self.store.quotas(&cluster.tenant_id).await.unwrap();
        self.store.add_operation(&op, &quotas).await.unwrap().unwrap();
        op
    }

    /// An estimate as the API records it: an operation whose cluster id is synthetic (no cluster written).
    pub async fn new_estimate(&self, tenant: &str) -> Operation {
        let mut op = Operation::new(
            tenant.parse().unwrap(),
            ClusterId::generate(),
            OperationKind::Estimate,
            ts::now(),
        );
        op.spec = Some(spec("estimate"));
        let quotas = self.store.quotas(&op.tenant_id).await.unwrap();
        self.store.add_operation(&op, &quotas).await.unwrap().unwrap();
        op
    }

    /// Whether the locks table still holds an item for `cluster`'s lock (released or not).
    pub async fn lock_item_exists(&self, cluster: &ClusterId) -> bool {
        self.env
            .aws
            .dynamodb
            .get_item()
            .table_name(self.env.names.table("locks"))
            .key(
                "lock_id",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("cluster#{cluster}")),
            )
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .is_some()
    }

    pub async fn set_concurrency_limit(&self, tenant: &str, limit: u32) {
        let q = Quotas {
            max_concurrent_operations: limit,
            ..Quotas::default()
        };
        self.store.set_quotas(&tenant.parse().unwrap(), &q).await.unwrap();
    }

    pub async fn op(&self, id: &OperationId) -> Operation {
        self.store.get_operation(id).await.unwrap().unwrap()
    }

    pub async fn cluster(&self, c: &Cluster) -> Cluster {
        self.store
            .get_cluster(&c.tenant_id, &c.cluster_id)
            .await
            .unwrap()
            .unwrap()
    }

    /// jobs.fifo records for `ops`, built from the sample event.
    pub fn job_event(&self, ops: &[&Operation]) -> SqsEvent {
        let sample = load_event("dispatcher/job-create.json");
        let records = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let mut r = sample.records[0].clone();
                r.message_id = Some(format!("job-{i}-{}", op.operation_id));
                r.attributes
                    .insert("MessageGroupId".into(), op.cluster_id.to_string());
                r.body = Some(
                    json!({"operation_id": op.operation_id, "cluster_id": op.cluster_id,
                           "tenant_id": op.tenant_id, "kind": op.kind})
                    .to_string(),
                );
                r
            })
            .collect();
        let mut e = SqsEvent::default();
        e.records = records;
        e
    }

    pub async fn dispatch(&self, ops: &[&Operation]) -> SqsBatchResponse {
        strato_dispatcher::handle(&self.dispatcher, self.job_event(ops))
            .await
            .unwrap()
    }

    /// Tasks ECS holds for an operation (the dispatcher tags them with `startedBy` = operation id).
    pub async fn tasks_of(&self, op: &OperationId) -> Vec<String> {
        self.ecs
            .list_tasks()
            .cluster(&self.config.runner.cluster)
            .started_by(op.as_str())
            .send()
            .await
            .unwrap()
            .task_arns()
            .to_vec()
    }

    pub async fn task(&self, arn: &str) -> aws_sdk_ecs::types::Task {
        let out = self
            .ecs
            .describe_tasks()
            .cluster(&self.config.runner.cluster)
            .tasks(arn)
            .send()
            .await
            .unwrap();
        out.tasks()[0].clone()
    }

    /// One receive from the queue at `url`: up to ten messages, waiting up to a second for the first
    /// (nothing is deleted).
    pub async fn receive(&self, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
        self.receive_with(url, |r| r.wait_time_seconds(1)).await
    }

    /// One receive of up to ten messages from the queue at `url`, the request set up further by `how`.
    async fn receive_with(
        &self,
        url: &str,
        how: impl FnOnce(ReceiveMessageFluentBuilder) -> ReceiveMessageFluentBuilder,
    ) -> Vec<aws_sdk_sqs::types::Message> {
        let request = self.env.aws.sqs.receive_message().queue_url(url);
        let out = how(request.max_number_of_messages(10)).send().await.unwrap();
        out.messages.unwrap_or_default()
    }

    /// Receives what waits on jobs.fifo (wake-ups) as Lambda would hand it over, and deletes it (as Lambda
    /// does for a batch it processed). Receives until the queue answers empty twice: FIFO groups release one
    /// message at a time.
    pub async fn take_jobs(&self) -> SqsEvent {
        self.take(&self.queues.jobs).await
    }

    /// Receives what waits on the queue at `url` as Lambda would hand it over, and deletes it (see
    /// [`World::take_jobs`]).
    pub async fn take(&self, url: &str) -> SqsEvent {
        let mut records = Vec::new();
        let mut empty = 0;
        while empty < 2 {
            let all = |r: ReceiveMessageFluentBuilder| {
                r.message_system_attribute_names(MessageSystemAttributeName::All)
            };
            let msgs = self.receive_with(url, all).await;
            if msgs.is_empty() {
                empty += 1;
                continue;
            }
            for m in msgs {
                self.env
                    .aws
                    .sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(m.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
                let mut r = SqsMessage::default();
                r.message_id = m.message_id().map(str::to_owned);
                r.receipt_handle = m.receipt_handle().map(str::to_owned);
                r.body = m.body().map(str::to_owned);
                r.attributes = m
                    .attributes()
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                r.event_source = Some("aws:sqs".into());
                records.push(r);
            }
        }
        let mut e = SqsEvent::default();
        e.records = records;
        e
    }
}

/// A sample event from `events/`.
pub fn load_event(rel: &str) -> SqsEvent {
    let path = format!("{}/../events/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Rewrites the JSON body of every record.
pub fn patch_bodies(mut event: SqsEvent, f: impl Fn(&mut Value)) -> SqsEvent {
    for r in &mut event.records {
        let mut v: Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
        f(&mut v);
        r.body = Some(v.to_string());
    }
    event
}

pub fn failures(resp: &SqsBatchResponse) -> Vec<String> {
    resp.batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

/// Environment of the runner container in a described task.
pub fn task_env(task: &aws_sdk_ecs::types::Task) -> BTreeMap<String, String> {
    task.overrides()
        .map(|o| o.container_overrides())
        .unwrap_or_default()
        .iter()
        .flat_map(|c| c.environment())
        .map(|kv| {
            (
                kv.name().unwrap_or_default().to_owned(),
                kv.value().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The run-proof key the dispatcher and status share in these tests.
pub fn run_proofs() -> RunProofKey {
    RunProofKey::new(b"flow-tests-run-proof-key-of-32-bytes".to_vec()).unwrap()
}

/// Gives a runner event's body (after any patching) the proof its run was started with.
pub fn prove(v: &mut Value) {
    let op: OperationId = v["operation_id"].as_str().unwrap().parse().unwrap();
    let token = v["fencing_token"].as_u64().unwrap();
    v[PROOF_FIELD] = json!(run_proofs().proof(&op, token));
}
