use super::*;

#[test]
fn states_and_providers_round_trip_as_strings() {
    for s in ClusterState::ALL {
        assert_eq!(s.as_str().parse::<ClusterState>().unwrap(), s);
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
    for p in CloudProvider::ALL {
        assert_eq!(p.as_str().parse::<CloudProvider>().unwrap(), p);
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
    }
    assert!("ibm".parse::<CloudProvider>().unwrap_err().contains("allowed"));
}

#[test]
fn operation_kind_wire_names() {
    assert_eq!(
        serde_json::to_value(OperationKind::DriftCheck).unwrap(),
        "drift-check"
    );
    assert_eq!(serde_json::to_value(OperationKind::Estimate).unwrap(), "estimate");
    for k in [
        OperationKind::Create,
        OperationKind::Update,
        OperationKind::Delete,
        OperationKind::Plan,
        OperationKind::DriftCheck,
        OperationKind::Estimate,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
    }
    assert!(OperationKind::Delete.mutates());
    assert!(!OperationKind::DriftCheck.mutates());
    assert!(!OperationKind::Estimate.mutates());
    assert!(!OperationKind::Estimate.has_cluster());
    assert!(OperationKind::DriftCheck.has_cluster());
    assert!(OperationStatus::Cancelled.is_terminal());
    assert!(!OperationStatus::Dispatched.is_terminal());
}

#[test]
fn current_step_is_the_open_one() {
    let now = OffsetDateTime::now_utc();
    let mut op = Operation::new(
        "t1".parse().unwrap(),
        ClusterId::generate(),
        OperationKind::Create,
        now,
    );
    assert!(op.current_step().is_none());
    op.steps.push(Step {
        name: "init".into(),
        started_at: now,
        finished_at: Some(now),
        ok: Some(true),
    });
    op.steps.push(Step {
        name: "plan".into(),
        started_at: now,
        finished_at: None,
        ok: None,
    });
    assert_eq!(op.current_step().unwrap().name, "plan");
}

#[test]
fn target_account_is_optional_and_omitted_when_absent() {
    let plain = serde_json::json!({"name": "prod", "template": {"name": "t", "version": "1.0.0"},
        "provider": "aws", "region": "us-east-1"});
    let spec: ClusterSpec = serde_json::from_value(plain).unwrap();
    assert_eq!(spec.target, None);
    assert!(serde_json::to_value(&spec).unwrap().get("target").is_none());
    let with = serde_json::json!({"name": "prod", "template": {"name": "t", "version": "1.0.0"},
        "provider": "aws", "region": "us-east-1",
        "target": {"role_arn": "arn:aws:iam::1:role/r", "external_id": "ext-secret-42", "state_bucket": "b"}});
    let spec: ClusterSpec = serde_json::from_value(with).unwrap();
    let t = spec.target.clone().unwrap().aws().cloned().unwrap();
    assert_eq!(t.state_bucket.as_deref(), Some("b"));
    assert_eq!(t.lock_table, None);
    // An item written before external ids were issued loses its caller-chosen id on the next write.
    let back = serde_json::to_string(&spec).unwrap();
    assert!(!back.contains("ext-secret-42"), "{back}");
    assert!(back.contains("arn:aws:iam::1:role/r"));
}

fn spec() -> ClusterSpec {
    serde_json::from_value(
        serde_json::json!({"name": "prod", "template": {"name": "t", "version": "1.0.0"},
        "provider": "aws", "region": "us-east-1"}),
    )
    .unwrap()
}

#[test]
fn a_cluster_changes_state_only_as_the_state_machine_allows() {
    let mut c = Cluster::new(
        "t1".parse().unwrap(),
        ClusterId::generate(),
        spec(),
        OffsetDateTime::now_utc(),
    );
    assert_eq!(c.state(), ClusterState::Pending);
    let err = c.transition(ClusterState::Active).unwrap_err();
    assert_eq!((err.from, err.to), (ClusterState::Pending, ClusterState::Active));
    assert_eq!(
        c.state(),
        ClusterState::Pending,
        "a refused transition changes nothing"
    );
    c.transition(ClusterState::Provisioning).unwrap();
    assert_eq!(c.state(), ClusterState::Provisioning);
    assert!(c.transition(ClusterState::Provisioning).is_err(), "no self loops");
}

#[test]
fn the_private_state_still_travels_as_state() {
    let c = Cluster::new(
        "t1".parse().unwrap(),
        ClusterId::generate(),
        spec(),
        OffsetDateTime::now_utc(),
    )
    .in_state(ClusterState::Active);
    let mut json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["state"], "ACTIVE");
    json["state"] = "DELETING".into();
    let back: Cluster = serde_json::from_value(json).unwrap();
    assert_eq!(back.state(), ClusterState::Deleting);
}

#[test]
fn spec_rejects_bad_names_on_deserialize() {
    let bad = serde_json::json!({"name": "Bad Name", "template": {"name": "aws-eks-basic", "version": "1.1.0"},
        "provider": "aws", "region": "us-east-1"});
    assert!(serde_json::from_value::<ClusterSpec>(bad).is_err());
}

#[test]
fn a_cluster_remembers_only_its_newest_state_restores() {
    let mut c = Cluster::new(
        "acme".parse().unwrap(),
        ClusterId::generate(),
        spec(),
        crate::ts::now(),
    );
    for i in 0..STATE_RESTORES_KEPT + 5 {
        c.record_restore(StateRestore {
            key: "stage".into(),
            from_version: format!("v{i}"),
            new_version: format!("w{i}"),
            restored_by: "dev".into(),
            at: crate::ts::now(),
        });
    }
    assert_eq!(c.state_restores.len(), STATE_RESTORES_KEPT);
    assert_eq!(c.state_restores[0].from_version, "v5");
    assert_eq!(
        c.state_restores.last().unwrap().from_version,
        format!("v{}", STATE_RESTORES_KEPT + 4)
    );
}

#[test]
fn operation_status_names_are_the_wire_names() {
    use OperationStatus::*;
    for s in [
        Queued,
        Dispatched,
        Running,
        AwaitingApproval,
        Succeeded,
        Failed,
        Cancelled,
    ] {
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
}
