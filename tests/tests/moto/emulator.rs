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

/// Terraform's destroy of a versioned bucket suspends versioning, then deletes every version and delete
/// marker (force_destroy). Stock moto answers 500 for ever on the delete marker (the deployment's state
/// bucket after a cluster's delete); the test bed's moto empties the bucket.
#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_bucket_with_delete_markers_can_be_emptied() {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    let env = TestEnv::new().await;
    let s3 = env.aws.s3.clone();
    let bucket = "emulator-versions";
    s3.create_bucket().bucket(bucket).send().await.expect("bucket");
    let versioning = |status| {
        s3.put_bucket_versioning()
            .bucket(bucket)
            .versioning_configuration(VersioningConfiguration::builder().status(status).build())
            .send()
    };
    versioning(BucketVersioningStatus::Enabled).await.expect("enable");
    for body in ["one", "two"] {
        s3.put_object()
            .bucket(bucket)
            .key("state")
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .expect("put");
    }
    s3.delete_object()
        .bucket(bucket)
        .key("state")
        .send()
        .await
        .expect("delete marker");
    versioning(BucketVersioningStatus::Suspended)
        .await
        .expect("suspend");

    let listed = s3
        .list_object_versions()
        .bucket(bucket)
        .send()
        .await
        .expect("list");
    let ids: Vec<String> = listed
        .delete_markers()
        .iter()
        .filter_map(|m| m.version_id())
        .chain(listed.versions().iter().filter_map(|v| v.version_id()))
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 3, "two versions and a delete marker");
    for id in &ids {
        // Deleting one version of a suspended bucket drops the key's other versions in moto; a second
        // delete of those is then a no-op in S3's terms (204), never a 500.
        s3.delete_object()
            .bucket(bucket)
            .key("state")
            .version_id(id)
            .send()
            .await
            .unwrap_or_else(|e| panic!("deleting version {id}: {e:?}"));
    }
    let left = s3
        .list_object_versions()
        .bucket(bucket)
        .send()
        .await
        .expect("list");
    assert!(left.versions().is_empty() && left.delete_markers().is_empty());
    s3.delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("the emptied bucket is deleted");
}
