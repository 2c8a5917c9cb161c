//! Rollouts in the locks table (no table of their own: the table's single `lock_id` key takes them, and it
//! is small, so the rare listing is a filtered Scan of it).
//!
//! - `rollout#<id>`: the rollout, its record as JSON text in `body`, with `version` (conditional saves),
//!   `active` and `wake_at` beside it for the scheduler's filter. One item: bounded by the member cap.
//! - `rollout-claim#<cluster id>`: the cluster's claim by the active rollout `rollout_id`, put (all of a
//!   rollout's, in transactions of at most 100) only where absent, deleted when the rollout ends. A claim
//!   left behind by a rollout that has ended (a failed delete) is taken over.

use aws_sdk_dynamodb::types::{AttributeValue, Put};
use strato_domain::ids::ClusterId;
use strato_rollout::RolloutError;
use strato_rollout::store::{Record, RolloutId, RolloutStore};

use super::write::{conditional, tx_put};
use super::{Item, Store, fetch, n, num, s, text};
use crate::error::Error;

const RECORD: &str = "rollout#";
const CLAIM: &str = "rollout-claim#";
/// TransactWriteItems' item limit.
const TX_ITEMS: usize = 100;

fn record_key(id: &RolloutId) -> String {
    format!("{RECORD}{id}")
}

fn claim_key(c: &ClusterId) -> String {
    format!("{CLAIM}{c}")
}

fn store_error(e: Error) -> RolloutError {
    RolloutError::Store(e.to_string())
}

fn corrupt(what: &str, reason: impl ToString) -> RolloutError {
    RolloutError::Store(format!("{what} is malformed: {}", reason.to_string()))
}

fn record_of(item: &Item) -> Result<Record, RolloutError> {
    let id = text(item, "lock_id").cloned().unwrap_or_default();
    let body = text(item, "body").ok_or_else(|| corrupt(&id, "no body"))?;
    let mut r: Record = serde_json::from_str(body).map_err(|e| corrupt(&id, e))?;
    r.version = num(item, "version").ok_or_else(|| corrupt(&id, "no version"))?;
    Ok(r)
}

impl Store {
    fn record_item(&self, r: &Record, version: u64) -> Result<Item, RolloutError> {
        let body = serde_json::to_string(r).map_err(|e| corrupt(r.id.as_str(), e))?;
        let mut item = Item::from([
            ("lock_id".to_owned(), s(record_key(&r.id))),
            ("body".to_owned(), s(body)),
            ("version".to_owned(), n(version)),
            ("active".to_owned(), AttributeValue::Bool(r.active())),
        ]);
        if let Some(w) = r.wake_at() {
            item.insert("wake_at".to_owned(), n(w));
        }
        Ok(item)
    }

