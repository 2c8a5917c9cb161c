//! The rollout's decisions, on plain values: plan checks, wave assignment, the state machine's runs through
//! previews, waves, soaks, stop rules, failures, pauses, resumes and aborts, and stale or repeated inputs.

use std::collections::VecDeque;

use serde_json::json;
use strato_domain::ids::{ClusterId, OperationId};

use crate::RolloutError;
use crate::machine::{Effect, Input, MemberStatus, PauseReason, Phase, PlanFindings, Rollout};
use crate::report::FleetSummary;
use crate::spec::{Mode, Plan, StopRules, WaveSize};

fn plan(v: serde_json::Value) -> Plan {
    serde_json::from_value(v).unwrap()
}

fn fleet(n: usize) -> Vec<(strato_domain::ids::TenantId, ClusterId, String)> {
    (0..n)
        .map(|i| {
            let tenant = if i % 2 == 0 { "acme" } else { "globex" };
            (tenant.parse().unwrap(), ClusterId::generate(), "1.0.0".to_owned())
        })
        .collect()
}

fn three_waves(soak: u64) -> Plan {
    plan(
        json!({"mode": "apply", "waves": [{"clusters": 1}, {"percent": 25}, {"percent": 100}],
        "soak_secs": soak, "max_parallel": 10}),
    )
}

fn in_place(cost: f64) -> PlanFindings {
    PlanFindings {
        add: 1,
        change: 2,
        monthly_difference: Some(cost),
        ..PlanFindings::default()
    }
}

/// A simulated fleet: carries out effects, answering each run with what `outcome` says for its cluster.
struct Sim {
    r: Rollout,
    now: i64,
    queue: VecDeque<Input>,
    started: Vec<(String, ClusterId)>,
    notices: Vec<Effect>,
    wake: Option<i64>,
}

#[derive(Clone)]
enum Outcome {
    Plan(PlanFindings),
    PlanFails(String),
    UpdateFails(String),
}

impl Sim {
    fn new(r: Rollout) -> Self {
        Self {
            r,
            now: 1_000,
            queue: VecDeque::new(),
            started: vec![],
            notices: vec![],
            wake: None,
        }
    }

    fn take(&mut self, effects: Vec<Effect>, outcome: &dyn Fn(&ClusterId) -> Outcome) {
        for e in effects {
            match e {
                Effect::Plan { cluster, operation } => {
                    self.started.push(("plan".into(), cluster.clone()));
                    self.queue.push_back(match outcome(&cluster) {
                        Outcome::PlanFails(reason) => Input::Failed {
                            cluster,
                            operation,
                            reason,
                        },
                        Outcome::Plan(findings) => Input::Planned {
                            cluster,
                            operation,
                            findings,
                        },
                        Outcome::UpdateFails(_) => Input::Planned {
                            cluster,
                            operation,
                            findings: in_place(1.0),
                        },
                    });
                }
                Effect::Update { cluster, operation } => {
                    self.started.push(("update".into(), cluster.clone()));
                    self.queue.push_back(match outcome(&cluster) {
                        Outcome::UpdateFails(reason) => Input::Failed {
                            cluster,
                            operation,
                            reason,
                        },
                        _ => Input::Upgraded { cluster, operation },
                    });
                }
                Effect::WakeAt(t) => self.wake = Some(t),
                other => self.notices.push(other),
            }
        }
    }

    /// Delivers every queued outcome, and wake-ups when nothing else is left, until quiet.
    fn run(&mut self, outcome: &dyn Fn(&ClusterId) -> Outcome) {
        loop {
            if let Some(input) = self.queue.pop_front() {
                let effects = self.r.step(input, self.now).unwrap();
                self.take(effects, outcome);
                continue;
            }
            match self.wake.take() {
                Some(t) if !self.r.finished() && matches!(self.r.phase, Phase::Soaking { .. }) => {
                    self.now = t;
                    let effects = self.r.step(Input::Tick, self.now).unwrap();
                    self.take(effects, outcome);
                }
                _ => return,
            }
        }
    }
}

