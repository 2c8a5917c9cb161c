//! The runner installs the cluster agent (`[agent] install = "runner"`, fixture template `agent`): after
//! the stage that outputs the endpoint, every document of agent/deploy/agent.yaml by server-side apply with
//! an EKS token signed for the cluster; back-off while the API does not answer yet; failures in
//! what/step/fix form. Then the same against an API server on the wire protocol (kubefake) behind TLS
//! with a test CA: the token accepted, a second run changing nothing, another CA and a dead endpoint
//! refused.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{CloudProvider, OperationKind};

use super::support::{Bed, ENGINE_ROLE, applies, cleans_up, outputs, plan, vpc_plan};
use crate::fakes::{FakeCloud, FakeKube};
use crate::kube::manifests::{AGENT_YAML, AgentValues, render};
use crate::kube::{HttpKube, KubeApi, KubeCluster, KubeError};
use crate::lifecycle::agent_install::{Install, STEP, TokenSource, cluster_of, target_cluster, token_source};

const ENDPOINT: &str = "https://0123ABCD.gr7.us-east-1.eks.amazonaws.com";
const EKS_NAME: &str = "demo-eks-1a2b";
const API_URL: &str = "https://api.strato.example";

fn tls_fixture(file: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kube-tls")
            .join(file),
    )
    .unwrap()
}

fn ca_b64() -> String {
    base64::engine::general_purpose::STANDARD.encode(tls_fixture("ca.pem"))
}

/// A create of the `agent` fixture whose cluster stage outputs `endpoint`.
async fn create(endpoint: &str) -> Bed {
    let mut bed = Bed::new(OperationKind::Create, "agent").await;
    bed.cfg.control_plane_url = Some(API_URL.into());
    script_stages(&bed, endpoint);
    bed
}

fn script_stages(bed: &Bed, endpoint: &str) {
    let network = outputs(&[
        ("vpc_id", "vpc-1".into(), false),
        ("subnet_ids", json!(["subnet-1"]), false),
        ("security_group_id", "sg-1".into(), false),
    ]);
    applies(&bed.engine, "network", &vpc_plan(), &network);
    let cluster = outputs(&[
        ("cluster_endpoint", endpoint.into(), false),
        ("cluster_ca", ca_b64().into(), false),
        ("eks_cluster_name", EKS_NAME.into(), false),
    ]);
    let eks = plan(&[("aws_eks_cluster.this", "aws_eks_cluster", "create")]);
    applies(&bed.engine, "cluster", &eks, &cluster);
}

/// The keys of the run's provider session (the engine role's), which the EKS token is signed with.
fn provider_keys(bed: &Bed) -> crate::credentials::EngineCredentials {
    let n = bed
        .cloud
        .sessions()
        .iter()
        .position(|s| s.role_arn == ENGINE_ROLE)
        .expect("the engine role was assumed");
    FakeCloud::credentials(n + 1)
}

fn verify_eks(
    token: &str,
    keys: &crate::credentials::EngineCredentials,
    cluster: &str,
) -> Result<(), String> {
    use secrecy::ExposeSecret;
    let signing = strato_aws::eks_token::SigningKeys {
        access_key_id: &keys.access_key_id,
        secret_access_key: keys.secret_access_key.expose_secret(),
        session_token: keys.session_token.as_ref().map(|t| t.expose_secret()),
    };
    strato_aws::eks_token::verify(token, cluster, "us-east-1", &signing).map(|_| ())
}

fn registration_token(bed: &Bed) -> String {
    strato_domain::agent::registration_token(b"agent-token-secret", &bed.cluster.cluster_id)
}

/// An emulator's API (`STRATO_KUBE_ENDPOINT`/`_CA_PEM`) replaces the outputs' endpoint and CA; the token
/// is still an EKS token for the cluster the outputs name.
#[tokio::test]
async fn an_emulators_kube_api_stands_in_for_the_outputs_endpoint_and_ca() {
    let mut bed = create(ENDPOINT).await;
    let emulator = KubeCluster {
        endpoint: "https://127.0.0.1:6443".into(),
        ca_pem: tls_fixture("other-ca.pem"),
    };
    bed.cfg.kube_override = Some(emulator.clone());
    bed.run_to_success().await;
    let calls = bed.kube.calls();
    assert!(!calls.is_empty(), "the agent was installed");
    for call in &calls {
        assert_eq!(call.cluster, emulator);
        verify_eks(&call.token, &provider_keys(&bed), EKS_NAME).unwrap();
    }
}

