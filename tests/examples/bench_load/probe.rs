//! Records every record the `events` (status) and `jobs` (dispatcher) mappings hand their function: which
//! operation, what kind of message, when it was sent (SQS `SentTimestamp`), its deduplication id, and when
//! the invocation holding it started and ended. A devstack plugin wrapping the built-in handlers, so the
//! functions run unchanged.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use strato_devstack::registry::SqsHandler;
use strato_devstack::{DevstackError, Plugin, Registry, StackEnv};
use time::OffsetDateTime;

/// One record handed to a function.
#[derive(Debug, Clone)]
pub struct Hop {
    pub queue: &'static str,
    pub op: Option<String>,
    /// Runner events: their `type` (`succeeded`, `heartbeat`…); ECS events: `ecs`; jobs: `job`.
    pub kind: String,
    pub sent: Option<OffsetDateTime>,
    pub dedup: Option<String>,
    pub invoked: OffsetDateTime,
    pub returned: OffsetDateTime,
    /// Records in the same invocation.
    pub batch: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Probe(Arc<Mutex<Vec<Hop>>>);

impl Probe {
    pub fn hops(&self) -> Vec<Hop> {
        self.0.lock().unwrap().clone()
    }

    pub fn plugin(&self) -> ProbePlugin {
        ProbePlugin(self.clone())
    }

    fn wrap(&self, queue: &'static str, inner: SqsHandler) -> SqsHandler {
        let probe = self.clone();
        Arc::new(move |event: aws_lambda_events::sqs::SqsEvent| {
            let (probe, inner) = (probe.clone(), inner.clone());
            Box::pin(async move {
                let invoked = OffsetDateTime::now_utc();
                let batch = event.records.len();
                let described: Vec<_> = event
                    .records
                    .iter()
                    .map(|r| {
                        let body = r.body.as_deref().unwrap_or_default();
                        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
                        let kind = if queue == "jobs" {
                            "job".to_owned()
                        } else if v.get("detail-type").is_some() {
                            "ecs".to_owned()
                        } else {
                            v["type"].as_str().unwrap_or("?").to_owned()
                        };
                        let sent = r
                            .attributes
                            .get("SentTimestamp")
                            .and_then(|s| s.parse::<i128>().ok())
                            .and_then(|ms| OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000).ok());
                        (
                            strato_devstack::operation_id_in(body),
                            kind,
                            sent,
                            r.attributes.get("MessageDeduplicationId").cloned(),
                        )
                    })
                    .collect();
                let out = inner(event).await;
                let returned = OffsetDateTime::now_utc();
                let mut hops = probe.0.lock().unwrap();
                for (op, kind, sent, dedup) in described {
                    hops.push(Hop {
                        queue,
                        op,
                        kind,
                        sent,
                        dedup,
                        invoked,
                        returned,
                        batch,
                    });
                }
                out
            }) as BoxFuture<'static, _>
        })
    }
}

pub struct ProbePlugin(Probe);

impl Plugin for ProbePlugin {
    fn install<'a>(
        self: Box<Self>,
        _env: &'a StackEnv,
        registry: &'a mut Registry,
    ) -> BoxFuture<'a, Result<(), DevstackError>> {
        Box::pin(async move {
            for queue in ["events", "jobs"] {
                let m = registry.sqs.get_mut(queue).expect("a built-in mapping");
                m.handler = self.0.wrap(queue, m.handler.clone());
            }
            Ok(())
        })
    }
}
