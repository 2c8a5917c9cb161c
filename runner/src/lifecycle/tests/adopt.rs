//! Adoption after a false failure: a resource the template declares adoptable, created by an apply of this
//! run that reported a failure, is imported when the retried apply finds it — and nothing else is.

use strato_domain::ErrorCategory;
use strato_domain::model::OperationKind;

use super::support::{Bed, applies, cleans_up, network_outputs, outputs, plan, plans, vpc_plan};
use crate::fakes::{Cmd, Reply};

/// IAM created the role but the answer was lost (Terraform 1.11, provider 5 wording).
const LOST: &str = "Error: creating IAM Role (demo-eks): operation error IAM: CreateRole, https response error \
    StatusCode: 500, RequestID: 1f2e, api error InternalFailure: An internal error occurred\n\n  with \
    module.iam.aws_iam_role.cluster,\n  on iam/main.tf line 21, in resource \"aws_iam_role\" \"cluster\":\n";

/// The retried apply then finds it.
fn exists(address: &str) -> String {
    format!(
        "Error: creating IAM Role (demo-eks): operation error IAM: CreateRole, https response error StatusCode: \
         409, RequestID: 2a3b, EntityAlreadyExists: Role with name demo-eks already exists.\n\n  with {address},\n"
    )
}

fn role_plan() -> serde_json::Value {
    plan(&[("module.iam.aws_iam_role.cluster", "aws_iam_role", "create")])
}

/// A create of the two-stage fixture whose network stage goes through.
async fn create() -> Bed {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    let net = network_outputs(&["subnet-1"]);
    applies(&bed.engine, "network", &vpc_plan(), &net);
    bed
}

/// The cluster stage's next apply finds `address` already there: not adopted (nothing is imported), the create
/// fails as a name taken once the network stage is cleaned up.
async fn fails_as_name_taken(bed: &Bed, address: &str) {
    bed.engine
        .expect_in("cluster", Cmd::Apply, Reply::fail(&exists(address)));
    bed.engine.expect_in("cluster", Cmd::StateList, Reply::ok());
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::AlreadyExists, "{error:?}");
    assert_eq!(bed.engine.count(Cmd::Import), 0);
}

fn replan(bed: &Bed) {
    bed.engine
        .expect_in("cluster", Cmd::Plan, Reply::changes(b"saved plan"))
        .expect_in("cluster", Cmd::Show, Reply::json(&role_plan()));
}

/// A create whose cluster stage's first apply created the role but lost the answer, then plans again.
async fn lost_then_planned_again() -> Bed {
    let bed = create().await;
    plans(&bed.engine, "cluster", &role_plan());
    bed.engine.expect_in("cluster", Cmd::Apply, Reply::fail(LOST));
    replan(&bed);
    bed
}

#[tokio::test]
async fn a_resource_a_failed_apply_created_is_imported_and_the_stage_planned_again() {
    let bed = lost_then_planned_again().await;
    bed.engine
        .expect_in(
            "cluster",
            Cmd::Apply,
            Reply::fail(&exists("module.iam.aws_iam_role.cluster")),
        )
        .expect_in("cluster", Cmd::Import, Reply::ok());
    replan(&bed);
    bed.engine
        .expect_in("cluster", Cmd::Apply, Reply::ok())
        .expect_in("cluster", Cmd::Output, Reply::json(&outputs(&[])))
        .expect_in("cluster", Cmd::Refresh, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    let import = bed
        .engine
        .calls()
        .into_iter()
        .find(|c| c.cmd == Cmd::Import)
        .expect("an import");
    let id = import.args.last().unwrap();
    // The id the template declares, made of this cluster's managed name (which ends in its id's last 8).
    let own = bed.cluster.cluster_id.to_string();
    assert_eq!(
        *id,
        format!("demo-{}-eks", &own[own.len() - 8..]),
        "{:?}",
        import.args
    );
    assert_eq!(
        import.args[import.args.len() - 2],
        "module.iam.aws_iam_role.cluster"
    );
    assert_eq!(import.step, "cluster/import");
    assert!(
        bed.logged("already exists: an earlier apply of this run created it"),
        "{:#?}",
        bed.log()
    );
    assert!(
        !bed.steps().iter().any(|s| s.ends_with("cleanup")),
        "{:?}",
        bed.steps()
    );
}

#[tokio::test]
async fn already_exists_on_a_first_apply_is_a_name_taken_not_adopted() {
    let bed = create().await;
    plans(&bed.engine, "cluster", &role_plan());
    fails_as_name_taken(&bed, "module.iam.aws_iam_role.cluster").await;
}

#[tokio::test]
async fn only_the_resources_the_template_declares_are_adopted() {
    let bed = lost_then_planned_again().await;
    // Not declared adoptable: the cluster itself, whatever created it.
    fails_as_name_taken(&bed, "module.eks.aws_eks_cluster.this").await;
}

#[tokio::test]
async fn a_failed_import_fails_the_stage_naming_the_resource() {
    let bed = lost_then_planned_again().await;
    bed.engine
        .expect_in(
            "cluster",
            Cmd::Apply,
            Reply::fail(&exists("module.iam.aws_iam_role.cluster")),
        )
        .expect_in(
            "cluster",
            Cmd::Import,
            Reply::fail("Error: Cannot import non-existent remote object"),
        );
    bed.engine.expect_in("cluster", Cmd::StateList, Reply::ok());
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.step, "cluster/import", "{error:?}");
    assert!(
        error
            .what
            .starts_with("adopting module.iam.aws_iam_role.cluster (id demo-"),
        "{}",
        error.what
    );
}
