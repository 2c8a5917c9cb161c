//! `strato-status`: consumes the `events` queue — runner events ([`RunnerEvent`]) and EventBridge "ECS Task
//! State Change" events — and applies them to operations and clusters through the state machine. When an
//! operation ends it frees the cluster lock and the tenant slot and re-enqueues whoever waits for them.
//!
//! The queue is a standard one: events arrive duplicated and out of order. Every change is therefore a
//! re-read plus a conditional write, steps are upserted by name, terminal operations ignore later terminal
//! events, and releases are conditioned on the operation's own fencing token.
//!
//! Runner contract relied on here: the runner exits 0 only after its final report (succeeded, failed or
//! cancelled) was sent, and marks its log archive complete just before sending it. A task that stops with
//! another exit code (or none) and an incomplete archive did not report, so its STOPPED event fails the
//! operation; one that exited 0 or completed its archive has a report in flight, so its STOPPED event waits
//! for it ([`ReportWait`]: several visibility timeouts of the events queue, since the report's own batch may
//! fail once or twice).
//!
//! Layout: `incoming` parses queue records and `decide` ([`Status`], the decisions' ports) routes them;
//! `config` wires the AWS adapters into it ([`handle`]); `runner_events`, `task_change`
//! and `agent` (the cluster agent handshake) decide what an event does; `fencing` refuses stale events;
//! `handoff` ends an operation, with `cluster_end` for its cluster and `drift` for drift results (a
//! `notify` policy queues the tenant's webhook notification for `strato-webhooks`);
//! `frames` tells WebSocket subscribers. Where a decision can be made without I/O it is a pure function
//! next to the code that performs it, unit-tested in its module.
//!
//! [`RunnerEvent`]: strato_domain::messages::RunnerEvent

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod agent;
mod approval;
mod cluster_end;
mod config;
mod decide;
mod drift;
mod ending;
mod fencing;
mod frames;
mod handoff;
mod incoming;
mod lifecycle;
mod ports;
mod rollout_feed;
mod runner_events;
mod state_listing;
mod task_change;

use strato_aws::env::EnvError;
use strato_domain::ids::OperationId;

pub use agent::MAX_TIMER_DELAY_SECS;
pub use config::{AwsPorts, Config, Ctx, handle};
pub use incoming::{
    EnvVar, Incoming, TaskContainer, TaskContainerOverride, TaskOverrides, TaskStateChange, parse_body,
};
pub use ports::{Outcome, Ports, REPORT_WAIT_VISIBILITY_TIMEOUTS, ReportWait, Status};
pub use runner_events::apply_runner_event;
pub use task_change::{FINAL_REPORT_GRACE_RECEIVES, FINAL_REPORT_RETRY_SECS, LOST_REPORT};

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error("record {message_id} has no body")]
    EmptyBody { message_id: String },
    #[error("record {message_id} is neither a runner event nor an ECS task state change: {reason}")]
    BadBody { message_id: String, reason: String },
    #[error("operation {0} does not exist")]
    UnknownOperation(OperationId),
    #[error("{what} could not be rendered: {source}")]
    Render {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("operation {0} kept changing concurrently")]
    Contended(OperationId),
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

/// Builders for the modules' unit tests (no AWS, no test bed).
#[cfg(test)]
pub(crate) mod test_support {
    use aws_lambda_events::sqs::SqsEvent;
    use strato_domain::ids::{ClusterId, TenantId};
    use strato_domain::model::{
        CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, OperationStatus,
        TemplateRef,
    };
    use strato_domain::ts;
    use time::OffsetDateTime;

    /// The body of the first record of a sample in `events/status/`.
    pub fn sample_body(rel: &str) -> String {
        let path = format!("{}/../../events/status/{rel}", env!("CARGO_MANIFEST_DIR"));
        let event: SqsEvent = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        event.records[0].body.clone().unwrap()
    }

    pub fn at(s: &str) -> OffsetDateTime {
        ts::parse(s).unwrap()
    }

    /// A running operation of `kind` holding fencing token 1, on a cluster in `state`.
    pub fn running(kind: OperationKind, state: ClusterState) -> (Operation, Cluster) {
        let tenant: TenantId = "acme".parse().unwrap();
        let spec = ClusterSpec {
            name: "prod-eu".parse().unwrap(),
            template: TemplateRef {
                name: "aws-eks-basic".into(),
                version: "1.2.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "eu-west-1".into(),
            variables: Default::default(),
            target: None,
        };
        let c = Cluster::new(tenant.clone(), ClusterId::generate(), spec, ts::now()).in_state(state);
        let mut op = Operation::new(tenant, c.cluster_id.clone(), kind, ts::now());
        op.status = OperationStatus::Running;
        op.fencing_token = Some(1);
        op.task_arn = Some("arn:aws:ecs:eu-west-1:123456789012:task/strato/abc".into());
        (op, c)
    }
}
