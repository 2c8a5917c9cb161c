//! Carrying out effects on fakes: runs started with the machine's operation ids, a refused start fed back
//! as the member's failure (pausing an apply rollout, with a notice), and completion told.

use std::sync::Mutex;

use serde_json::json;
use strato_domain::ids::{ClusterId, OperationId, TenantId};

use crate::effects::{Notice, Runs, carry_out};
use crate::fake::FakeRollouts;
use crate::machine::{Input, Member, MemberStatus, PauseReason, Phase, PlanFindings, Rollout};
use crate::spec::Plan;
use crate::store::{Owner, Record, RolloutId, RolloutStore, apply};

#[derive(Default)]
pub(crate) struct FakeRuns {
    pub(crate) refuse: Vec<ClusterId>,
    pub(crate) started: Mutex<Vec<(&'static str, ClusterId, OperationId)>>,
    pub(crate) notices: Mutex<Vec<Notice>>,
}

impl Runs for FakeRuns {
    async fn plan(&self, _: &Record, m: &Member, op: &OperationId) -> Result<(), String> {
        if self.refuse.contains(&m.cluster) {
            return Err("the cluster is FAILED; retry it or delete it".into());
        }
        self.started
            .lock()
            .unwrap()
            .push(("plan", m.cluster.clone(), op.clone()));
        Ok(())
    }

    async fn update(&self, _: &Record, m: &Member, op: &OperationId) -> Result<(), String> {
        self.started
            .lock()
            .unwrap()
            .push(("update", m.cluster.clone(), op.clone()));
        Ok(())
    }

    async fn notify(&self, _: &Record, notice: Notice) {
        self.notices.lock().unwrap().push(notice);
    }
}

pub(crate) fn record(clusters: &[ClusterId], plan: serde_json::Value) -> Record {
    let acme: TenantId = "acme".parse().unwrap();
    let plan: Plan = serde_json::from_value(plan).unwrap();
    let members = clusters
        .iter()
        .map(|c| (acme.clone(), c.clone(), "1.0.0".to_owned()))
        .collect();
    Record {
        id: RolloutId::generate(),
        owner: Owner::Platform,
        template: "eks".into(),
        to_version: "1.1.0".into(),
        created_by: "ops".into(),
        created_at: 0,
        rollout: Rollout::new(plan, members).unwrap(),
        version: 0,
    }
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

#[test]
fn a_refused_start_is_the_members_failure_and_pauses_an_apply_rollout() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let (a, b) = (ClusterId::generate(), ClusterId::generate());
        let mut r = record(
            &[a.clone(), b.clone()],
            json!({"mode": "apply", "waves": [{"percent": 100}]}),
        );
        let effects = r.rollout.start();
        store.create(&r).await.unwrap();
        let runs = FakeRuns {
            refuse: vec![b.clone()],
            ..FakeRuns::default()
        };
        let r = carry_out(&store, &runs, r, effects, 10).await.unwrap();

        let started = runs.started.lock().unwrap().clone();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].1, a);
        // The run was started under the id the machine saved, so its end finds the member.
        assert!(r.waits_for(&a, &started[0].2));
        let Phase::Paused {
            reason: PauseReason::Failure { cluster, reason },
            ..
        } = &r.rollout.phase
        else {
            panic!("{:?}", r.rollout.phase)
        };
        assert_eq!(cluster, &b);
        assert!(reason.contains("FAILED"), "{reason}");
        assert!(matches!(
            runs.notices.lock().unwrap().as_slice(),
            [Notice::Paused(PauseReason::Failure { .. })]
        ));
        assert_eq!(
            store.load(&r.id).await.unwrap().unwrap(),
            r,
            "what was carried out is what is stored"
        );
    });
}

#[test]
fn a_preview_plans_each_member_and_tells_its_completion() {
    rt().block_on(async {
        let store = FakeRollouts::default();
        let clusters: Vec<_> = (0..3).map(|_| ClusterId::generate()).collect();
        let mut r = record(&clusters, json!({"mode": "preview"}));
        let effects = r.rollout.start();
        store.create(&r).await.unwrap();
        let runs = FakeRuns::default();
        let r = carry_out(&store, &runs, r, effects, 1).await.unwrap();
        let started = runs.started.lock().unwrap().clone();
        assert_eq!(started.len(), 3);
        assert!(started.iter().all(|(what, _, _)| *what == "plan"));

        for (_, cluster, operation) in &started {
            let input = Input::Planned {
                cluster: cluster.clone(),
                operation: operation.clone(),
                findings: PlanFindings::default(),
            };
            let (saved, effects) = apply(&store, &r.id, input, 2).await.unwrap().unwrap();
            carry_out(&store, &runs, saved, effects, 2).await.unwrap();
        }
        let done = store.load(&r.id).await.unwrap().unwrap();
        assert_eq!(done.rollout.phase, Phase::Completed);
        assert!(
            done.rollout
                .members
                .iter()
                .all(|m| matches!(m.status, MemberStatus::Planned { .. }))
        );
        assert_eq!(runs.notices.lock().unwrap().as_slice(), [Notice::Completed]);
        assert!(
            runs.started.lock().unwrap().iter().all(|(w, _, _)| *w == "plan"),
            "a preview updates nothing"
        );
    });
}
