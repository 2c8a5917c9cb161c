//! The status function's ports on AWS: lease renewal, slot holders and name reservations on the DynamoDB
//! [`Store`]; the `events` and `logs` queues ([`SqsStatusQueues`]); the run's log archive in S3
//! ([`S3RunArchive`]).

use time::{Duration, OffsetDateTime};

use crate::error::Error;
use crate::log_io;
use crate::queues;
use crate::store::Store;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::{ControlEvent, LogFrame};
use strato_domain::model::Cluster;
use strato_domain::ports::{
    EventsQueue, FrameSink, LeaseRenewal, NameReservations, PortError, RunArchive, SlotHolders,
};
use strato_terraform::artifacts::log_complete_key;

impl LeaseRenewal for Store {
    async fn renew_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<bool, PortError> {
        Ok(self
            .renew_cluster_lock(cluster, op, fencing_token, lease, now)
            .await?)
    }
}

impl SlotHolders for Store {
    async fn slot_holders(&self, tenant: &TenantId) -> Result<Vec<OperationId>, PortError> {
        // A member that is not an operation id was never written by a dispatcher; it holds nothing here.
        Ok(self
            .tenant_slots(tenant)
            .await?
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect())
    }
}

impl NameReservations for Store {
    async fn release_name(&self, cluster: &Cluster) -> Result<(), PortError> {
        Ok(self.release_cluster_name(cluster).await?)
    }
}

/// The `events` queue (the status function's own) and the `logs` queue (frames to log-fanout).
#[derive(Debug, Clone, Copy)]
pub struct SqsStatusQueues<'a> {
    pub sqs: &'a aws_sdk_sqs::Client,
    pub events_url: &'a str,
    pub logs_url: &'a str,
}

impl EventsQueue for SqsStatusQueues<'_> {
    async fn send_control(&self, event: &ControlEvent, delay_secs: i32) -> Result<(), PortError> {
        Ok(queues::send_json(self.sqs, self.events_url, "control event", event, delay_secs).await?)
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        queues::delay_redelivery(self.sqs, self.events_url, Some(receipt_handle), secs).await;
    }
}

impl FrameSink for SqsStatusQueues<'_> {
    async fn publish_frame(&self, frame: &LogFrame) -> Result<(), PortError> {
        Ok(log_io::publish_frame(self.sqs, self.logs_url, frame).await?)
    }
}

/// The artifacts bucket's log archive.
#[derive(Debug, Clone, Copy)]
pub struct S3RunArchive<'a> {
    pub s3: &'a aws_sdk_s3::Client,
    pub bucket: &'a str,
}

impl RunArchive for S3RunArchive<'_> {
    async fn last_archived_seq(&self, op: &OperationId) -> Result<u64, PortError> {
        Ok(log_io::last_archived_seq(self.s3, self.bucket, op).await?)
    }

    async fn archive_complete(&self, op: &OperationId) -> Result<bool, PortError> {
        let head = self
            .s3
            .head_object()
            .bucket(self.bucket)
            .key(log_complete_key(op))
            .send()
            .await;
        match head {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
            Err(e) => Err(Error::aws("HeadObject", e).into()),
        }
    }

    async fn unspill(&self, body: &str) -> Result<Option<String>, PortError> {
        Ok(match crate::spill::unspill(self.s3, self.bucket, body).await? {
            std::borrow::Cow::Owned(stored) => Some(stored),
            std::borrow::Cow::Borrowed(_) => None,
        })
    }
}
