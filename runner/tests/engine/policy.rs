//! Plan policies (policy as code) against the real engine and moto: a tenant's `strato.plan` policy that
//! denies the plan fails the run at step `policy`, naming each rule, before anything is applied.

use crate::support;

use serde_json::json;
use strato_domain::ErrorCategory;
use support::{Bed, steps_started, the_failure};

use strato_testbed::TestEngine;

strato_testbed::engine_matrix!(async a_plan_denied_by_policy_fails_at_step_policy_before_apply, tf015_only);

const NO_EKS: &str = r#"package strato.plan

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_eks_cluster"
	"create" in rc.change.actions
	msg := sprintf("%s: EKS clusters need an exception", [rc.address])
}
"#;

async fn a_plan_denied_by_policy_fails_at_step_policy_before_apply(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    bed.store
        .put_policy(
            &bed.tenant,
            strato_domain::ports::PolicyOwner::Tenant,
            "no-eks",
            NO_EKS,
        )
        .await
        .unwrap();
    let spec = bed.spec("runner-eks", "denied", json!({}));
    let (cluster, job) = bed.create(spec).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "cluster/policy");
    assert!(
        error.what.contains("tenant/no-eks: ") && error.what.contains("EKS clusters need an exception"),
        "{}",
        error.what
    );
    assert!(error.what.contains("nothing was applied"), "{}", error.what);
    assert!(error.fix.contains("/v1/policies"), "{}", error.fix);
    let started = steps_started(&events);
    assert!(started.iter().any(|s| s == "cluster/policy"), "{started:?}");
    assert!(!started.iter().any(|s| s == "cluster/apply"), "{started:?}");
    assert!(
        bed.state_types(&cluster, "cluster").await.is_empty(),
        "the denied stage applied nothing"
    );
    assert!(bed.held_locks().await.is_empty());
}
