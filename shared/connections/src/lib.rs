//! The `connections` table and posting to connections (the ws function writes it; log-fanout and the
//! scheduler read and sweep it).
//!
//! Items (pk / sk):
//! - `conn#{id}` / `conn`: the connection (tenant, connected_at, expires_at = connected + 2 h, API Gateway's
//!   connection limit).
//! - `op#{operation}` / `conn#{id}`: a subscription; the subscribers of an operation are one Query.
//! - `conn#{id}` / `sub#{operation}`: its mirror, so `$disconnect` finds a connection's subscriptions with a
//!   Query too.
//!
//! TTL (`expires_at`) deletion lags, so readers compare `expires_at` with now themselves, and the sweeper
//! removes connections past their expiry (with their subscriptions) through the sparse `by_expiry` index:
//! only connection items carry its keys (`expiry_bucket` = `conn`, `expires_on` = the expiry as RFC 3339).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionError;
use aws_sdk_apigatewaymanagement::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, PutRequest, WriteRequest};
use backon::{ExponentialBuilder, Retryable};
use serde::{Deserialize, Serialize};
use strato_aws::error::Error;
use strato_domain::ids::{OperationId, TenantId};
use time::OffsetDateTime;

/// The management API client for `endpoint` (the SDK has no default endpoint for it).
pub fn management_client(
    sdk: &aws_config::SdkConfig,
    endpoint: &str,
) -> aws_sdk_apigatewaymanagement::Client {
    let conf = aws_sdk_apigatewaymanagement::config::Builder::from(sdk)
        .endpoint_url(endpoint)
        .build();
    aws_sdk_apigatewaymanagement::Client::from_conf(conf)
}

/// WebSocket tickets (the api signs them at `POST /v1/ws-tickets`, the ws function checks them at
/// `$connect`): these claims are required on every ticket, so no other token signed with the same key (a
/// devstack API token, say) opens a connection.
pub mod tickets {
    /// The `aud` of a ticket, unless `STRATO_JWT_AUDIENCE` names another (api and ws alike).
    pub const AUDIENCE: &str = "strato-ws";
    /// A ticket's `scope` must include this.
    pub const SCOPE: &str = "ws:connect";
    /// A ticket lives at most this long (`exp - iat`): a leaked one is soon useless.
    pub const MAX_LIFETIME: time::Duration = time::Duration::minutes(5);
    /// Shortest HS256 key accepted (`STRATO_JWT_SECRET`): RFC 7518 asks for a key as long as the hash.
    pub const MIN_SECRET_BYTES: usize = 32;
}

/// API Gateway closes a WebSocket connection after 2 hours.
pub const CONNECTION_LIFETIME: time::Duration = time::Duration::hours(2);

type Item = HashMap<String, AttributeValue>;

pub fn conn_pk(id: &str) -> String {
    format!("conn#{id}")
}

pub fn op_pk(op: &OperationId) -> String {
    format!("op#{op}")
}

const CONN_SK: &str = "conn";

fn sub_sk(op: &OperationId) -> String {
    format!("sub#{op}")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    pub pk: String,
    pub sk: String,
    pub connection_id: String,
    pub tenant_id: TenantId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(with = "strato_domain::ts")]
    pub connected_at: OffsetDateTime,
    /// Epoch seconds.
    pub expires_at: i64,
}

impl Connection {
    pub fn is_live(&self, now: OffsetDateTime) -> bool {
        self.expires_at > now.unix_timestamp()
    }
}

/// A subscription as stored under `op#{operation}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub pk: String,
    pub sk: String,
    pub connection_id: String,
    pub operation_id: OperationId,
    pub tenant_id: TenantId,
    pub expires_at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Mirror {
    pk: String,
    sk: String,
    operation_id: OperationId,
    expires_at: i64,
}

fn to_item<T: Serialize>(v: &T) -> Result<Item, Error> {
    serde_dynamo::to_item(v).map_err(|e| Error::Corrupt {
        what: "connections item".into(),
        reason: e.to_string(),
    })
}