fn ok(_: &ClusterId) -> Outcome {
    Outcome::Plan(in_place(10.0))
}

#[test]
fn plans_are_checked_field_by_field() {
    let bad = |v: serde_json::Value, field: &str| {
        let p: Plan = plan(v.clone());
        match p.check() {
            Err(RolloutError::Invalid { field: f, reason }) => {
                assert_eq!(f, field, "{v}: {reason}")
            }
            other => panic!("{v}: {other:?}"),
        }
    };
    bad(json!({"mode": "apply"}), "waves");
    bad(json!({"mode": "apply", "waves": [{"percent": 50}]}), "waves");
    bad(
        json!({"mode": "apply", "waves": [{"percent": 50}, {"percent": 40}, {"percent": 100}]}),
        "waves",
    );
    bad(
        json!({"mode": "apply", "waves": [{"clusters": 0}, {"percent": 100}]}),
        "waves",
    );
    bad(json!({"mode": "apply", "waves": [{"percent": 101}]}), "waves");
    bad(
        json!({"mode": "apply", "waves": [{"percent": 100}], "soak_secs": 700_000}),
        "soak_secs",
    );
    bad(json!({"mode": "preview", "waves": [{"percent": 100}]}), "waves");
    bad(json!({"mode": "preview", "max_parallel": 0}), "max_parallel");
    bad(
        json!({"mode": "preview", "stop": {"max_monthly_increase": -1.0}}),
        "stop.max_monthly_increase",
    );
    bad(
        json!({"mode": "preview", "stop": {"allow_replace": [" "]}}),
        "stop.allow_replace",
    );
    assert!(serde_json::from_value::<Plan>(json!({"mode": "apply", "wavez": []})).is_err());
    three_waves(60).check().unwrap();
    plan(json!({"mode": "preview"})).check().unwrap();
}

#[test]
fn waves_take_their_cumulative_share_and_empty_ones_close_up() {
    assert_eq!(
        three_waves(0).assign_waves(10),
        vec![0, 1, 1, 2, 2, 2, 2, 2, 2, 2],
        "1, then up to 3 (25% of 10 rounded up), then the rest"
    );
    // One cluster: the 25% wave would add nothing and is left out.
    assert_eq!(three_waves(0).assign_waves(1), vec![0]);
    // Four: 25% is the one cluster wave 0 already has, so the 25% wave is empty and the rest is wave 1.
    assert_eq!(three_waves(0).assign_waves(4), vec![0, 1, 1, 1]);
    assert_eq!(plan(json!({"mode": "preview"})).assign_waves(3), vec![0, 0, 0]);
}

#[test]
fn a_preview_plans_every_cluster_within_its_parallel_bound_and_applies_nothing() {
    let p = plan(json!({"mode": "preview", "max_parallel": 3, "stop": {"allow_replace": []}}));
    let r = Rollout::new(p, fleet(10)).unwrap();
    let replacer = r.members[4].cluster.clone();
    let invalid = r.members[7].cluster.clone();
    let outcome = |c: &ClusterId| {
        if *c == replacer {
            Outcome::Plan(PlanFindings {
                replace: vec!["module.cluster.aws_eks_node_group.this".into()],
                monthly_difference: Some(30.0),
                ..PlanFindings::default()
            })
        } else if *c == invalid {
            Outcome::PlanFails("node_instance_type: not offered by version 2.0.0".into())
        } else {
            Outcome::Plan(in_place(10.0))
        }
    };
    let mut sim = Sim::new(r);
    let first = sim.r.start();
    assert_eq!(first.len(), 3, "{first:?}");
    sim.take(first, &outcome);
    // Each answer starts the next plan, never more than three in flight.
    while let Some(i) = sim.queue.pop_front() {
        let e = sim.r.step(i, sim.now).unwrap();
        let in_flight = sim
            .r
            .members
            .iter()
            .filter(|m| matches!(m.status, MemberStatus::Planning { .. }))
            .count();
        assert!(in_flight <= 3, "{in_flight}");
        sim.take(e, &outcome);
    }
    sim.run(&outcome);
    assert_eq!(sim.r.phase, Phase::Completed);
    assert!(sim.started.iter().all(|(k, _)| k == "plan"), "nothing applied");
    assert_eq!(sim.started.len(), 10);
    assert_eq!(sim.notices, vec![Effect::Completed]);
    let s = FleetSummary::of(&sim.r);
    assert_eq!((s.in_place, s.failed, s.held, s.waiting), (8, 1, 1, 0));
    assert_eq!(s.replace["module.cluster.aws_eks_node_group.this"], 1);
    assert_eq!(
        s.text(),
        "10 clusters: 8 in place, 1 replace module.cluster.aws_eks_node_group.this, 0 destroy; +$110.00/month; 1 held by a stop rule; 1 failed"
    );
}