    /// Claims `clusters` for `id` in transactions; on a cluster held by another active rollout, gives back
    /// what this call claimed and names the holder.
    async fn claim_all(&self, id: &RolloutId, clusters: &[&ClusterId]) -> Result<(), RolloutError> {
        let mut claimed: Vec<&ClusterId> = Vec::new();
        for chunk in clusters.chunks(TX_ITEMS) {
            let mut tries = 0;
            loop {
                let items = chunk
                    .iter()
                    .map(|c| {
                        let put = Put::builder()
                            .table_name(&self.locks)
                            .item("lock_id", s(claim_key(c)))
                            .item("rollout_id", s(id.as_str()))
                            .condition_expression("attribute_not_exists(lock_id) OR rollout_id = :me")
                            .expression_attribute_values(":me", s(id.as_str()));
                        tx_put(put)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(store_error)?;
                let Err(lost) = self.transact(items).await.map_err(store_error)? else {
                    claimed.extend_from_slice(chunk);
                    break;
                };
                let cluster = chunk[lost.index.min(chunk.len() - 1)];
                let holder = self.claimed_by(cluster).await?;
                let stale = match &holder {
                    Some(h) => !self.load(h).await?.is_some_and(|r| r.active()),
                    None => true,
                };
                tries += 1;
                if stale && tries < 3 {
                    // Left behind by a rollout that ended (or just given back): take it over.
                    if let Some(h) = holder {
                        self.release_claim(cluster, &h).await?;
                    }
                    continue;
                }
                self.release_claims(id, &claimed).await?;
                return Err(RolloutError::Claimed {
                    cluster: (*cluster).clone(),
                    rollout: holder.unwrap_or_else(|| id.clone()),
                });
            }
        }
        Ok(())
    }

    async fn release_claim(&self, c: &ClusterId, by: &RolloutId) -> Result<(), RolloutError> {
        let del = self
            .ddb
            .delete_item()
            .table_name(&self.locks)
            .key("lock_id", s(claim_key(c)))
            .condition_expression("rollout_id = :me")
            .expression_attribute_values(":me", s(by.as_str()))
            .send();
        // Lost: not (or no longer) this rollout's claim; nothing to give back.
        conditional("DeleteItem", del).await.map_err(store_error)?.ok();
        Ok(())
    }

    async fn release_claims(&self, id: &RolloutId, clusters: &[&ClusterId]) -> Result<(), RolloutError> {
        for c in clusters {
            self.release_claim(c, id).await?;
        }
        Ok(())
    }

    async fn scan_records(
        &self,
        filter: &str,
        values: &[(&str, AttributeValue)],
    ) -> Result<Vec<Record>, RolloutError> {
        let mut scan = self
            .ddb
            .scan()
            .table_name(&self.locks)
            .filter_expression(filter)
            .expression_attribute_values(":p", s(RECORD));
        for (k, v) in values {
            scan = scan.expression_attribute_values(*k, v.clone());
        }
        let mut out = Vec::new();
        let mut pages = scan.into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| store_error(Error::aws("Scan", e)))?;
            for item in page.items() {
                out.push(record_of(item)?);
            }
        }
        Ok(out)
    }
}

impl RolloutStore for Store {
    async fn create(&self, r: &Record) -> Result<(), RolloutError> {
        let clusters: Vec<&ClusterId> = r.rollout.members.iter().map(|m| &m.cluster).collect();
        self.claim_all(&r.id, &clusters).await?;
        let put = self
            .ddb
            .put_item()
            .table_name(&self.locks)
            .set_item(Some(self.record_item(r, 0)?))
            .condition_expression("attribute_not_exists(lock_id)")
            .send();
        if conditional("PutItem", put).await.map_err(store_error)?.is_err() {
            self.release_claims(&r.id, &clusters).await?;
            return Err(RolloutError::Conflict);
        }
        Ok(())
    }

    async fn load(&self, id: &RolloutId) -> Result<Option<Record>, RolloutError> {
        let get = self
            .get(&self.locks, &[("lock_id", s(record_key(id)))])
            .consistent_read(true);
        let item = fetch(get).await.map_err(store_error)?;
        item.as_ref().map(record_of).transpose()
    }

    async fn save(&self, r: &mut Record) -> Result<(), RolloutError> {
        let next = r.version + 1;
        let put = self
            .ddb
            .put_item()
            .table_name(&self.locks)
            .set_item(Some(self.record_item(r, next)?))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(r.version))
            .send();
        if conditional("PutItem", put).await.map_err(store_error)?.is_err() {
            return Err(RolloutError::Conflict);
        }
        r.version = next;
        if !r.active() {
            let clusters: Vec<&ClusterId> = r.rollout.members.iter().map(|m| &m.cluster).collect();
            self.release_claims(&r.id, &clusters).await?;
        }
        Ok(())
    }

    async fn list(&self) -> Result<Vec<Record>, RolloutError> {
        let mut all = self.scan_records("begins_with(lock_id, :p)", &[]).await?;
        all.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(all)
    }

    async fn claimed_by(&self, cluster: &ClusterId) -> Result<Option<RolloutId>, RolloutError> {
        let get = self
            .get(&self.locks, &[("lock_id", s(claim_key(cluster)))])
            .consistent_read(true);
        let item = fetch(get).await.map_err(store_error)?;
        Ok(item
            .as_ref()
            .and_then(|i| text(i, "rollout_id"))
            .and_then(|id| id.parse().ok()))
    }

    async fn due(&self, now: i64) -> Result<Vec<RolloutId>, RolloutError> {
        let due = self
            .scan_records(
                "begins_with(lock_id, :p) AND active = :t AND wake_at <= :now",
                &[(":t", AttributeValue::Bool(true)), (":now", n(now))],
            )
            .await?;
        Ok(due.into_iter().map(|r| r.id).collect())
    }
}
