//! A plan as a runner saves it for approval, for tests of what follows.

use strato_domain::approval::SavedPlan;
use strato_domain::messages::PlanSummary;
use strato_domain::model::ResourceChange;

/// A first create's plan of stage `main`: one VPC to add, no prior state, a fixed checksum.
pub fn saved_plan() -> SavedPlan {
    SavedPlan {
        stage: "main".into(),
        summary: PlanSummary {
            add: 1,
            change: 0,
            destroy: 0,
        },
        changes: vec![ResourceChange {
            address: "aws_vpc.this".into(),
            actions: vec!["create".into()],
        }],
        plan_key: "plans/op/main/ab.sealed".into(),
        plan_sha256: "ab".repeat(32),
        state: None,
    }
}
