//! The domain's ports on AWS: the DynamoDB [`Store`] keeps operations, clusters (created with their name
//! reservation and the tenant's counters), cluster locks, tenant slots and the template catalog;
//! [`SqsJobQueue`] is `jobs.fifo`; [`EcsLauncher`] starts runners as Fargate tasks; the sweeper's
//! [`EcsTaskStatus`], [`SqsTaskEvents`] and [`DynamoStateLocks`] look at runners' tasks, report stopped ones
//! and release Terraform state locks; the status function's [`SqsStatusQueues`] and [`S3RunArchive`] send
//! its timers and frames and read the run's log archive, and [`SqsWebhooks`] queues tenant webhook
//! notifications and [`SqsRollouts`] a rollout's inputs; [`S3StateArchive`] lists and restores the versions of
//! clusters' states. Adapters borrow their clients and settings, so a handler builds them per call for free.

mod audit;
mod ecs;
mod keys;
mod rollouts;
mod signer;
mod state;
mod status;
mod sweep;
mod webhooks;

pub use crate::store::audit_items::DEFAULT_RETENTION_DAYS as AUDIT_RETENTION_DAYS;
pub use audit::DynamoAuditLog;
pub use ecs::{EcsLauncher, RunnerSettings, classify_error, classify_failure};
pub use keys::KmsKeys;
pub use rollouts::SqsRollouts;
pub use signer::KmsSigner;
pub use state::{ListVersionsError, S3StateArchive, list_state_versions, state_prefix};
pub use status::{S3RunArchive, SqsStatusQueues};
pub use sweep::{DynamoStateLocks, EcsTaskStatus, SqsTaskEvents};
pub use webhooks::SqsWebhooks;

use time::{Duration, OffsetDateTime};

use crate::queues;
use crate::store::{self, QuotaBound, Store};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, Operation};
use strato_domain::ports::{
    Claim, ClaimLost, Claims, ClusterLocks, Clusters, CreateRejected, Intake, JobQueue, LockOutcome,
    OpenStatus, Operations, PortError, QuotaExceeded, Templates, TenantSlots,
};
use strato_domain::template::Template;

impl Operations for Store {
    async fn load_operation(&self, id: &OperationId) -> Result<Option<Operation>, PortError> {
        Ok(self.get_operation(id).await?)
    }

    async fn store_operation(&self, op: &mut Operation, was_terminal: bool) -> Result<(), PortError> {
        Ok(self.save_operation(op, was_terminal).await?)
    }

    async fn store_operation_recorded(
        &self,
        op: &mut Operation,
        was_terminal: bool,
        entry: &strato_domain::audit::AuditEntry,
    ) -> Result<(), PortError> {
        Ok(self
            .save_operation_recorded(op, was_terminal, Some(entry))
            .await?)
    }

    async fn open_cluster_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, PortError> {
        Ok(self.open_operations_of(cluster).await?)
    }

    async fn recent_cluster_operations(
        &self,
        cluster: &ClusterId,
        limit: u32,
    ) -> Result<Vec<Operation>, PortError> {
        Ok(self.operations_page(cluster, limit, None).await?.operations)
    }

    async fn parked_operations(&self) -> Result<Vec<Operation>, PortError> {
        Ok(Store::open_operations(self, OpenStatus::Waiting.as_str()).await?)
    }

    async fn open_operations(&self, bucket: OpenStatus) -> Result<Vec<Operation>, PortError> {
        Ok(Store::open_operations(self, bucket.as_str()).await?)
    }

    async fn record_operation(&self, op: &Operation) -> Result<Result<(), QuotaExceeded>, PortError> {
        Ok(Store::add_operation_bounded(self, op, QuotaBound::Stored)
            .await?
            .map_err(|r| QuotaExceeded {
                max: match r {
                    CreateRejected::OperationQuota { max } | CreateRejected::ClusterQuota { max } => max,
                    CreateRejected::NameTaken => 0,
                },
            }))
    }
}

impl strato_domain::ports::TenantSettings for Store {
    async fn tenant_rules(&self, tenant: &TenantId) -> Result<strato_domain::ports::TenantRules, PortError> {
        Ok(Store::tenant_rules(self, tenant).await?)
    }
}

impl Clusters for Store {
    async fn load_cluster(&self, tenant: &TenantId, id: &ClusterId) -> Result<Option<Cluster>, PortError> {
        Ok(self.get_cluster(tenant, id).await?)
    }

    async fn store_cluster(&self, cluster: &mut Cluster) -> Result<(), PortError> {
        Ok(self.save_cluster(cluster).await?)
    }