#[test]
fn an_apply_goes_wave_by_wave_with_a_soak_between_and_completes() {
    let mut sim = Sim::new(Rollout::new(three_waves(600), fleet(10)).unwrap());
    let effects = sim.r.start();
    assert_eq!(effects.len(), 1, "wave 0 is one cluster: {effects:?}");
    sim.take(effects, &ok);
    // Run wave 0 only: its upgrade ends, then the soak.
    while let Some(i) = sim.queue.pop_front() {
        let e = sim.r.step(i, sim.now).unwrap();
        sim.take(e, &ok);
    }
    assert_eq!(
        sim.r.phase,
        Phase::Soaking {
            wave: 0,
            until: 1_600
        }
    );
    // A tick before the soak ends starts nothing.
    assert_eq!(
        sim.r.step(Input::Tick, 1_200).unwrap(),
        vec![Effect::WakeAt(1_600)]
    );
    sim.run(&ok);
    assert_eq!(sim.r.phase, Phase::Completed);
    let updates: Vec<_> = sim.started.iter().filter(|(k, _)| k == "update").collect();
    assert_eq!(updates.len(), 10);
    // Waves in order: every update of wave n started before any plan of wave n+1.
    let wave_of = |c: &ClusterId| sim.r.members.iter().find(|m| &m.cluster == c).unwrap().wave;
    let order: Vec<usize> = sim.started.iter().map(|(_, c)| wave_of(c)).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    assert_eq!(sim.now, 2_200, "two soaks of 600 s");
    assert_eq!(FleetSummary::of(&sim.r).upgraded, 10);
}

#[test]
fn a_failure_in_the_second_wave_pauses_before_the_third_and_a_resume_finishes() {
    let mut sim = Sim::new(Rollout::new(three_waves(0), fleet(10)).unwrap());
    let broken = sim.r.members[2].cluster.clone();
    assert_eq!(sim.r.members[2].wave, 1);
    let failing = |c: &ClusterId| {
        if *c == broken {
            Outcome::UpdateFails("apply: InvalidParameterException (fix: …)".into())
        } else {
            ok(c)
        }
    };
    let e = sim.r.start();
    sim.take(e, &failing);
    sim.run(&failing);
    let Phase::Paused { wave, reason } = &sim.r.phase else {
        panic!("{:?}", sim.r.phase)
    };
    assert_eq!(*wave, 1);
    assert!(matches!(reason, PauseReason::Failure { cluster, .. } if *cluster == broken));
    assert!(
        reason.text().contains("InvalidParameterException"),
        "{}",
        reason.text()
    );
    assert!(
        sim.r
            .members
            .iter()
            .filter(|m| m.wave == 2)
            .all(|m| m.status == MemberStatus::Pending),
        "nothing of wave 3 started"
    );
    assert_eq!(
        sim.notices
            .iter()
            .filter(|n| matches!(n, Effect::Paused(_)))
            .count(),
        1
    );
    // A tick while paused starts nothing.
    assert!(sim.r.step(Input::Tick, 5_000).unwrap().is_empty());
    // Fixed; resume plans the failed cluster again and goes on.
    let e = sim.r.step(Input::Resume { skip_failed: false }, 5_000).unwrap();
    assert!(
        matches!(&e[..], [Effect::Plan { cluster, .. }] if *cluster == broken),
        "{e:?}"
    );
    sim.take(e, &ok);
    sim.run(&ok);
    assert_eq!(sim.r.phase, Phase::Completed);
    assert_eq!(FleetSummary::of(&sim.r).upgraded, 10);
}

