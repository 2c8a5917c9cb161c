//! Handing a cluster from one operation to the next, on the AWS adapters. The rules themselves live once in
//! [`strato_coordination`], written against the ports; these wrappers keep the Store-based signatures
//! the functions call.

use aws_sdk_sqs::Client as SqsClient;

use crate::error::Error;
use crate::ports::SqsJobQueue;
use crate::store::Store;
use strato_coordination as rules;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, Operation};

pub use strato_coordination::{
    ATTEMPTS, Attempt, ClusterFate, Ended, Handoff, LOCK_LEASE, TENANT_LIMIT_REASON, cluster_busy_reason,
    optimistic, submit,
};

/// [`strato_coordination::update_cluster`] on the DynamoDB store.
pub async fn update_cluster(
    store: &Store,
    tenant: &TenantId,
    id: &ClusterId,
    change: impl FnMut(&mut Cluster) -> Result<bool, Error>,
) -> Result<Cluster, Error> {
    rules::update_cluster(store, tenant, id, change).await
}

/// [`strato_coordination::update_operation`] on the DynamoDB store.
pub async fn update_operation(
    store: &Store,
    id: &OperationId,
    change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, Error> {
    Ok(rules::update_operation(store, id, change).await?)
}

/// [`strato_coordination::update_operation_from`] on the DynamoDB store.
pub async fn update_operation_from(
    store: &Store,
    known: Operation,
    change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, Error> {
    Ok(rules::update_operation_from(store, known, change).await?)
}

/// [`strato_coordination::release_and_wake`] on the DynamoDB store and `jobs.fifo`.
pub async fn release_and_wake(
    store: &Store,
    sqs: &SqsClient,
    jobs_url: &str,
    op: &Operation,
) -> Result<Handoff, Error> {
    let jobs = SqsJobQueue { sqs, url: jobs_url };
    Ok(rules::release_and_wake(store, &jobs, op).await?)
}

/// [`strato_coordination::end_operation`] on the DynamoDB store and `jobs.fifo`.
pub async fn end_operation(
    store: &Store,
    sqs: &SqsClient,
    jobs_url: &str,
    known: Operation,
    cluster: ClusterFate<'_>,
    end: impl FnMut(&mut Operation) -> bool,
) -> Result<Ended, Error> {
    let jobs = SqsJobQueue { sqs, url: jobs_url };
    Ok(rules::end_operation(store, &jobs, known, cluster, end).await?)
}
