//! Where Strato relies on an AWS guarantee that stock moto breaks, the test bed's moto (its launcher patches
//! moto) must keep the guarantee, or the tests above it would chase emulator bugs.

use std::time::Duration;

use aws_sdk_sqs::types::Message;
use strato_aws::queues::QueueUrls;
use strato_testbed::TestEnv;

async fn long_poll(sqs: aws_sdk_sqs::Client, url: String) -> Vec<Message> {
    sqs.receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(3)
        .send()
        .await
        .expect("receive")
        .messages
        .unwrap_or_default()
}

async fn send(sqs: &aws_sdk_sqs::Client, url: &str, group: &str, body: &str) {
    sqs.send_message()
        .queue_url(url)
        .message_group_id(group)
        .message_deduplication_id(body)
        .message_body(body)
        .send()
        .await
        .expect("send");
}

/// The dispatcher's one-runner-per-operation rests on this: all jobs of a cluster share a message group, and
/// SQS never hands out a group's next message while one is in flight. Stock moto's long poll decides which
/// groups are blocked when it starts, so a poll already waiting got the second message of a group while the
/// first was being processed (two runners for one operation under load).
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_group_is_never_in_flight_twice_even_for_a_poll_that_started_earlier() {
    let env = TestEnv::new().await;
    let sqs = env.aws.sqs.clone();
    let url = QueueUrls::resolve(&sqs, &env.names).await.expect("queues").jobs;

    // Two consumers waiting on the empty queue, as the dispatcher's pollers do.
    let a = tokio::spawn(long_poll(sqs.clone(), url.clone()));
    let b = tokio::spawn(long_poll(sqs.clone(), url.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    send(&sqs, &url, "cluster-1", "first").await;
    // One consumer now holds "first" in flight; the other is still waiting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    send(&sqs, &url, "cluster-1", "second").await;
    send(&sqs, &url, "cluster-2", "other group").await;

    let delivered: Vec<Message> = [a.await.unwrap(), b.await.unwrap()].concat();
    let mut got: Vec<&str> = delivered.iter().filter_map(|m| m.body()).collect();
    got.sort();
    // The waiting poll still serves other groups; only the busy group's next message waits.
    assert_eq!(got, ["first", "other group"], "delivered while in flight");

    // Once the group's message in flight is done, its next one is delivered.
    for m in &delivered {
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(m.receipt_handle().unwrap())
            .send()
            .await
            .expect("delete");
    }
    let next = long_poll(sqs.clone(), url.clone()).await;
    let bodies: Vec<&str> = next.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, ["second"]);
}
