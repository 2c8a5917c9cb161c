//! Live-logs test bed: moto (TestEnv) + the devstack API Gateway WebSocket emulation with the ws function
//! plugged in + a pump feeding the `logs` queue to the log-fanout function + a synthetic runner that
//! publishes batches and archives chunks exactly as the runner contract says + a WebSocket client that
//! dedupes by seq, unpacks `log_batch`es, reassembles `log_part`s and repairs gaps from the archive.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsEvent;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use strato_aws::log_io::publish_frame;
use strato_aws::queues::QueueUrls;
use strato_aws::store::{Quotas, Store};
use strato_devstack::apigw_ws::{WsApi, WsApiConfig};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::{LogFrame, LogLine, LogStream};
use strato_domain::model::{Cluster, Operation, OperationKind, OperationStatus};
use strato_domain::ts;
use strato_stream::logs::{ControlFrame, Reassembler, ServerFrame};
use strato_terraform::artifacts::{log_chunk_key, log_complete_key};
use strato_testbed::TestEnv;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The same secret as the sample events in events/ws/.
pub const SECRET: &str = "strato-sample-secret-of-events-ws";

/// A WebSocket ticket as the api issues it, expiring `exp_in_secs` from now (tickets live 5 minutes, so a
/// longer one is capped; a negative one was issued 5 minutes before it expired).
pub fn token(tenant: &str, secret: &str, exp_in_secs: i64) -> String {
    let now = ts::now().unix_timestamp();
    let exp = now + exp_in_secs.min(240);
    let claims = json!({
        "sub": format!("user-of-{tenant}"),
        "tenant_id": tenant,
        "aud": strato_connections::tickets::AUDIENCE,
        "scope": strato_connections::tickets::SCOPE,
        "iat": now.min(exp - 240),
        "exp": exp,
    });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("signing a token")
}

pub struct Bed {
    pub env: TestEnv,
    pub api: WsApi,
    pub ws: Arc<strato_ws::Ctx>,
    pub fanout: Arc<strato_log_fanout::Ctx>,
    pub store: Store,
    pub queues: QueueUrls,
    pump: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

fn lookup(prefix: String, endpoint: String) -> impl Fn(&str) -> Option<String> {
    move |k: &str| match k {
        "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
        "STRATO_JWT_SECRET" => Some(SECRET.to_owned()),
        "STRATO_WS_MANAGEMENT_ENDPOINT" => Some(endpoint.clone()),
        _ => None,
    }
}

impl Bed {
    /// Everything wired, the fan-out pump running.
    pub async fn new() -> Bed {
        Self::with_pump(true).await
    }

    pub async fn with_pump(pump: bool) -> Bed {
        let env = TestEnv::new().await;
        let bound = WsApi::bind(WsApiConfig::default())
            .await
            .expect("binding the ws emulation");
        let get = lookup(env.names.prefix().to_owned(), bound.management_endpoint());
        let ws = Arc::new(strato_ws::Ctx::new(
            strato_ws::Config::from_lookup(&get).expect("ws config"),
            &env.aws,
        ));
        let fanout = Arc::new(strato_log_fanout::Ctx::new(
            strato_log_fanout::Config::from_lookup(&get).expect("fanout config"),
            &env.aws,
        ));
        let handler = ws.clone();
        let api = bound.serve(move |event| {
            let ctx = handler.clone();
            async move { Ok(strato_ws::handle(&ctx, event).await) }
        });
        let queues = QueueUrls::resolve(&env.aws.sqs, &env.names)
            .await
            .expect("queue urls");
        let store = Store::new(env.aws.dynamodb.clone(), &env.names);
        let stop = Arc::new(AtomicBool::new(false));
        let mut bed = Bed {
            env,
            api,
            ws,
            fanout,
            store,
            queues,
            pump: None,
            stop,
        };
        if pump {
            bed.pump = Some(tokio::spawn(pump_loop(
                bed.env.aws.sqs.clone(),
                bed.queues.logs.clone(),
                bed.fanout.clone(),
                bed.stop.clone(),
            )));
        }
        bed
    }

