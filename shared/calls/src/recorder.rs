//! An SDK interceptor recording each request a client sends as the IAM action(s) it needs and the resource
//! it names, read from the request itself (DynamoDB TableName / TransactItems / RequestItems and the
//! partition key, SQS QueueUrl, S3 bucket and key from the path-style URL, ECS taskDefinition / cluster,
//! Secrets Manager SecretId, STS RoleArn). Physical names are mapped back to logical ones with [`Names`].
//! Used by the devstack flow test (in-process functions) and by the runner when `STRATO_AWS_CALL_LOG` names a
//! file (one JSON [`Observed`] per line, appended).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use percent_encoding::percent_decode_str;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Observed, Target};
use strato_aws::resources::{BUCKETS, Names, QUEUES, TABLES};

/// The environment variable naming the file a process appends its recorded calls to.
pub const CALL_LOG_ENV: &str = "STRATO_AWS_CALL_LOG";

/// What one function sent of one request kind (`Service.Operation`): what AWS bills per request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCount {
    /// Requests sent, each retry attempt included.
    pub requests: u64,
    /// Items they named: a DynamoDB transaction's or batch's items (capacity is billed per item), 1 otherwise.
    pub items: u64,
}

/// Request counts by (function, `Service.Operation`).
pub type RequestCounts = BTreeMap<(String, String), RequestCount>;

/// One sent request in a call log (beside the [`Observed`] lines, which it never parses as).
#[derive(Debug, Serialize, Deserialize)]
struct RequestLine {
    function: String,
    request: String,
    items: u64,
}

/// Records calls tagged with the function that made them; clones share the record. Besides the distinct
/// calls (the IAM check), it counts every request sent (the cost figures, `devstack/examples`).
#[derive(Debug, Clone)]
pub struct CallRecorder {
    function: String,
    names: Names,
    seen: Arc<Mutex<BTreeSet<Observed>>>,
    requests: Arc<Mutex<RequestCounts>>,
    file: Option<PathBuf>,
}

impl CallRecorder {
    pub fn new(function: impl Into<String>, names: Names) -> Self {
        Self {
            function: function.into(),
            names,
            seen: Arc::default(),
            requests: Arc::default(),
            file: None,
        }
    }

    /// The same record, tagged as another function.
    pub fn tagged(&self, function: &str) -> Self {
        Self {
            function: function.to_owned(),
            ..self.clone()
        }
    }

    /// Also appends each new call to `path` (JSON lines), for a separate process such as the runner.
    pub fn appending_to(mut self, path: PathBuf) -> Self {
        self.file = Some(path);
        self
    }

    /// Every call recorded so far, by every function sharing this record.
    pub fn observed(&self) -> BTreeSet<Observed> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Every request sent so far, by every function sharing this record.
    pub fn requests(&self) -> RequestCounts {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Requests appended to `path` by other processes (missing file: none).
    pub fn read_request_log(path: &std::path::Path) -> RequestCounts {
        let mut out = RequestCounts::new();
        for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
            if let Ok(r) = serde_json::from_str::<RequestLine>(line) {
                let c = out.entry((r.function, r.request)).or_default();
                c.requests += 1;
                c.items += r.items;
            }
        }
        out
    }

    fn count_request(&self, request: String, items: u64) {
        if let Ok(mut all) = self.requests.lock() {
            let c = all.entry((self.function.clone(), request.clone())).or_default();
            c.requests += 1;
            c.items += items;
        }
        let line = RequestLine {
            function: self.function.clone(),
            request,
            items,
        };
        self.append(&line);
    }

