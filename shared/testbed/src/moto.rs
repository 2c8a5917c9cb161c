//! Private moto servers. A test process gets one server (shared by its tests, each with uniquely named
//! resources); the server exits when the process does. Under cargo-nextest, which runs every test in a
//! process of its own, one server serves the whole run instead: the first test to need it starts it, the
//! others find it by the run's id, and it exits when the nextest process does (starting moto costs about
//! two seconds of CPU, paid once per run instead of once per test).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::install::{Tools, ToolsError, tools};
use strato_aws::aws::AwsClients;
use strato_aws::resources::{self, Names};

#[derive(Debug)]
pub struct MotoServer {
    pub endpoint: String,
    pub port: u16,
    /// The server this process started and owns; `None` for a server shared by a nextest run.
    owned: Option<(Child, ChildStdin)>,
}

impl MotoServer {
    pub fn start(tools: &Tools) -> Result<Self, ToolsError> {
        let fail = |detail: String| ToolsError::Step {
            step: "starting moto_server",
            detail,
            fix: "delete .tools/venv* to force a reinstall, or check that 127.0.0.1 ports can be bound",
        };
        let mut child = Command::new(&tools.python)
            .arg(&tools.moto_launcher)
            // AWS-managed IAM policies (AmazonEKSClusterPolicy, ...) exist only when moto loads them; the
            // k8s module attaches them.
            .env("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail(e.to_string()))?;
        let stdin = child.stdin.take().ok_or_else(|| fail("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| fail("no stdout".into()))?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| fail(e.to_string()))?;
        let port: u16 = match line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()) {
            Some(p) => p,
            None => {
                let _ = child.kill();
                return Err(fail(format!("launcher printed {line:?} instead of its port")));
            }
        };
        let endpoint = format!("http://127.0.0.1:{port}");
        // The port is printed once the socket is bound, but give the accept loop a moment on a loaded machine.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(Self {
                    endpoint,
                    port,
                    // Holding stdin open keeps the server; closing it (this process ending) stops it.
                    owned: Some((child, stdin)),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        Err(fail(format!("nothing listens on port {port}")))
    }
}

impl MotoServer {
    /// A server started by another process of the same nextest run.
    pub(crate) fn shared(port: u16) -> Self {
        Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            owned: None,
        }
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.owned {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The process-wide server, started on first use; under cargo-nextest the run-wide one.
pub fn shared_moto() -> &'static MotoServer {
    static MOTO: OnceLock<MotoServer> = OnceLock::new();
    MOTO.get_or_init(|| {
        let tools = tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"));
        let server = match std::env::var("NEXTEST_RUN_ID") {
            Ok(run) if !run.is_empty() => crate::moto_run::shared_by_run(tools, &run).map(MotoServer::shared),
            _ => MotoServer::start(tools),
        };
        server.unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A resource prefix no other test of the run has: `tag`, this process's id, a random part and a counter.
/// The moto server outlives the processes of a nextest run (one per test), and the kernel reuses process
/// ids over a run of a thousand tests, so the process id alone would hand a later test an earlier test's
/// tables, full of its items.
pub fn unique_prefix(tag: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    static RANDOM: OnceLock<String> = OnceLock::new();
    let random = RANDOM.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..4].to_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{tag}{:x}{random}-{n}", std::process::id())
}

/// One test's world: uniquely named resources on the process's moto server, and clients for them.
pub struct TestEnv {
    pub endpoint: String,
    pub region: String,
    pub names: Names,
    pub aws: AwsClients,
    pub tools: &'static Tools,
}

impl TestEnv {
    /// Starts (or reuses) moto and creates every table, queue and bucket under a fresh prefix.
    pub async fn new() -> Self {
        let tools = tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"));
        let endpoint = tokio::task::spawn_blocking(|| shared_moto().endpoint.clone())
            .await
            .unwrap_or_else(|e| panic!("starting moto: {e}"));
        let names = Names::new(unique_prefix("t")).unwrap_or_else(|e| panic!("{e}"));
        let region = "us-east-1".to_owned();
        let aws = AwsClients::for_endpoint(&endpoint, &region).await;
        resources::create_all(&aws, &names)
            .await
            .unwrap_or_else(|e| panic!("creating test resources: {e}"));
        Self {
            endpoint,
            region,
            names,
            aws,
            tools,
        }
    }

    /// A Secrets Manager secret `strato/<prefix>/<name>` holding `value`, as infra/ stores the functions'
    /// keys; its ARN (what a function is given as `<NAME>_ARN`).
    pub async fn create_secret(&self, name: &str, value: &str) -> String {
        let sm = aws_sdk_secretsmanager::Client::new(&self.aws.config);
        let out = sm
            .create_secret()
            .name(format!("strato/{}/{name}", self.names.prefix()))
            .secret_string(value)
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateSecret {name}: {e}"));
        out.arn()
            .unwrap_or_else(|| panic!("CreateSecret {name}: no ARN"))
            .to_owned()
    }

    /// The current bytes of object `key` in `bucket`; `None` when it cannot be read (absent).
    pub async fn object_bytes(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let out = self
            .aws
            .s3
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .ok()?;
        Some(out.body.collect().await.unwrap().into_bytes().to_vec())
    }

    /// The current text of object `key` in `bucket`.
    pub async fn object_text(&self, bucket: &str, key: &str) -> String {
        String::from_utf8(self.object_bytes(bucket, key).await.expect("the object is there")).unwrap()
    }

    /// The digest Terraform's S3 backend keeps for state `key` of `bucket` in lock table `table`
    /// (the item `<bucket>/<key>-md5`).
    pub async fn state_digest(&self, table: &str, bucket: &str, key: &str) -> String {
        let out = self
            .aws
            .dynamodb
            .get_item()
            .table_name(table)
            .key(
                "LockID",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("{bucket}/{key}-md5")),
            )
            .send()
            .await
            .unwrap();
        out.item.unwrap()["Digest"].as_s().unwrap().clone()
    }

    /// Every message body waiting on the queue at `url`, in the order received, each deleted once read:
    /// receives (no waiting) until the queue answers empty.
    pub async fn drain(&self, url: &str) -> Vec<String> {
        let sqs = &self.aws.sqs;
        let mut out = Vec::new();
        loop {
            let r = sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .wait_time_seconds(0)
                .send()
                .await
                .unwrap_or_else(|e| panic!("ReceiveMessage {url}: {e}"));
            if r.messages().is_empty() {
                return out;
            }
            for m in r.messages() {
                out.push(m.body().unwrap_or_default().to_owned());
                sqs.delete_message()
                    .queue_url(url)
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("DeleteMessage {url}: {e}"));
            }
        }
    }
}