    pub async fn shutdown(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.pump.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), p).await;
        }
        self.api.shutdown().await;
    }

    /// A cluster and its create operation for `tenant`, optionally with a fixed operation id.
    pub async fn operation(&self, tenant: &str, id: Option<&str>) -> OperationId {
        let tenant: TenantId = tenant.parse().unwrap();
        let now = ts::now();
        let spec = strato_testbed::fixture_spec(&format!("c{}", &uuid_like()[..8]));
        let cluster = Cluster::new(tenant.clone(), ClusterId::generate(), spec.clone(), now);
        let mut op = Operation::new(tenant, cluster.cluster_id.clone(), OperationKind::Create, now);
        if let Some(id) = id {
            op.operation_id = id.parse().unwrap();
        }
        op.spec = Some(spec);
        self.store
            .create_cluster(&cluster, &op, &Quotas::default())
            .await
            .expect("storing the operation")
            .expect("quota");
        op.operation_id
    }

    pub async fn finish_operation(&self, op: &OperationId, status: OperationStatus) {
        let mut o = self.store.get_operation(op).await.unwrap().unwrap();
        o.status = status;
        self.store
            .save_operation(&mut o, false)
            .await
            .expect("saving the operation");
    }

    pub fn runner(&self, op: &OperationId) -> Runner {
        Runner {
            sqs: self.env.aws.sqs.clone(),
            s3: self.env.aws.s3.clone(),
            logs_url: self.queues.logs.clone(),
            bucket: self.env.names.bucket("artifacts"),
            op: op.clone(),
            seq: 0,
            unarchived: Vec::new(),
        }
    }

    pub async fn client(&self, tenant: &str) -> Client {
        Client::connect(&self.api.ws_url(), &token(tenant, SECRET, 3600))
            .await
            .expect("connecting")
    }

    /// A new operation of `tenant` and a client subscribed to it from seq 1 (its `subscribed` answer read).
    pub async fn subscribed(&self, tenant: &str) -> (OperationId, Client) {
        let op = self.operation(tenant, None).await;
        let mut c = self.client(tenant).await;
        c.subscribe(&op, 1).await;
        c.until(Duration::from_secs(90), |f| {
            matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
        })
        .await;
        (op, c)
    }

    /// Items stored under a partition key of the connections table.
    pub async fn items_under(&self, pk: &str) -> usize {
        self.env
            .aws
            .dynamodb
            .query()
            .table_name(self.env.names.table("connections"))
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.into()))
            .send()
            .await
            .unwrap()
            .count as usize
    }

    /// Waits until `cond` holds (polling), panicking after a generous timeout.
    pub async fn eventually<F, Fut>(&self, what: &str, cond: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cond().await {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn uuid_like() -> String {
    OperationId::generate().as_str()[3..].chars().rev().collect()
}

/// Lambda's SQS event source in miniature: receive, invoke, delete what did not fail.
async fn pump_loop(
    sqs: aws_sdk_sqs::Client,
    url: String,
    ctx: Arc<strato_log_fanout::Ctx>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(out) = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let msgs = out.messages.unwrap_or_default();
        if msgs.is_empty() {
            continue;
        }
        let event = sqs_event(&msgs);
        let response = strato_log_fanout::handle(&ctx, event).await;
        let failed: BTreeSet<String> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone())
            .collect();
        for m in &msgs {
            if !failed.contains(m.message_id().unwrap_or_default()) {
                let _ = sqs
                    .delete_message()
                    .queue_url(&url)
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .send()
                    .await;
            }
        }
    }
}

/// Exactly the `n` messages on the logs queue (moto may hand them out over several receives).
pub async fn receive_all(bed: &Bed, n: usize) -> Vec<aws_sdk_sqs::types::Message> {
    let mut got = Vec::new();
    while got.len() < n {
        let out = bed
            .env
            .aws
            .sqs
            .receive_message()
            .queue_url(&bed.queues.logs)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receiving");
        got.extend(out.messages.unwrap_or_default());
    }
    assert_eq!(got.len(), n);
    got
}

/// One receive from the logs queue (whatever it hands out now, possibly nothing).
pub async fn receive_some(bed: &Bed) -> Vec<aws_sdk_sqs::types::Message> {
    bed.env
        .aws
        .sqs
        .receive_message()
        .queue_url(&bed.queues.logs)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("receiving")
        .messages
        .unwrap_or_default()
}

/// Deletes a handled batch, as Lambda does after a response without failures.
pub async fn delete_all(bed: &Bed, msgs: &[aws_sdk_sqs::types::Message]) {
    for m in msgs {
        bed.env
            .aws
            .sqs
            .delete_message()
            .queue_url(&bed.queues.logs)
            .receipt_handle(m.receipt_handle().unwrap_or_default())
            .send()
            .await
            .expect("deleting");
    }
}