    async fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        Ok(Store::clusters_due_for_drift(self, now, limit).await?)
    }

    async fn clusters_expiring_before(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        Ok(Store::clusters_expiring_before(self, before, limit).await?)
    }

    async fn clusters_silent_since(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, PortError> {
        Ok(Store::clusters_silent_since(self, before, limit).await?)
    }
}

/// The quotas are checked by the write's own conditions against the tenant item (no read first), so a race
/// between two creates cannot exceed them.
impl Intake for Store {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        op: &Operation,
        audit: Option<&strato_domain::audit::AuditEntry>,
    ) -> Result<Result<(), CreateRejected>, PortError> {
        Ok(Store::create_cluster_bounded(self, cluster, op, QuotaBound::Stored, audit).await?)
    }

    async fn add_operation(&self, op: &Operation) -> Result<Result<(), CreateRejected>, PortError> {
        Ok(Store::add_operation_bounded(self, op, QuotaBound::Stored).await?)
    }

    async fn add_operation_on(
        &self,
        cluster: &mut Cluster,
        op: &Operation,
    ) -> Result<Result<(), CreateRejected>, PortError> {
        Ok(Store::add_operation_on_bounded(self, cluster, op, QuotaBound::Stored).await?)
    }
}

impl Templates for Store {
    async fn template(&self, name: &str, version: &str) -> Result<Option<Template>, PortError> {
        Ok(self.get_template(name, version).await?.map(|t| t.template))
    }

    async fn templates(&self) -> Result<Vec<Template>, PortError> {
        Ok(self
            .list_templates()
            .await?
            .into_iter()
            .map(|t| t.template)
            .collect())
    }

    async fn status(
        &self,
        name: &str,
        version: &str,
    ) -> Result<strato_domain::template_status::TemplateStatus, PortError> {
        Ok(self.template_status(name, version).await?)
    }

    async fn statuses(
        &self,
        name: &str,
    ) -> Result<Vec<(String, strato_domain::template_status::TemplateStatus)>, PortError> {
        Ok(self.template_statuses(name).await?)
    }
}

impl Claims for Store {
    async fn claim(&self, op: &mut Operation, claim: &Claim) -> Result<Result<(), ClaimLost>, PortError> {
        Ok(self.claim_operation(op, claim).await?)
    }
}

impl ClusterLocks for Store {
    async fn acquire_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<LockOutcome, PortError> {
        Ok(match self.acquire_cluster_lock(cluster, op, lease, now).await? {
            store::LockOutcome::Acquired { fencing_token } => LockOutcome::Acquired { fencing_token },
            store::LockOutcome::Held { owner } => LockOutcome::Held { owner },
        })
    }

    async fn release_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
    ) -> Result<bool, PortError> {
        Ok(self.release_cluster_lock(cluster, op, fencing_token).await?)
    }

    async fn forget_lock(&self, cluster: &ClusterId, op: &OperationId) -> Result<bool, PortError> {
        Ok(self.forget_cluster_lock(cluster, op).await?)
    }

    async fn lock_owner(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, PortError> {
        Ok(self.cluster_lock(cluster).await?)
    }
}

impl TenantSlots for Store {
    async fn concurrency_limit(&self, tenant: &TenantId) -> Result<u32, PortError> {
        Ok(self.quotas(tenant).await?.max_concurrent_operations)
    }

    async fn acquire_slot(&self, tenant: &TenantId, op: &OperationId, limit: u32) -> Result<bool, PortError> {
        Ok(self.acquire_tenant_slot(tenant, op, limit).await?)
    }

    async fn release_slot(&self, tenant: &TenantId, op: &OperationId) -> Result<(), PortError> {
        Ok(self.release_tenant_slot(tenant, op).await?)
    }

    async fn all_slot_holders(&self) -> Result<Vec<(TenantId, Vec<OperationId>)>, PortError> {
        Ok(self.all_tenant_slots().await?)
    }
}

/// `jobs.fifo` through SQS.
#[derive(Debug, Clone, Copy)]
pub struct SqsJobQueue<'a> {
    pub sqs: &'a aws_sdk_sqs::Client,
    pub url: &'a str,
}

impl JobQueue for SqsJobQueue<'_> {
    async fn enqueue(&self, job: &JobMessage, wake: &str) -> Result<(), PortError> {
        Ok(queues::enqueue_job(self.sqs, self.url, job, wake).await?)
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        queues::delay_redelivery(self.sqs, self.url, Some(receipt_handle), secs).await;
    }
}
