//! How an operation ends, as the end of a run or a task says it: what both the cluster's end state
//! (`cluster_end`) and the hand-off (`handoff`) read.

use std::collections::BTreeMap;

use strato_domain::cost::CostEstimate;
use strato_domain::error::UserError;
use strato_domain::model::ResourceChange;
use strato_domain::preview::Preview;
use time::OffsetDateTime;

/// A finished apply's Terraform outputs (non-sensitive ones).
pub(crate) type Outputs = BTreeMap<String, serde_json::Value>;

/// How an operation ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Final {
    Succeeded {
        outputs: Outputs,
        drift: Option<Vec<ResourceChange>>,
        estimate: Option<CostEstimate>,
        /// A preview's result, recorded on the operation.
        preview: Option<Box<Preview>>,
        at: OffsetDateTime,
    },
    Failed(UserError),
    Cancelled,
}
