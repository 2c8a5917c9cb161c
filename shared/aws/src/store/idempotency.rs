//! Idempotency records: a request's key is reserved before its work and then holds its answer for a day,
//! so a repeated request gets the first answer instead of doing the work twice.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use super::write::conditional;
use super::{Store, fetch, from_item, n, num, s, to_item};
use crate::error::Error;
use strato_coordination::{Attempt, optimistic};
use strato_domain::ids::TenantId;

/// A stored idempotent answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotentResponse {
    pub request_hash: String,
    pub status: u16,
    pub body: String,
}

/// What reserving an idempotency key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The key is ours: do the work, then `idempotent_put` its answer (or `idempotent_release`).
    Reserved,
    /// An earlier request finished with this answer.
    Done(IdempotentResponse),
    /// A request with this key (and this fingerprint) is being processed right now.
    InProgress { request_hash: String },
}

/// How long a reservation blocks repeats when its request dies without answering.
const RESERVATION_LEASE: Duration = Duration::seconds(60);

/// How long an answer is kept.
const ANSWER_TTL: Duration = Duration::hours(24);

fn record_key(tenant: &TenantId, key: &str) -> String {
    format!("{tenant}#{key}")
}

impl Store {
    pub async fn idempotent_get(
        &self,
        tenant: &TenantId,
        key: &str,
        now: OffsetDateTime,
    ) -> Result<Option<IdempotentResponse>, Error> {
        let get = self
            .get(
                &self.idempotency,
                &[("idempotency_key", s(record_key(tenant, key)))],
            )
            .consistent_read(true);
        let Some(item) = fetch(get).await? else {
            return Ok(None);
        };
        // TTL deletion lags (and moto never runs it): expiry is checked here.
        let expires: i64 = num(&item, "expires_at").unwrap_or(0);
        if expires <= now.unix_timestamp() {
            return Ok(None);
        }
        from_item("idempotency record", item).map(Some)
    }

    /// Claims `key` before the work is done, so two concurrent requests with one key cannot both act.
    /// A reservation is an answer with status 0 that expires after a short lease (a crashed request does
    /// not block its key for 24 hours).
    pub async fn idempotent_reserve(
        &self,
        tenant: &TenantId,
        key: &str,
        request_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Reservation, Error> {
        let give_up = || Error::Conflict(format!("idempotency key {key} kept changing"));
        optimistic(3, give_up, || async move {
            let put = self
                .ddb
                .put_item()
                .table_name(&self.idempotency)
                .item("idempotency_key", s(record_key(tenant, key)))
                .item("request_hash", s(request_hash))
                .item("status", n(0))
                .item("body", s(""))
                .item("expires_at", n((now + RESERVATION_LEASE).unix_timestamp()))
                .condition_expression("attribute_not_exists(idempotency_key) OR expires_at <= :now")
                .expression_attribute_values(":now", n(now.unix_timestamp()))
                .send();
            if conditional("PutItem", put).await?.is_ok() {
                return Ok(Attempt::Done(Reservation::Reserved));
            }
            Ok(match self.idempotent_get(tenant, key, now).await? {
                Some(r) if r.status == 0 => Attempt::Done(Reservation::InProgress {
                    request_hash: r.request_hash,
                }),
                Some(r) => Attempt::Done(Reservation::Done(r)),
                // Expired between the put and the read: try again.
                None => Attempt::Conflict,
            })
        })
        .await
    }

    /// Gives a reservation back (the work failed in a way a retry should get a fresh chance at).
    pub async fn idempotent_release(
        &self,
        tenant: &TenantId,
        key: &str,
        request_hash: &str,
    ) -> Result<(), Error> {
        let delete = self
            .ddb
            .delete_item()
            .table_name(&self.idempotency)
            .key("idempotency_key", s(record_key(tenant, key)))
            .condition_expression("#st = :zero AND request_hash = :h")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":h", s(request_hash))
            .send();
        // A lost condition means the reservation is no longer ours (answered, expired or retaken): keep it.
        let _ours_or_not = conditional("DeleteItem", delete).await?;
        Ok(())
    }

    /// Stores the answer for a key: completes our own reservation, or (without one) stores the first answer.
    /// If another request's answer is already there, returns that one instead.
    pub async fn idempotent_put(
        &self,
        tenant: &TenantId,
        key: &str,
        resp: &IdempotentResponse,
        now: OffsetDateTime,
    ) -> Result<Option<IdempotentResponse>, Error> {
        let mut item = to_item("idempotency record", resp)?;
        item.insert("idempotency_key".into(), s(record_key(tenant, key)));
        item.insert("expires_at".into(), n((now + ANSWER_TTL).unix_timestamp()));
        let put = self
            .ddb
            .put_item()
            .table_name(&self.idempotency)
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(idempotency_key) OR expires_at <= :now \
                 OR (#st = :zero AND request_hash = :h)",
            )
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":now", n(now.unix_timestamp()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":h", s(&resp.request_hash))
            .send();
        match conditional("PutItem", put).await? {
            Ok(_) => Ok(None),
            Err(_lost) => self.idempotent_get(tenant, key, now).await,
        }
    }
}