#[tokio::test]
async fn a_create_applies_every_agent_document_after_the_endpoints_stage_with_an_eks_token() {
    let bed = create(ENDPOINT).await;
    bed.run_to_success().await;
    bed.engine.assert_done();

    // After the cluster stage's outputs, before the run's end.
    let steps = bed.steps();
    let install = steps
        .iter()
        .position(|s| s == STEP)
        .unwrap_or_else(|| panic!("the install step ran: {steps:?} {:#?}", bed.log()));
    let cluster_output = steps.iter().position(|s| s == "cluster/output").unwrap();
    assert!(install > cluster_output, "{steps:?}");
    assert_eq!(bed.finished(STEP), [true]);

    let values = AgentValues {
        image: &bed.cfg.agent_image,
        api_url: API_URL,
        cluster_id: bed.cluster.cluster_id.as_str(),
        registration_token: &registration_token(&bed),
    };
    let expected = render(AGENT_YAML, &values).unwrap();
    let calls = bed.kube.calls();
    assert_eq!(
        calls.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
        expected.iter().map(|o| o.path.as_str()).collect::<Vec<_>>(),
        "every document, in order, once"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.path.ends_with("?fieldManager=strato-runner&force=true"))
    );
    for (call, object) in calls.iter().zip(&expected) {
        assert_eq!(call.body, object.body);
        assert_eq!(call.cluster.endpoint, ENDPOINT);
        assert_eq!(call.cluster.ca_pem, tls_fixture("ca.pem"));
        // A token signed for this cluster with the run's provider session (the cluster's creator).
        verify_eks(&call.token, &provider_keys(&bed), EKS_NAME).unwrap();
        assert!(verify_eks(&call.token, &provider_keys(&bed), "another-cluster").is_err());
    }
    let deployment = &calls[9].body["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        deployment["image"],
        format!("ghcr.io/strato-dev/strato-agent:{}", env!("CARGO_PKG_VERSION"))
    );

    // Each object is logged by kind and name; neither the tokens nor the Secret's data are.
    for object in &expected {
        assert!(
            bed.logged(&format!("created {}", object.describe())),
            "{}: {:#?}",
            object.describe(),
            bed.log()
        );
    }
    let log = bed.log().join("\n");
    assert!(!log.contains(&registration_token(&bed)), "{log}");
    assert!(calls.iter().all(|c| !log.contains(&c.token)), "{log}");
}

#[tokio::test]
async fn the_install_keeps_trying_an_api_that_does_not_answer_yet() {
    let bed = create(ENDPOINT).await;
    bed.kube
        .fail(KubeError::Unreachable("connection refused".into()), 3)
        .fail(
            KubeError::Status {
                code: 503,
                reason: "ServiceUnavailable".into(),
                message: "starting".into(),
            },
            1,
        );
    bed.run_to_success().await;
    let calls = bed.kube.calls();
    assert_eq!(
        calls.len(),
        10 + 4,
        "the namespace four more times, then the rest"
    );
    assert!(calls[..5].iter().all(|c| c.path == calls[0].path));
    assert!(
        bed.logged("the cluster's API did not take Namespace strato-system (no answer: connection refused)")
    );
    // A fresh token each time (EKS accepts one for 15 minutes).
    assert_eq!(bed.finished(STEP), [true]);
}