#[test]
fn resume_can_skip_the_failed_cluster() {
    let mut sim = Sim::new(Rollout::new(three_waves(0), fleet(4)).unwrap());
    let broken = sim.r.members[0].cluster.clone();
    let fails = |c: &ClusterId| {
        if *c == broken {
            Outcome::PlanFails("variables: node_count is no longer accepted".into())
        } else {
            ok(c)
        }
    };
    let e = sim.r.start();
    sim.take(e, &fails);
    sim.run(&fails);
    assert!(matches!(sim.r.phase, Phase::Paused { wave: 0, .. }));
    let e = sim.r.step(Input::Resume { skip_failed: true }, 2_000).unwrap();
    sim.take(e, &fails);
    sim.run(&fails);
    assert_eq!(sim.r.phase, Phase::Completed);
    let s = FleetSummary::of(&sim.r);
    assert_eq!((s.upgraded, s.skipped), (3, 1));
}

#[test]
fn stop_rules_hold_a_cluster_whose_plan_replaces_destroys_costs_or_is_denied() {
    let rules = StopRules {
        allow_replace: vec!["module.cluster.aws_launch_template.nodes".into()],
        allow_destroy: false,
        max_monthly_increase: Some(50.0),
    };
    let r = Rollout::new(
        Plan {
            stop: rules,
            ..three_waves(0)
        },
        fleet(1),
    )
    .unwrap();
    let held = |f: PlanFindings| r.held_by_rules(&f);
    let allowed = PlanFindings {
        replace: vec![
            "module.cluster.aws_launch_template.nodes".into(),
            "module.cluster.aws_launch_template.nodes[0]".into(),
        ],
        monthly_difference: Some(50.0),
        ..PlanFindings::default()
    };
    assert_eq!(held(allowed), None);
    let reason = held(PlanFindings {
        replace: vec!["module.cluster.aws_eks_node_group.this".into()],
        ..PlanFindings::default()
    })
    .unwrap();
    assert!(
        reason.contains("aws_eks_node_group.this") && reason.contains("allow_replace"),
        "{reason}"
    );
    // A look-alike is not a prefix match.
    assert!(
        held(PlanFindings {
            replace: vec!["module.cluster.aws_launch_template.nodes_extra".into()],
            ..PlanFindings::default()
        })
        .is_some()
    );
    assert!(
        held(PlanFindings {
            destroy: vec!["aws_iam_role.old".into()],
            ..PlanFindings::default()
        })
        .unwrap()
        .contains("allow_destroy")
    );
    assert!(
        held(PlanFindings {
            monthly_difference: Some(50.01),
            ..PlanFindings::default()
        })
        .unwrap()
        .contains("above stop.max_monthly_delta 50.00")
    );
    assert!(
        held(PlanFindings {
            denied: vec!["eks_public_endpoint".into()],
            ..PlanFindings::default()
        })
        .unwrap()
        .contains("eks_public_endpoint")
    );

    // In an apply, a held cluster is not updated and the rollout pauses with the rule.
    let mut sim = Sim::new(Rollout::new(three_waves(0), fleet(3)).unwrap());
    let replace = |_: &ClusterId| {
        Outcome::Plan(PlanFindings {
            replace: vec!["module.cluster.aws_eks_cluster.this".into()],
            ..PlanFindings::default()
        })
    };
    let e = sim.r.start();
    sim.take(e, &replace);
    sim.run(&replace);
    assert!(matches!(
        &sim.r.phase,
        Phase::Paused {
            reason: PauseReason::StopRule { .. },
            ..
        }
    ));
    assert!(sim.started.iter().all(|(k, _)| k == "plan"), "{:?}", sim.started);
    assert!(matches!(sim.r.members[0].status, MemberStatus::Held { .. }));
}