fn key(pk: &str, sk: &str) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
        ("sk".to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

/// Access to the connections table.
#[derive(Debug, Clone)]
pub struct Connections {
    pub ddb: aws_sdk_dynamodb::Client,
    pub table: String,
}

/// `expiry_bucket` of every connection item: one partition of the `by_expiry` index. A connection is one
/// index write at connect and one at removal, far below what a single index partition takes.
const EXPIRY_BUCKET: &str = "conn";

fn expires_on(expires_at: i64) -> String {
    strato_domain::ts::format(
        OffsetDateTime::from_unix_timestamp(expires_at).unwrap_or(OffsetDateTime::UNIX_EPOCH),
    )
}

impl Connections {
    pub async fn put_connection(&self, c: &Connection) -> Result<(), Error> {
        let mut item = to_item(c)?;
        item.insert("expiry_bucket".into(), AttributeValue::S(EXPIRY_BUCKET.into()));
        item.insert("expires_on".into(), AttributeValue::S(expires_on(c.expires_at)));
        self.ddb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| Error::aws("PutItem", e))?;
        Ok(())
    }

    pub async fn get_connection(&self, id: &str) -> Result<Option<Connection>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(&conn_pk(id), CONN_SK)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        out.item
            .map(|i| {
                serde_dynamo::from_item(i).map_err(|e| Error::Corrupt {
                    what: conn_pk(id),
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// Records the subscription and its mirror in one round trip (idempotent: re-subscribing overwrites).
    pub async fn subscribe(&self, conn: &Connection, op: &OperationId) -> Result<(), Error> {
        let sub = Subscription {
            pk: op_pk(op),
            sk: conn_pk(&conn.connection_id),
            connection_id: conn.connection_id.clone(),
            operation_id: op.clone(),
            tenant_id: conn.tenant_id.clone(),
            expires_at: conn.expires_at,
        };
        let mirror = Mirror {
            pk: conn_pk(&conn.connection_id),
            sk: sub_sk(op),
            operation_id: op.clone(),
            expires_at: conn.expires_at,
        };
        let put = |item| -> Result<WriteRequest, Error> {
            Ok(WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .map_err(|e| Error::aws("BatchWriteItem", e))?,
                )
                .build())
        };
        self.batch_write(vec![put(to_item(&sub)?)?, put(to_item(&mirror)?)?])
            .await
    }

    pub async fn unsubscribe(&self, connection_id: &str, op: &OperationId) -> Result<(), Error> {
        self.delete_keys(vec![
            key(&op_pk(op), &conn_pk(connection_id)),
            key(&conn_pk(connection_id), &sub_sk(op)),
        ])
        .await
    }

    /// Live subscribers of `op` (a Query on `op#{op}`, paginated; expired ones are left out).
    pub async fn subscribers(
        &self,
        op: &OperationId,
        now: OffsetDateTime,
    ) -> Result<Vec<Subscription>, Error> {
        let items = self.query_pk(&op_pk(op)).await?;
        let mut out = Vec::with_capacity(items.len());
        for i in items {
            let s: Subscription = serde_dynamo::from_item(i).map_err(|e| Error::Corrupt {
                what: op_pk(op),
                reason: e.to_string(),
            })?;
            if s.expires_at > now.unix_timestamp() {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Deletes a connection and all its subscriptions (found through the mirrors). Safe to repeat.
    pub async fn remove_connection(&self, connection_id: &str) -> Result<usize, Error> {
        let pk = conn_pk(connection_id);
        let items = self.query_pk(&pk).await?;
        let mut keys = Vec::new();
        for i in &items {
            let sk = match i.get("sk") {
                Some(AttributeValue::S(s)) => s.clone(),
                _ => continue,
            };
            if let Some(op) = sk.strip_prefix("sub#") {
                keys.push(key(&format!("op#{op}"), &pk));
            }
            keys.push(key(&pk, &sk));
        }
        let n = keys.len();
        self.delete_keys(keys).await?;
        Ok(n)
    }

    /// Ids of connections whose expiry is at or before `now`, oldest first, at most `limit` (a Query on the
    /// `by_expiry` index, never a Scan).
    pub async fn expired(&self, now: OffsetDateTime, limit: usize) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        while out.len() < limit {
            let page = self
                .ddb
                .query()
                .table_name(&self.table)
                .index_name("by_expiry")
                .key_condition_expression("expiry_bucket = :b AND expires_on <= :now")
                .expression_attribute_values(":b", AttributeValue::S(EXPIRY_BUCKET.into()))
                .expression_attribute_values(":now", AttributeValue::S(strato_domain::ts::format(now)))
                .limit((limit - out.len()).min(100) as i32)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| Error::aws("Query", e))?;
            out.extend(
                page.items()
                    .iter()
                    .filter_map(|i| i.get("connection_id").and_then(|v| v.as_s().ok()).cloned()),
            );
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Deletes one stale subscription row (its connection is gone but the row was left behind).
    pub async fn remove_subscription_row(&self, op: &OperationId, connection_id: &str) -> Result<(), Error> {
        self.delete_keys(vec![key(&op_pk(op), &conn_pk(connection_id))])
            .await
    }

    async fn query_pk(&self, pk: &str) -> Result<Vec<Item>, Error> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .ddb
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| Error::aws("Query", e))?;
            out.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    async fn delete_keys(&self, keys: Vec<Item>) -> Result<(), Error> {
        let mut reqs = Vec::with_capacity(keys.len());
        for k in keys {
            reqs.push(
                WriteRequest::builder()
                    .delete_request(
                        DeleteRequest::builder()
                            .set_key(Some(k))
                            .build()
                            .map_err(|e| Error::aws("BatchWriteItem", e))?,
                    )
                    .build(),
            );
        }
        self.batch_write(reqs).await
    }

    /// BatchWriteItem in chunks of 25, resending unprocessed items with backoff.
    async fn batch_write(&self, reqs: Vec<WriteRequest>) -> Result<(), Error> {
        for chunk in reqs.chunks(25) {
            let mut pending = chunk.to_vec();
            for attempt in 0..8u32 {
                if pending.is_empty() {
                    break;
                }
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(25 << attempt.min(5))).await;
                }
                let out = self
                    .ddb
                    .batch_write_item()
                    .request_items(&self.table, pending)
                    .send()
                    .await
                    .map_err(|e| Error::aws("BatchWriteItem", e))?;
                pending = out
                    .unprocessed_items
                    .and_then(|mut m| m.remove(&self.table))
                    .unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(Error::Aws {
                    operation: "BatchWriteItem",
                    source: format!("{} items stayed unprocessed", pending.len()).into(),
                });
            }
        }
        Ok(())
    }
}

/// Why a post did not arrive.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// The client disconnected: its connection should be removed.
    #[error("connection {0} is gone")]
    Gone(String),
    #[error("posting to {connection_id} was throttled")]
    Throttled { connection_id: String },
    #[error("posting to {connection_id} timed out after {after:?}")]
    Timeout { connection_id: String, after: Duration },
    #[error("posting to {connection_id}: {message}")]
    Other { connection_id: String, message: String },
}

impl PostError {
    fn is_throttle(&self) -> bool {
        matches!(self, PostError::Throttled { .. })
    }
}

async fn post_once(
    mgmt: &aws_sdk_apigatewaymanagement::Client,
    connection_id: &str,
    data: &str,
) -> Result<(), PostError> {
    match mgmt
        .post_to_connection()
        .connection_id(connection_id)
        .data(Blob::new(data.as_bytes()))
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => {
            let status = e.raw_response().map(|r| r.status().as_u16());
            match e.as_service_error() {
                Some(PostToConnectionError::GoneException(_)) => {
                    Err(PostError::Gone(connection_id.to_owned()))
                }
                Some(PostToConnectionError::LimitExceededException(_)) => Err(PostError::Throttled {
                    connection_id: connection_id.to_owned(),
                }),
                _ if status == Some(429) => Err(PostError::Throttled {
                    connection_id: connection_id.to_owned(),
                }),
                _ if status == Some(410) => Err(PostError::Gone(connection_id.to_owned())),
                _ => Err(PostError::Other {
                    connection_id: connection_id.to_owned(),
                    message: Error::aws("PostToConnection", e).to_string(),
                }),
            }
        }
    }
}

/// Posts one frame. Throttling is retried with exponential backoff (jittered); the whole attempt, retries
/// included, is bounded by `timeout` so a slow endpoint cannot hold a caller up.
pub async fn post_frame(
    mgmt: &aws_sdk_apigatewaymanagement::Client,
    connection_id: &str,
    data: &str,
    timeout: Duration,
) -> Result<(), PostError> {
    let attempt = || post_once(mgmt, connection_id, data);
    let retried = attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(20))
                .with_max_delay(Duration::from_millis(500))
                .with_max_times(5)
                .with_jitter(),
        )
        .when(PostError::is_throttle);
    match tokio::time::timeout(timeout, retried).await {
        Ok(r) => r,
        Err(_) => Err(PostError::Timeout {
            connection_id: connection_id.to_owned(),
            after: timeout,
        }),
    }
}