    /// Best effort: a lost line shows up as a call the test did not see, never as a false failure.
    fn append(&self, line: &impl Serialize) {
        if let Some(path) = &self.file
            && let (Ok(mut f), Ok(line)) = (
                std::fs::OpenOptions::new().create(true).append(true).open(path),
                serde_json::to_string(line),
            )
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Calls appended to `path` by other processes (missing file: none).
    pub fn read_log(path: &std::path::Path) -> Vec<Observed> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn record(&self, action: String, target: Target) {
        let o = Observed {
            function: self.function.clone(),
            action,
            target,
        };
        let new = self.seen.lock().map(|mut s| s.insert(o.clone())).unwrap_or(false);
        if new {
            self.append(&o);
        }
    }

    fn table(&self, physical: &str) -> String {
        logical(
            physical,
            TABLES.iter().map(|t| (t.logical, self.names.table(t.logical))),
        )
    }

    fn bucket(&self, physical: &str) -> String {
        logical(
            physical,
            BUCKETS.iter().map(|b| (b.logical, self.names.bucket(b.logical))),
        )
    }

    fn queue(&self, url: &str) -> String {
        let physical = url.rsplit('/').next().unwrap_or(url);
        let mut all = Vec::new();
        for q in QUEUES {
            all.push((q.logical.to_owned(), self.names.queue(q.logical)));
            all.push((format!("{}-dlq", q.logical), self.names.dlq(q.logical)));
        }
        all.into_iter()
            .find(|(_, p)| p == physical)
            .map(|(l, _)| l)
            .unwrap_or_else(|| format!("?{physical}"))
    }

    /// The partition-key values a DynamoDB request names for `table` (physical) in `item_or_key` objects.
    fn leading_keys<'a>(&self, physical: &str, items: impl Iterator<Item = &'a Value>) -> Vec<String> {
        let logical = self.table(physical);
        let Some(def) = TABLES.iter().find(|t| t.logical == logical) else {
            return Vec::new();
        };
        items
            .filter_map(|i| i.get(def.pk).and_then(|v| v.get("S")).and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    }

    fn dynamodb(&self, op: &str, body: &Value) {
        let name = |v: &Value| {
            v.get("TableName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let item_or_key = |v: &Value| v.get("Item").or_else(|| v.get("Key")).cloned();
        match op {
            "TransactWriteItems" | "TransactGetItems" => {
                for t in body["TransactItems"].as_array().into_iter().flatten() {
                    for (kind, action) in [
                        ("Put", "PutItem"),
                        ("Update", "UpdateItem"),
                        ("Delete", "DeleteItem"),
                        ("ConditionCheck", "ConditionCheckItem"),
                        ("Get", "GetItem"),
                    ] {
                        if let Some(x) = t.get(kind) {
                            let table = name(x);
                            let keys = self.leading_keys(&table, item_or_key(x).iter());
                            self.record(format!("dynamodb:{action}"), self.table_target(&table, keys));
                        }
                    }
                }
            }
            "BatchWriteItem" | "BatchGetItem" => {
                for (table, reqs) in body["RequestItems"].as_object().into_iter().flatten() {
                    let items: Vec<Value> = match reqs {
                        Value::Array(writes) => writes
                            .iter()
                            .filter_map(|w| {
                                w.pointer("/PutRequest/Item")
                                    .or_else(|| w.pointer("/DeleteRequest/Key"))
                                    .cloned()
                            })
                            .collect(),
                        other => other["Keys"].as_array().cloned().unwrap_or_default(),
                    };
                    let keys = self.leading_keys(table, items.iter());
                    self.record(format!("dynamodb:{op}"), self.table_target(table, keys));
                }
            }
            _ => {
                let table = name(body);
                let target = match body.get("IndexName").and_then(Value::as_str) {
                    Some(index) => Target::Index {
                        table: self.table(&table),
                        index: index.to_owned(),
                    },
                    None => {
                        let keys = self.leading_keys(&table, item_or_key(body).iter());
                        self.table_target(&table, keys)
                    }
                };
                self.record(format!("dynamodb:{op}"), target);
            }
        }
    }

    fn table_target(&self, physical: &str, leading_keys: Vec<String>) -> Target {
        Target::Table {
            table: self.table(physical),
            leading_keys,
        }
    }

    /// Path-style S3 (what devstack and moto use): `/<bucket>/<key>?<query>`.
    fn s3(&self, op: &str, uri: &str, copy_source: Option<&str>) {
        let after_scheme = uri.split_once("://").map_or(uri, |(_, rest)| rest);
        let path_and_query = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let path = percent_decode_str(path.trim_start_matches('/')).decode_utf8_lossy();
        let (bucket, key) = path.split_once('/').unwrap_or((&path, ""));
        let versioned = query.split('&').any(|kv| kv.starts_with("versionId="));
        let object = |bucket: &str, key: &str| Target::Object {
            bucket: self.bucket(bucket),
            key: key.to_owned(),
        };
        let (action, target) = match op {
            "GetObject" | "HeadObject" if versioned => ("GetObjectVersion", object(bucket, key)),
            "GetObject" | "HeadObject" => ("GetObject", object(bucket, key)),
            "DeleteObject" if versioned => ("DeleteObjectVersion", object(bucket, key)),
            "PutObject" | "DeleteObject" => (op, object(bucket, key)),
            "CopyObject" => {
                if let Some(src) = copy_source {
                    let src = percent_decode_str(src.trim_start_matches('/')).decode_utf8_lossy();
                    let (src, version) = src
                        .split_once("?versionId=")
                        .map_or((&*src, false), |(s, _)| (s, true));
                    let (b, k) = src.split_once('/').unwrap_or((src, ""));
                    let read = if version { "GetObjectVersion" } else { "GetObject" };
                    self.record(format!("s3:{read}"), object(b, k));
                }
                ("PutObject", object(bucket, key))
            }
            "ListObjectsV2" | "ListObjects" => ("ListBucket", Target::Bucket(self.bucket(bucket))),
            "ListObjectVersions" => ("ListBucketVersions", Target::Bucket(self.bucket(bucket))),
            "PutBucketEncryption" => ("PutEncryptionConfiguration", Target::Bucket(self.bucket(bucket))),
            other => (other, Target::Bucket(self.bucket(bucket))),
        };
        self.record(format!("s3:{action}"), target);
    }

    fn sqs(&self, op: &str, body: &Value) {
        let action = op.strip_suffix("Batch").unwrap_or(op);
        let target = match (body.get("QueueUrl"), body.get("QueueName")) {
            (Some(Value::String(url)), _) | (None, Some(Value::String(url))) => {
                Target::Queue(self.queue(url))
            }
            _ => Target::Unknown(body.to_string()),
        };
        self.record(format!("sqs:{action}"), target);
    }

    fn ecs(&self, op: &str, body: &Value) {
        let target = match (op, body.get("taskDefinition").and_then(Value::as_str)) {
            ("RunTask", Some(td)) => {
                let family = td.rsplit('/').next().unwrap_or(td);
                Target::TaskDefinition(family.split(':').next().unwrap_or(family).to_owned())
            }
            _ => Target::Cluster(body["cluster"].as_str().unwrap_or("default").to_owned()),
        };
        self.record(format!("ecs:{op}"), target);
    }

    fn secrets(&self, op: &str, body: &Value) {
        let name = body
            .get("SecretId")
            .or_else(|| body.get("Name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let ours = format!("strato/{}/", self.names.prefix());
        let name = name
            .strip_prefix(&ours)
            .map_or_else(|| format!("?{name}"), str::to_owned);
        self.record(format!("secretsmanager:{op}"), Target::Secret(name));
    }
}

/// The items a DynamoDB request names: a transaction's or a batch's, else 1.
fn dynamodb_items(body: &Value) -> u64 {
    if let Some(t) = body["TransactItems"].as_array() {
        return t.len() as u64;
    }
    match body["RequestItems"].as_object() {
        Some(tables) => tables
            .values()
            .map(|r| match r {
                Value::Array(writes) => writes.len(),
                other => other["Keys"].as_array().map_or(0, Vec::len),
            } as u64)
            .sum(),
        None => 1,
    }
}

/// The logical name whose physical name is `physical`, or `?<physical>`.
fn logical(physical: &str, mut all: impl Iterator<Item = (&'static str, String)>) -> String {
    all.find(|(_, p)| p == physical)
        .map(|(l, _)| l.to_owned())
        .unwrap_or_else(|| format!("?{physical}"))
}

impl Intercept for CallRecorder {
    fn name(&self) -> &'static str {
        "strato-call-recorder"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(meta) = cfg.load::<Metadata>() else {
            return Ok(());
        };
        let (service, op) = (meta.service(), meta.name());
        let req = ctx.request();
        let json = || {
            req.body()
                .bytes()
                .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                .unwrap_or(Value::Null)
        };
        let items = match service {
            "DynamoDB" => dynamodb_items(&json()),
            _ => 1,
        };
        self.count_request(format!("{service}.{op}"), items);
        match service {
            "DynamoDB" => self.dynamodb(op, &json()),
            "S3" => self.s3(op, req.uri(), req.headers().get("x-amz-copy-source")),
            "SQS" => self.sqs(op, &json()),
            "ECS" => self.ecs(op, &json()),
            "ApiGatewayManagementApi" => {
                self.record("execute-api:ManageConnections".into(), Target::Connections)
            }
            "SecretsManager" | "Secrets Manager" => self.secrets(op, &json()),
            "KMS" => self.record(format!("kms:{op}"), Target::Key),
            "STS" if op == "AssumeRole" => {
                let form = req
                    .body()
                    .bytes()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                let role = form
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("RoleArn="))
                    .map(|r| percent_decode_str(r).decode_utf8_lossy().into_owned())
                    .unwrap_or_default();
                self.record("sts:AssumeRole".into(), Target::Role(role));
            }
            // GetCallerIdentity needs no permission.
            "STS" => {}
            other => self.record(format!("{other}:{op}"), Target::Unknown(req.uri().to_owned())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_is_counted_and_both_logs_share_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.jsonl");
        let names = Names::new("strato-t").unwrap();
        let r = CallRecorder::new("runner", names).appending_to(log.clone());
        let body = serde_json::json!({"TransactItems": [{"Put": {}}, {"Update": {}}, {"Delete": {}}]});
        for _ in 0..3 {
            r.count_request("SQS.SendMessage".into(), 1);
            r.sqs(
                "SendMessage",
                &serde_json::json!({"QueueUrl": "http://x/strato-t-events"}),
            );
        }
        r.count_request("DynamoDB.TransactWriteItems".into(), dynamodb_items(&body));

        let key = |req: &str| ("runner".to_owned(), req.to_owned());
        let counts = r.requests();
        assert_eq!(
            counts[&key("SQS.SendMessage")],
            RequestCount {
                requests: 3,
                items: 3
            }
        );
        assert_eq!(
            counts[&key("DynamoDB.TransactWriteItems")],
            RequestCount {
                requests: 1,
                items: 3
            }
        );
        // The file holds every request and each distinct call once; each reader skips the other's lines.
        assert_eq!(CallRecorder::read_request_log(&log), counts);
        assert_eq!(
            CallRecorder::read_log(&log),
            r.observed().into_iter().collect::<Vec<_>>()
        );
        assert_eq!(r.observed().len(), 1);
    }
}