pub fn sqs_event(msgs: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let records: Vec<Value> = msgs
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": {},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "awsRegion": "us-east-1",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("building an SqsEvent")
}

/// The runner's side of the contract: `log` batches to the queue, JSON Lines chunks to the archive, the
/// `complete` marker at the end.
pub struct Runner {
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub logs_url: String,
    pub bucket: String,
    pub op: OperationId,
    pub seq: u64,
    unarchived: Vec<LogLine>,
}

pub fn text_of(seq: u64) -> String {
    format!("aws_vpc.main[{seq}]: Still creating... [{seq}s elapsed]")
}

impl Runner {
    pub fn line(&mut self, text: String) -> LogLine {
        self.seq += 1;
        LogLine {
            seq: self.seq,
            ts: ts::now(),
            stream: LogStream::Stdout,
            step: "apply".into(),
            text,
        }
    }

    /// Publishes `n` standard lines as batches of `batch`.
    pub async fn emit(&mut self, n: u64, batch: usize) {
        let lines: Vec<LogLine> = (0..n)
            .map(|_| {
                let t = text_of(self.seq + 1);
                self.line(t)
            })
            .collect();
        for b in lines.chunks(batch) {
            self.publish(b.to_vec()).await;
        }
    }

    pub async fn publish(&mut self, lines: Vec<LogLine>) {
        let frame = LogFrame::Log {
            operation_id: self.op.clone(),
            first_seq: lines[0].seq,
            lines: lines.clone(),
            skipped: None,
        };
        publish_frame(&self.sqs, &self.logs_url, &frame)
            .await
            .expect("publishing");
        self.unarchived.extend(lines);
    }

    /// Adds lines to the archive only (as if their live batch had been lost).
    pub fn archive_only(&mut self, lines: Vec<LogLine>) {
        self.unarchived.extend(lines);
    }

    pub async fn archive(&mut self) {
        if self.unarchived.is_empty() {
            return;
        }
        let lines = std::mem::take(&mut self.unarchived);
        let mut body = String::new();
        for l in &lines {
            body.push_str(&serde_json::to_string(l).unwrap());
            body.push('\n');
        }
        let key = log_chunk_key(&self.op, lines[0].seq, lines[lines.len() - 1].seq);
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(body.into_bytes().into())
            .send()
            .await
            .expect("archiving");
    }

    /// Archives the rest and writes the `complete` marker.
    pub async fn complete(&mut self) {
        self.archive().await;
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(log_complete_key(&self.op))
            .body(self.seq.to_string().into_bytes().into())
            .send()
            .await
            .expect("writing the complete marker");
    }

    /// The status function's part at the end: the `end` frame.
    pub async fn publish_end(&self, status: OperationStatus) {
        let end = LogFrame::End {
            operation_id: self.op.clone(),
            final_status: status,
            last_seq: self.seq,
        };
        publish_frame(&self.sqs, &self.logs_url, &end)
            .await
            .expect("publishing end");
    }
}

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A WebSocket client as the CLI would write it: lines kept by seq, parts reassembled, gaps repaired.
pub struct Client {
    pub ws: Ws,
    pub lines: BTreeMap<u64, LogLine>,
    pub reassembler: Reassembler,
    pub end: Option<(OperationStatus, u64)>,
    pub errors: Vec<ControlFrame>,
    pub control: Vec<ControlFrame>,
    pub duplicates: usize,
    pub frames: usize,
    pub part_frames: usize,
    /// `log_batch` frames (the fan-out's live lines).
    pub batch_frames: usize,
    pub largest_frame: usize,
    pub statuses: usize,
    /// Seq of every line in arrival order (first arrivals only).
    pub arrival: Vec<u64>,
}

impl Client {
    pub async fn connect(url: &str, token: &str) -> Result<Client, tokio_tungstenite::tungstenite::Error> {
        let (ws, _) = tokio_tungstenite::connect_async(format!("{url}?token={token}")).await?;
        Ok(Client {
            ws,
            lines: BTreeMap::new(),
            reassembler: Reassembler::default(),
            end: None,
            errors: Vec::new(),
            control: Vec::new(),
            duplicates: 0,
            frames: 0,
            part_frames: 0,
            batch_frames: 0,
            largest_frame: 0,
            statuses: 0,
            arrival: Vec::new(),
        })
    }

