//! Issue 19 (runner overhead): progress events go out in order from a background sender, so a step never
//! waits for an SQS round trip, and a flush (done before the final event) waits until every earlier event
//! was sent.

use std::time::{Duration, Instant};

use secrecy::SecretString;
use strato_aws::queues::QueueUrls;
use strato_domain::ids::OperationId;
use strato_domain::messages::RunnerEvent;
use strato_runner::SqsReporter;
use strato_runner::progress::Progress;
use strato_testbed::TestEnv;

fn step_started(op: &OperationId, i: usize) -> RunnerEvent {
    RunnerEvent::StepStarted {
        operation_id: op.clone(),
        fencing_token: 1,
        step: format!("step-{i}"),
        at: strato_domain::ts::now(),
    }
}

fn reporter(env: &TestEnv, sqs: aws_sdk_sqs::Client, events_url: String) -> SqsReporter {
    SqsReporter {
        sqs,
        events_url,
        s3: env.aws.s3.clone(),
        artifacts_bucket: env.names.bucket("artifacts"),
        proof: SecretString::from("proof".to_owned()),
        traceparent: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_step_never_waits_for_sqs_and_a_flush_keeps_the_order() {
    let env = TestEnv::new().await;
    let op = OperationId::generate();

    // An SQS endpoint that accepts connections and never answers: queuing events must not wait for it.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let hanging = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&env.aws.config)
            .endpoint_url(format!("http://{addr}"))
            .build(),
    );
    let stuck = Progress::start(reporter(&env, hanging, format!("http://{addr}/q")));
    let t = Instant::now();
    for i in 0..50 {
        stuck.send(step_started(&op, i));
    }
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "queuing 50 events took {:?}: a step waited for SQS",
        t.elapsed()
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stuck.flush())
            .await
            .is_err(),
        "a flush must wait for the events before it"
    );

    // Against the real queue: after a flush every event is there, in the order queued.
    let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
    let progress = Progress::start(reporter(&env, env.aws.sqs.clone(), queues.events.clone()));
    for i in 0..25 {
        progress.send(step_started(&op, i));
    }
    progress.flush().await;
    let mut steps = Vec::new();
    for body in env.drain(&queues.events).await {
        match serde_json::from_str::<RunnerEvent>(&body).unwrap() {
            RunnerEvent::StepStarted { step, .. } => steps.push(step),
            other => panic!("unexpected {other:?}"),
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("step-{i}")).collect();
    assert_eq!(
        steps, want,
        "every event sent before the flush returned, in order"
    );
}