#[test]
fn repeated_stale_and_foreign_inputs_change_nothing() {
    let mut r = Rollout::new(three_waves(0), fleet(4)).unwrap();
    let e = r.start();
    let Effect::Plan { cluster, operation } = e[0].clone() else {
        panic!("{e:?}")
    };
    let planned = Input::Planned {
        cluster: cluster.clone(),
        operation: operation.clone(),
        findings: in_place(1.0),
    };
    let e = r.step(planned.clone(), 1).unwrap();
    let Effect::Update {
        operation: update, ..
    } = e[0].clone()
    else {
        panic!("{e:?}")
    };
    let before = r.clone();
    assert!(
        r.step(planned, 2).unwrap().is_empty(),
        "a redelivered plan outcome"
    );
    assert!(
        r.step(
            Input::Upgraded {
                cluster: cluster.clone(),
                operation: OperationId::generate()
            },
            2
        )
        .unwrap()
        .is_empty()
    );
    assert!(
        r.step(
            Input::Failed {
                cluster: cluster.clone(),
                operation,
                reason: "late".into()
            },
            2
        )
        .unwrap()
        .is_empty(),
        "the plan's operation is no longer awaited"
    );
    assert_eq!(r, before);
    assert!(matches!(
        r.step(
            Input::Upgraded {
                cluster: ClusterId::generate(),
                operation: update.clone()
            },
            2
        ),
        Err(RolloutError::NotAMember(_))
    ));
    let e = r
        .step(
            Input::Upgraded {
                cluster: cluster.clone(),
                operation: update.clone(),
            },
            3,
        )
        .unwrap();
    assert!(!e.is_empty(), "the next wave starts");
    assert!(
        r.step(
            Input::Upgraded {
                cluster,
                operation: update
            },
            4
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn abort_keeps_what_was_upgraded_and_ends_the_rollout() {
    let mut sim = Sim::new(Rollout::new(three_waves(600), fleet(10)).unwrap());
    let e = sim.r.start();
    sim.take(e, &ok);
    while let Some(i) = sim.queue.pop_front() {
        let e = sim.r.step(i, sim.now).unwrap();
        sim.take(e, &ok);
    }
    assert!(matches!(sim.r.phase, Phase::Soaking { .. }));
    // An operator's pause during the soak holds the next wave; abort then ends the rollout.
    assert!(matches!(
        &sim.r
            .step(
                Input::Pause {
                    by: "ops@example.com".into()
                },
                1_100
            )
            .unwrap()[..],
        [Effect::Paused(PauseReason::Operator { .. })]
    ));
    assert!(sim.r.step(Input::Tick, 9_999).unwrap().is_empty());
    assert_eq!(
        sim.r
            .step(
                Input::Abort {
                    by: "ops@example.com".into()
                },
                1_200
            )
            .unwrap(),
        vec![Effect::Aborted]
    );
    let s = FleetSummary::of(&sim.r);
    assert_eq!((s.upgraded, s.waiting), (1, 9));
    assert_eq!(
        sim.r.step(Input::Resume { skip_failed: false }, 1_300),
        Err(RolloutError::Finished)
    );
    assert_eq!(
        sim.r.step(Input::Pause { by: "x".into() }, 1_300),
        Err(RolloutError::Finished)
    );
    // Stored and read back as it was.
    let back: Rollout = serde_json::from_str(&serde_json::to_string(&sim.r).unwrap()).unwrap();
    assert_eq!(back, sim.r);
    assert_eq!(back.plan.mode, Mode::Apply);
    assert_eq!(back.plan.waves[1], WaveSize::Percent(25));
}

#[test]
fn an_empty_selection_is_refused() {
    assert_eq!(
        Rollout::new(three_waves(0), vec![]).unwrap_err(),
        RolloutError::NothingSelected
    );
}