    pub async fn send(&mut self, v: Value) {
        self.ws
            .send(Message::Text(v.to_string().into()))
            .await
            .expect("sending");
    }

    pub async fn subscribe(&mut self, op: &OperationId, from_seq: u64) {
        self.send(json!({"action": "subscribe", "operation_id": op, "from_seq": from_seq}))
            .await;
    }

    /// The next frame, or `None` on timeout or close.
    pub async fn next(&mut self, wait: Duration) -> Option<ServerFrame> {
        loop {
            let msg = tokio::time::timeout(wait, self.ws.next()).await.ok()??.ok()?;
            let text = match msg {
                Message::Text(t) => t.to_string(),
                Message::Close(_) => return None,
                _ => continue,
            };
            self.frames += 1;
            self.largest_frame = self.largest_frame.max(text.len());
            let frame: ServerFrame =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("unparseable frame {e}: {text:.200}"));
            self.apply(&frame);
            return Some(frame);
        }
    }

    fn keep(&mut self, l: LogLine) {
        if self.lines.contains_key(&l.seq) {
            self.duplicates += 1;
        } else {
            self.arrival.push(l.seq);
            self.lines.insert(l.seq, l);
        }
    }

    fn apply(&mut self, f: &ServerFrame) {
        match f {
            ServerFrame::Log(LogFrame::Log { lines, .. }) => {
                for l in lines {
                    self.keep(l.clone());
                }
            }
            ServerFrame::Log(LogFrame::End {
                final_status,
                last_seq,
                ..
            }) => self.end = Some((*final_status, *last_seq)),
            ServerFrame::Log(LogFrame::Status { .. }) => self.statuses += 1,
            ServerFrame::Control(c @ ControlFrame::LogBatch { .. }) => {
                self.batch_frames += 1;
                for l in strato_stream::live_batch::batch_lines(c).unwrap_or_default() {
                    self.keep(l);
                }
            }
            ServerFrame::Control(c @ ControlFrame::LogPart { .. }) => {
                self.part_frames += 1;
                if let Some(l) = self.reassembler.push(c) {
                    self.keep(l);
                }
            }
            ServerFrame::Control(c @ ControlFrame::Error { .. }) => self.errors.push(c.clone()),
            ServerFrame::Control(c) => self.control.push(c.clone()),
        }
    }

    pub fn first_missing(&self, from: u64, to: u64) -> Option<u64> {
        (from..=to).find(|s| !self.lines.contains_key(s))
    }

    /// Reads until `end` is known and every line `from..=last_seq` is here; a gap left at the end is
    /// repaired by re-subscribing from the first missing seq (the archive has it).
    pub async fn collect(&mut self, op: &OperationId, from: u64, wait: Duration) -> Vec<LogLine> {
        let deadline = Instant::now() + wait;
        let mut repaired_at: Option<Instant> = None;
        loop {
            if let Some((_, last)) = self.end {
                match self.first_missing(from, last) {
                    None => return self.lines.range(from..).map(|(_, l)| l.clone()).collect(),
                    Some(missing) => {
                        if repaired_at.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
                            repaired_at = Some(Instant::now());
                            self.subscribe(op, missing).await;
                        }
                    }
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out: end={:?}, have {} lines, first missing {:?}, errors {:?}",
                self.end,
                self.lines.len(),
                self.first_missing(from, self.end.map_or(from, |e| e.1)),
                self.errors
            );
            let _ = self.next(left.min(Duration::from_secs(1))).await;
        }
    }

    /// Reads until a frame matching `pred` arrives.
    pub async fn until(&mut self, wait: Duration, pred: impl Fn(&ServerFrame) -> bool) -> ServerFrame {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for a frame");
            if let Some(f) = self.next(left).await
                && pred(&f)
            {
                return f;
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(5), self.ws.next()).await {}
    }
}

pub fn assert_complete(lines: &[LogLine], from: u64, to: u64) {
    let seqs: Vec<u64> = lines.iter().map(|l| l.seq).collect();
    let want: Vec<u64> = (from..=to).collect();
    assert_eq!(seqs, want, "the log must be complete and ordered");
    for l in lines {
        if !l.text.starts_with("big:") {
            assert_eq!(l.text, text_of(l.seq));
        }
    }
}