#[tokio::test]
async fn an_api_that_never_answers_fails_the_create_at_the_install_with_the_fix() {
    let mut bed = create(ENDPOINT).await;
    bed.cfg.agent_install_wait = Duration::from_millis(30);
    bed.kube
        .fail(KubeError::Unreachable("connection timed out".into()), 10_000);
    cleans_up(&bed.engine, "cluster", &["aws_eks_cluster.this"]);
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    assert_eq!(error.step, STEP);
    assert_eq!(error.category, ErrorCategory::Transient, "{error:?}");
    assert!(
        error.what.starts_with(&format!(
            "the cluster's API at {ENDPOINT} did not take Namespace strato-system within"
        )),
        "{}",
        error.what
    );
    assert!(error.what.contains("connection timed out"), "{}", error.what);
    let fix = &error.fix;
    assert!(
        fix.contains("reaches the cluster's API") && fix.contains("retry"),
        "{fix}"
    );
    assert_eq!(bed.finished(STEP), [false]);
    let tries = bed.kube.calls().len();
    assert!(
        (2..10_000).contains(&tries),
        "bounded tries with back-off: {tries}"
    );
}

#[tokio::test]
async fn a_refused_token_fails_at_once_as_a_credentials_problem() {
    let bed = create(ENDPOINT).await;
    bed.kube.fail(
        KubeError::Status {
            code: 401,
            reason: "Unauthorized".into(),
            message: "Unauthorized".into(),
        },
        1,
    );
    cleans_up(&bed.engine, "cluster", &["aws_eks_cluster.this"]);
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        (STEP, ErrorCategory::Credentials)
    );
    assert!(
        error
            .what
            .contains("refused the runner's token applying Namespace strato-system"),
        "{}",
        error.what
    );
    assert!(error.fix.contains("cluster administrator"), "{}", error.fix);
    assert_eq!(bed.kube.calls().len(), 1, "a refusal is not retried");
}

#[tokio::test]
async fn outputs_that_cannot_reach_the_cluster_fail_as_a_template_problem_before_any_request() {
    let bed = create("http://10.0.0.1").await;
    cleans_up(&bed.engine, "cluster", &["aws_eks_cluster.this"]);
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        (STEP, ErrorCategory::InvalidConfiguration)
    );
    assert!(
        error
            .what
            .contains("'cluster_endpoint' (agent.endpoint_output) is not an https:// URL"),
        "{}",
        error.what
    );
    assert!(bed.kube.calls().is_empty());
}

fn install(provider: CloudProvider, keys: bool) -> Install {
    let t = strato_domain::template::Template::from_toml(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/templates/agent/template.toml"),
        )
        .unwrap(),
    )
    .unwrap();
    Install {
        spec: t.manifest.agent.unwrap(),
        provider,
        region: "us-east-1".into(),
        keys: keys.then(|| FakeCloud::credentials(1)),
    }
}

#[test]
fn the_token_comes_from_the_output_where_there_is_one_else_eks_signs_one() {
    let outs = |pairs: &[(&str, Value)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    let with_token = outs(&[
        ("eks_cluster_name", EKS_NAME.into()),
        ("cluster_token", "dop_v1_abc".into()),
    ]);
    let without = outs(&[
        ("eks_cluster_name", EKS_NAME.into()),
        ("cluster_token", Value::Null),
    ]);
    assert_eq!(
        token_source(&install(CloudProvider::Digitalocean, false), &with_token).unwrap(),
        TokenSource::Output("dop_v1_abc".into())
    );
    assert_eq!(
        token_source(&install(CloudProvider::Aws, true), &with_token).unwrap(),
        TokenSource::Output("dop_v1_abc".into())
    );
    assert_eq!(
        token_source(&install(CloudProvider::Aws, true), &without).unwrap(),
        TokenSource::Eks(EKS_NAME.into())
    );
    let e = token_source(&install(CloudProvider::Digitalocean, false), &without).unwrap_err();
    assert!(
        e.what
            .contains("output 'cluster_token' (agent.token_output) is missing"),
        "{}",
        e.what
    );
    // A target role the engine assumes itself leaves the runner no session to sign with.
    let e = token_source(&install(CloudProvider::Aws, false), &without).unwrap_err();
    assert_eq!(e.category, ErrorCategory::InvalidConfiguration);
    assert!(e.fix.contains("agent.token_output"), "{}", e.fix);

    let spec = install(CloudProvider::Aws, true).spec;
    let ca = |v: Value| outs(&[("cluster_endpoint", ENDPOINT.into()), ("cluster_ca", v)]);
    let cluster = cluster_of(&spec, &ca(ca_b64().into())).unwrap();
    assert_eq!(cluster.ca_pem, tls_fixture("ca.pem"));
    let e = cluster_of(&spec, &ca("bm90IGEgY2VydA==".into())).unwrap_err();
    assert!(e.what.contains("not base64 of a PEM certificate"), "{}", e.what);
    let e = cluster_of(&spec, &outs(&[("cluster_endpoint", ENDPOINT.into())])).unwrap_err();
    assert!(
        e.what
            .contains("output 'cluster_ca' (agent.ca_output) is missing"),
        "{}",
        e.what
    );

    // With an emulator's API standing in, the CA output must be there but need not be a PEM (moto's EKS
    // makes its CA data up); a missing output or a non-https endpoint still fails.
    let emulator = KubeCluster {
        endpoint: "https://127.0.0.1:6443".into(),
        ca_pem: tls_fixture("other-ca.pem"),
    };
    let made_up = ca("bm90IGEgY2VydA==".into());
    assert_eq!(
        target_cluster(&spec, &made_up, Some(&emulator)).unwrap(),
        emulator
    );
    assert!(target_cluster(&spec, &made_up, None).is_err());
    let e = target_cluster(
        &spec,
        &outs(&[("cluster_endpoint", ENDPOINT.into())]),
        Some(&emulator),
    )
    .unwrap_err();
    assert!(e.what.contains("(agent.ca_output) is missing"), "{}", e.what);
    let plain = outs(&[
        ("cluster_endpoint", "http://x.example".into()),
        ("cluster_ca", ca_b64().into()),
    ]);
    let e = target_cluster(&spec, &plain, Some(&emulator)).unwrap_err();
    assert!(e.what.contains("not an https:// URL"), "{}", e.what);
}

/// TLS with the test CA's server certificate (127.0.0.1) in front of `backend` (`http://…`): the cluster's
/// API as the runner sees it. Serves until the runtime ends.
async fn tls_front(backend: &str) -> String {
    let (url, _front) =
        strato_kubefake::tls_front(backend, &tls_fixture("server.pem"), &tls_fixture("server.key"))
            .await
            .unwrap();
    url
}

#[tokio::test]
async fn against_a_kubernetes_api_the_agent_is_installed_once_and_a_second_run_changes_nothing() {
    // The API accepts an EKS token only if it verifies for this cluster with one of the fake's sessions.
    let kube = strato_kubefake::KubeFake::builder()
        .validator(|token| {
            (1..=8).find_map(|n| {
                verify_eks(token, &FakeCloud::credentials(n), EKS_NAME)
                    .ok()
                    .map(|()| format!("session-{n}"))
            })
        })
        .start()
        .await
        .unwrap();
    // Every cluster has kube-system (the agent's read Role lives there).
    kube.put_namespace("kube-system");
    let endpoint = tls_front(kube.url()).await;
    let http = HttpKube {
        timeout: Duration::from_secs(5),
    };
    let mut bed = create(&endpoint).await;
    bed.kube = FakeKube::forwarding_to(http.clone());

    let first = bed.run().await.unwrap();
    assert!(
        matches!(first.final_event, RunnerEvent::Succeeded { .. }),
        "{:#?}",
        bed.log()
    );
    let values = AgentValues {
        image: &bed.cfg.agent_image,
        api_url: API_URL,
        cluster_id: bed.cluster.cluster_id.as_str(),
        registration_token: &registration_token(&bed),
    };
    let objects = render(AGENT_YAML, &values).unwrap();
    let version_of = |o: &crate::kube::manifests::Object| {
        let api_version = o.body["apiVersion"].as_str().unwrap();
        let stored = kube
            .get(api_version, &o.kind, o.namespace.as_deref(), &o.name)
            .unwrap_or_else(|| panic!("{} was applied", o.describe()));
        let managers = kube.managers(api_version, &o.kind, o.namespace.as_deref(), &o.name);
        assert!(
            managers.contains_key("strato-runner"),
            "{}: {managers:?}",
            o.describe()
        );
        stored["metadata"]["resourceVersion"].as_str().unwrap().to_owned()
    };
    let versions: Vec<String> = objects.iter().map(version_of).collect();
    let secret = kube
        .get("v1", "Secret", Some("strato-system"), "strato-agent")
        .unwrap();
    let stored_token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["registration-token"].as_str().unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(stored_token).unwrap(), registration_token(&bed));

    // The same create run again (a retry): every apply is a no-op.
    script_stages(&bed, &endpoint);
    let second = bed.run().await.unwrap();
    assert!(
        matches!(second.final_event, RunnerEvent::Succeeded { .. }),
        "{:#?}",
        bed.log()
    );
    assert_eq!(objects.iter().map(version_of).collect::<Vec<_>>(), versions);

    // Each run signs with its own provider session: the engine role's, assumed afresh.
    let engine_sessions: Vec<String> = bed
        .cloud
        .sessions()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.role_arn == ENGINE_ROLE)
        .map(|(i, _)| format!("session-{}", i + 1))
        .collect();
    assert_eq!(engine_sessions.len(), 2, "{engine_sessions:?}");
    let patches: Vec<_> = kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    assert_eq!(patches.len(), 2 * objects.len());
    for (i, r) in patches.iter().enumerate() {
        let run = i / objects.len();
        assert_eq!(r.identity.as_ref(), Some(&engine_sessions[run]), "{r:?}");
        assert_eq!(r.status, if run == 0 { 201 } else { 200 }, "{r:?}");
        assert!(
            r.query.contains("fieldManager=strato-runner") && r.query.contains("force=true"),
            "{r:?}"
        );
    }

    // A token for another cluster is refused; so is the API under a CA other than the cluster's, and a
    // dead endpoint is "no answer", worth waiting for.
    let cluster = KubeCluster {
        endpoint: endpoint.clone(),
        ca_pem: tls_fixture("ca.pem"),
    };
    let keys = provider_keys(&bed);
    use secrecy::ExposeSecret;
    let signing = strato_aws::eks_token::SigningKeys {
        access_key_id: &keys.access_key_id,
        secret_access_key: keys.secret_access_key.expose_secret(),
        session_token: keys.session_token.as_ref().map(|t| t.expose_secret()),
    };
    let other = strato_aws::eks_token::mint(
        &signing,
        "us-east-1",
        "another-cluster",
        std::time::SystemTime::now(),
    )
    .unwrap();
    let refused = http
        .apply(&cluster, &other, &objects[0].path, &objects[0].body)
        .await;
    assert!(
        matches!(refused, Err(KubeError::Status { code: 401, .. })),
        "{refused:?}"
    );
    let other_ca = KubeCluster {
        ca_pem: tls_fixture("other-ca.pem"),
        ..cluster.clone()
    };
    let e = http
        .apply(&other_ca, "t", &objects[0].path, &objects[0].body)
        .await
        .unwrap_err();
    assert!(matches!(e, KubeError::Tls(_)) && !e.is_transient(), "{e:?}");
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let dead = KubeCluster {
        endpoint: format!("https://{dead}"),
        ..cluster
    };
    let e = http
        .apply(&dead, "t", &objects[0].path, &objects[0].body)
        .await
        .unwrap_err();
    assert!(
        matches!(e, KubeError::Unreachable(_)) && e.is_transient(),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_cluster_api_that_never_answers_fails_the_install_with_the_fix_over_the_wire() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let endpoint = format!("https://{dead}");
    let mut bed = create(&endpoint).await;
    bed.kube = FakeKube::forwarding_to(HttpKube {
        timeout: Duration::from_secs(2),
    });
    bed.cfg.agent_install_wait = Duration::from_millis(50);
    cleans_up(&bed.engine, "cluster", &["aws_eks_cluster.this"]);
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        (STEP, ErrorCategory::Transient)
    );
    assert!(
        error.what.starts_with(&format!(
            "the cluster's API at {endpoint} did not take Namespace strato-system"
        )),
        "{}",
        error.what
    );
    assert!(error.fix.contains("reaches the cluster's API"), "{}", error.fix);
    assert!(bed.kube.calls().len() >= 2, "tried again before giving up");
}
