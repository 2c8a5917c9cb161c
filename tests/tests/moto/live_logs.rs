//! Live logs end to end: the ws and log-fanout functions behind devstack's API Gateway WebSocket emulation
//! (real WebSocket clients, the real management API SDK client), moto for DynamoDB/SQS/S3.

use crate::live_logs_support;

use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use aws_lambda_events::sqs::SqsEvent;
use live_logs_support::{Bed, Client, SECRET, assert_complete, token};
use serde_json::Value;
use strato_connections::{Connection, conn_pk, op_pk};
use strato_domain::messages::LogLine;
use strato_domain::model::OperationStatus;
use strato_stream::logs::{ControlFrame, MAX_FRAME_BYTES, ServerFrame};

const WAIT: Duration = Duration::from_secs(90);

fn sample(path: &str) -> Value {
    let p = format!("{}/../events/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))).unwrap()
}

fn ws_event(path: &str, connection_id: Option<&str>) -> ApiGatewayWebsocketProxyRequest {
    let mut v = sample(path);
    // The sample's ticket is signed with the sample secret, but tickets live 5 minutes: a fresh one, alike.
    if path == "ws/connect.json" {
        v["queryStringParameters"]["token"] = Value::String(token("acme", SECRET, 240));
    }
    if let Some(id) = connection_id {
        v["requestContext"]["connectionId"] = Value::String(id.into());
    }
    serde_json::from_value(v).unwrap()
}

fn is_error(f: &ServerFrame) -> bool {
    matches!(f, ServerFrame::Control(ControlFrame::Error { .. }))
}

fn error_message(f: &ServerFrame) -> String {
    match f {
        ServerFrame::Control(ControlFrame::Error { message, fix, .. }) => format!("{message} / {fix}"),
        other => panic!("expected an error frame, got {other:?}"),
    }
}

/// The only connection id the emulator knows (tests connect one client at a time here).
async fn only_connection(bed: &Bed) -> String {
    let ids = bed.api.connection_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn sample_events_drive_both_handlers() {
    let bed = Bed::with_pump(false).await;
    let sample_op = "op-0192f1a2b3c47d8e9f0a1b2c3d4e5f60";

    // $connect: the sample token (signed with the sample secret, tenant acme) is accepted and recorded.
    let r = strato_ws::handle(&bed.ws, ws_event("ws/connect.json", None)).await;
    assert_eq!(r.status_code, 200);
    let c = bed
        .ws
        .connections
        .get_connection("L0SM9cOFvHcCIhw=")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.tenant_id.as_str(), "acme");
    assert_eq!(c.expires_at - c.connected_at.unix_timestamp(), 7200);
    for bad in ["ws/connect-bad-token.json", "ws/connect-no-token.json"] {
        let r = strato_ws::handle(&bed.ws, ws_event(bad, Some("refused-1"))).await;
        assert_eq!(r.status_code, 401, "{bad}");
        assert!(
            bed.ws
                .connections
                .get_connection("refused-1")
                .await
                .unwrap()
                .is_none()
        );
    }
    let r = strato_ws::handle(&bed.ws, ws_event("ws/disconnect.json", None)).await;
    assert_eq!(r.status_code, 200);
    assert_eq!(bed.items_under(&conn_pk("L0SM9cOFvHcCIhw=")).await, 0);

    // Message routes, answered over a real connection.
    let op = bed.operation("acme", Some(sample_op)).await;
    let mut client = bed.client("acme").await;
    let id = only_connection(&bed).await;
    let send = |path: &'static str| strato_ws::handle(&bed.ws, ws_event(path, Some(&id)));
    assert_eq!(send("ws/ping.json").await.status_code, 200);
    let f = client.next(WAIT).await.unwrap();
    assert!(matches!(f, ServerFrame::Control(ControlFrame::Pong)), "{f:?}");
    send("ws/unknown-action.json").await;
    let e = error_message(&client.next(WAIT).await.unwrap());
    assert!(
        e.contains("unknown action 'teleport'") && e.contains("subscribe, unsubscribe, ping"),
        "{e}"
    );
    send("ws/subscribe-bad-operation-id.json").await;
    let e = error_message(&client.next(WAIT).await.unwrap());
    assert!(e.starts_with("operation_id:"), "{e}");
    send("ws/subscribe.json").await;
    let f = client.next(WAIT).await.unwrap();
    assert!(
        matches!(
            &f,
            ServerFrame::Control(ControlFrame::Subscribed { replayed_to: 0, .. })
        ),
        "{f:?}"
    );
    assert_eq!(bed.items_under(&op_pk(&op)).await, 1);

    // log-fanout samples: a batch, then status + end, reach the subscriber; a non-frame fails its record.
    let fanout = |path: &'static str| {
        let event: SqsEvent = serde_json::from_value(sample(path)).unwrap();
        strato_log_fanout::handle_with_report(&bed.fanout, event)
    };
    let (resp, report) = fanout("log-fanout/log-batch.json").await;
    assert!(resp.batch_item_failures.is_empty());
    assert_eq!((report.subscribers, report.posts), (1, 1));
    let (resp, _) = fanout("log-fanout/status-and-end.json").await;
    assert!(resp.batch_item_failures.is_empty());
    let lines = client.collect(&op, 1, WAIT).await;
    assert_eq!(lines.len(), 3);
    assert!(lines[2].text.starts_with("Apply complete!"));
    assert_eq!(client.end, Some((OperationStatus::Succeeded, 3)));
    assert_eq!(client.statuses, 1);
    let (resp, _) = fanout("log-fanout/not-a-frame.json").await;
    assert_eq!(resp.batch_item_failures.len(), 1);

    send("ws/unsubscribe.json").await;
    let f = client
        .until(WAIT, |f| {
            matches!(f, ServerFrame::Control(ControlFrame::Unsubscribed { .. }))
        })
        .await;
    assert!(matches!(f, ServerFrame::Control(_)));
    assert_eq!(bed.items_under(&op_pk(&op)).await, 0);
    assert_eq!(
        bed.items_under(&conn_pk(&id)).await,
        1,
        "only the connection item is left"
    );
    client.close().await;
    bed.eventually("$disconnect to remove the connection", || async {
        bed.items_under(&conn_pk(&id)).await == 0
    })
    .await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribing_before_during_and_after_yields_the_complete_ordered_log() {
    let bed = Bed::new().await;
    let op = bed.operation("acme", None).await;
    let mut runner = bed.runner(&op);

    let mut before = bed.client("acme").await;
    before.subscribe(&op, 1).await;
    before
        .until(WAIT, |f| {
            matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
        })
        .await;

    runner.emit(100, 25).await;
    runner.archive().await;
    runner.emit(60, 20).await; // published, not yet archived
    let mut during = bed.client("acme").await;
    during.subscribe(&op, 1).await;
    runner.emit(90, 30).await;
    runner.complete().await;
    bed.finish_operation(&op, OperationStatus::Succeeded).await;
    runner.publish_end(OperationStatus::Succeeded).await;

    let a = before.collect(&op, 1, WAIT).await;
    let b = during.collect(&op, 1, WAIT).await;
    let mut after = bed.client("acme").await;
    after.subscribe(&op, 1).await;
    let c = after.collect(&op, 1, WAIT).await;
    for (name, client, lines) in [
        ("before", &before, &a),
        ("during", &during, &b),
        ("after", &after, &c),
    ] {
        assert_complete(lines, 1, 250);
        assert_eq!(client.end, Some((OperationStatus::Succeeded, 250)), "{name}");
        assert!(client.largest_frame <= MAX_FRAME_BYTES, "{name}");
    }
    // Subscribed before anything happened: the live stream alone delivered everything, in order.
    assert_eq!(before.arrival, (1..=250).collect::<Vec<_>>());
    assert_eq!(before.duplicates, 0);
    // After the end: a pure replay, exactly once each.
    assert_eq!(after.duplicates, 0);
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reconnecting_with_from_seq_gets_exactly_what_was_missed() {
    let bed = Bed::new().await;
    let op = bed.operation("acme", None).await;
    let mut runner = bed.runner(&op);

    let mut first = bed.client("acme").await;
    first.subscribe(&op, 1).await;
    first
        .until(WAIT, |f| {
            matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
        })
        .await;
    runner.emit(120, 30).await;
    while first.first_missing(1, 120).is_some() {
        assert!(first.next(WAIT).await.is_some(), "the first session stalled");
    }
    let last_seen = *first.lines.keys().last().unwrap();
    let id = only_connection(&bed).await;
    let first_lines = std::mem::take(&mut first.lines);
    first.close().await;
    bed.eventually("$disconnect", || async {
        bed.items_under(&conn_pk(&id)).await == 0
    })
    .await;

    // While disconnected: 80 more lines, archived; then the client comes back.
    runner.emit(80, 20).await;
    runner.archive().await;
    let mut second = bed.client("acme").await;
    second.subscribe(&op, last_seen + 1).await;
    runner.emit(50, 25).await;
    runner.complete().await;
    bed.finish_operation(&op, OperationStatus::Succeeded).await;
    runner.publish_end(OperationStatus::Succeeded).await;
    let rest = second.collect(&op, last_seen + 1, WAIT).await;

    assert_complete(&rest, last_seen + 1, 250);
    assert!(
        second.lines.keys().all(|s| *s > last_seen),
        "nothing before from_seq is sent again"
    );
    let mut all: Vec<LogLine> = first_lines.into_values().collect();
    all.extend(rest);
    assert_complete(&all, 1, 250);
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_tenants_operation_is_refused() {
    let bed = Bed::new().await;
    let theirs = bed.operation("globex", None).await;
    let mut runner = bed.runner(&theirs);
    runner.emit(10, 10).await;
    runner.complete().await;
    bed.finish_operation(&theirs, OperationStatus::Succeeded).await;

    let mut client = bed.client("acme").await;
    client.subscribe(&theirs, 1).await;
    let refused = error_message(&client.until(WAIT, is_error).await);
    assert!(refused.contains("was not found"), "{refused}");
    // The same answer as for an operation that does not exist: other tenants' ids cannot be probed.
    let unknown = strato_domain::ids::OperationId::generate();
    client.subscribe(&unknown, 1).await;
    let e = error_message(&client.until(WAIT, is_error).await);
    assert_eq!(
        e.replace(unknown.as_str(), "X"),
        refused.replace(theirs.as_str(), "X")
    );
    assert_eq!(
        bed.items_under(&op_pk(&theirs)).await,
        0,
        "no subscription recorded"
    );
    assert!(client.lines.is_empty(), "no archived line leaked");
    // The owner may watch it.
    let mut owner = bed.client("globex").await;
    owner.subscribe(&theirs, 1).await;
    let lines = owner.collect(&theirs, 1, WAIT).await;
    assert_complete(&lines, 1, 10);
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gone_connection_is_removed_and_others_still_get_the_log() {
    let bed = Bed::new().await;
    let op = bed.operation("acme", None).await;
    // A connection whose $disconnect never ran: API Gateway answers Gone for it.
    let now = strato_domain::ts::now();
    let ghost = Connection {
        pk: conn_pk("ghost-connection="),
        sk: "conn".into(),
        connection_id: "ghost-connection=".into(),
        tenant_id: "acme".parse().unwrap(),
        subject: None,
        connected_at: now,
        expires_at: now.unix_timestamp() + 3600,
    };
    bed.ws.connections.put_connection(&ghost).await.unwrap();
    bed.ws.connections.subscribe(&ghost, &op).await.unwrap();
    assert_eq!(bed.items_under(&op_pk(&op)).await, 1);

    let mut live = bed.client("acme").await;
    live.subscribe(&op, 1).await;
    live.until(WAIT, |f| {
        matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
    })
    .await;
    let mut runner = bed.runner(&op);
    runner.emit(40, 10).await;
    runner.complete().await;
    bed.finish_operation(&op, OperationStatus::Failed).await;
    runner.publish_end(OperationStatus::Failed).await;
    let lines = live.collect(&op, 1, WAIT).await;
    assert_complete(&lines, 1, 40);
    assert_eq!(live.end, Some((OperationStatus::Failed, 40)));
    bed.eventually("the gone connection to be removed", || async {
        bed.items_under(&conn_pk("ghost-connection=")).await == 0
    })
    .await;
    assert_eq!(
        bed.items_under(&op_pk(&op)).await,
        1,
        "only the live subscriber is left"
    );
    assert!(bed.api.stats().gone.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_megabyte_line_arrives_intact_in_frames_of_at_most_32_kb() {
    let bed = Bed::new().await;
    let op = bed.operation("acme", None).await;
    let mut runner = bed.runner(&op);
    // Live: a 200 KB line fits an SQS message but not a frame.
    let mut live = bed.client("acme").await;
    live.subscribe(&op, 1).await;
    live.until(WAIT, |f| {
        matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
    })
    .await;
    runner.emit(3, 3).await;
    let big_live: String = format!("big:{}", "0123456789\"\\é\t".repeat(15_000));
    let l = runner.line(big_live.clone());
    runner.publish(vec![l]).await;
    // A 1 MB line exceeds SQS's message size: the runner archives it (its live batch would be skipped).
    let megabyte: String = format!("big:{}", "terraform-output-".repeat(62_000));
    assert!(megabyte.len() > 1_000_000);
    let l = runner.line(megabyte.clone());
    runner.archive_only(vec![l]);
    runner.emit(2, 2).await;
    runner.complete().await;
    bed.finish_operation(&op, OperationStatus::Succeeded).await;
    runner.publish_end(OperationStatus::Succeeded).await;

    let lines = live.collect(&op, 1, WAIT).await;
    assert_complete(&lines, 1, 7);
    assert_eq!(lines[3].text, big_live);
    assert_eq!(lines[4].text, megabyte, "repaired from the archive");
    assert!(live.largest_frame <= MAX_FRAME_BYTES);

    let mut replay = bed.client("acme").await;
    replay.subscribe(&op, 1).await;
    let lines = replay.collect(&op, 1, WAIT).await;
    assert_eq!(lines[4].text, megabyte);
    assert_eq!(lines[3].text, big_live);
    assert!(replay.part_frames >= 32, "{} parts", replay.part_frames);
    assert!(
        replay.largest_frame <= MAX_FRAME_BYTES,
        "{}",
        replay.largest_frame
    );
    assert!(replay.largest_frame > MAX_FRAME_BYTES - 2048, "frames are filled");
    assert_eq!(
        bed.api
            .stats()
            .too_large
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_token_is_refused_at_connect() {
    use tokio_tungstenite::tungstenite::Error as WsErr;
    let bed = Bed::with_pump(false).await;
    let url = bed.api.ws_url();
    let cases = [
        ("wrong secret", token("acme", "not-the-secret", 3600)),
        ("expired", token("acme", SECRET, -3600)),
        ("garbage", "not.a.jwt".to_owned()),
        ("bad tenant", token("ACME!!", SECRET, 3600)),
    ];
    for (what, t) in cases {
        match Client::connect(&url, &t).await {
            Err(WsErr::Http(resp)) => assert_eq!(resp.status().as_u16(), 401, "{what}"),
            Err(e) => panic!("{what}: unexpected error {e}"),
            Ok(_) => panic!("{what}: the connection was accepted"),
        }
    }
    match tokio_tungstenite::connect_async(url.clone()).await {
        Err(WsErr::Http(resp)) => assert_eq!(resp.status().as_u16(), 401),
        other => panic!("no token: {:?}", other.map(|_| ())),
    }
    assert!(bed.api.connection_ids().is_empty());
    // A good one is accepted.
    let ok = bed.client("acme").await;
    assert_eq!(bed.api.connection_ids().len(), 1);
    ok.close().await;
    bed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_management_api_speaks_api_gateway_wire_protocol() {
    use aws_sdk_apigatewaymanagement::operation::get_connection::GetConnectionError;
    use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionError;
    use aws_sdk_apigatewaymanagement::primitives::Blob;
    let bed = Bed::with_pump(false).await;
    let mgmt = &bed.ws.mgmt;
    let mut client = bed.client("acme").await;
    let id = only_connection(&bed).await;
    assert!(id.ends_with('='), "ids look like API Gateway's");

    let info = mgmt.get_connection().connection_id(&id).send().await.unwrap();
    assert!(info.connected_at().is_some());
    assert_eq!(info.identity().unwrap().source_ip(), Some("127.0.0.1"));
    mgmt.post_to_connection()
        .connection_id(&id)
        .data(Blob::new(r#"{"type":"pong"}"#))
        .send()
        .await
        .unwrap();
    assert!(matches!(
        client.next(WAIT).await,
        Some(ServerFrame::Control(ControlFrame::Pong))
    ));
    let too_big = mgmt
        .post_to_connection()
        .connection_id(&id)
        .data(Blob::new(vec![b'x'; MAX_FRAME_BYTES + 1]))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        too_big.as_service_error(),
        Some(PostToConnectionError::PayloadTooLargeException(_))
    ));
    mgmt.delete_connection().connection_id(&id).send().await.unwrap();
    assert!(client.next(WAIT).await.is_none(), "the client is closed");
    let gone = mgmt
        .post_to_connection()
        .connection_id(&id)
        .data(Blob::new("{}"))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(
        gone.as_service_error(),
        Some(PostToConnectionError::GoneException(_))
    ));
    let gone = mgmt.get_connection().connection_id(&id).send().await.unwrap_err();
    assert!(matches!(
        gone.as_service_error(),
        Some(GetConnectionError::GoneException(_))
    ));
    bed.eventually("$disconnect after DELETE", || async {
        bed.items_under(&conn_pk(&id)).await == 0
    })
    .await;
    bed.shutdown().await;
}

/// Connects a client and returns it with its connection id.
async fn connect_new(bed: &Bed, tenant: &str) -> (Client, String) {
    let before: std::collections::BTreeSet<String> = bed.api.connection_ids().into_iter().collect();
    let client = bed.client(tenant).await;
    let id = bed
        .api
        .connection_ids()
        .into_iter()
        .find(|i| !before.contains(i))
        .expect("a new connection id");
    (client, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn throttling_is_retried_and_a_slow_subscriber_delays_nobody() {
    use strato_devstack::apigw_ws::Fault;
    let bed = Bed::with_pump(false).await;
    let op = bed.operation("acme", None).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let (mut c, id) = connect_new(&bed, "acme").await;
        c.subscribe(&op, 1).await;
        c.until(WAIT, |f| {
            matches!(f, ServerFrame::Control(ControlFrame::Subscribed { .. }))
        })
        .await;
        clients.push((c, id));
    }
    let [(mut fast, _), (mut throttled, throttled_id), (_slow, slow_id)]: [(Client, String); 3] =
        clients.try_into().ok().unwrap();
    bed.api.inject_fault(&throttled_id, Fault::Throttle { times: 3 });
    bed.api
        .inject_fault(&slow_id, Fault::Delay(Duration::from_secs(60)));

    let mut runner = bed.runner(&op);
    runner.emit(20, 20).await;
    let msgs = bed
        .env
        .aws
        .sqs
        .receive_message()
        .queue_url(&bed.queues.logs)
        .wait_time_seconds(10)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(msgs.len(), 1);
    let mut ctx = (*bed.fanout).clone();
    ctx.config.post_timeout = Duration::from_secs(4);
    let started = std::time::Instant::now();
    let task = tokio::spawn(async move {
        strato_log_fanout::handle_with_report(&ctx, live_logs_support::sqs_event(&msgs)).await
    });
    while fast.first_missing(1, 20).is_some() {
        assert!(fast.next(WAIT).await.is_some());
    }
    assert!(
        !task.is_finished(),
        "the fast subscriber had its lines while the slow post was still pending ({:?})",
        started.elapsed()
    );
    let (resp, report) = task.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "bounded by the post timeout, not the slow client"
    );
    assert!(
        resp.batch_item_failures.is_empty(),
        "post failures do not redeliver the batch to everyone"
    );
    assert_eq!(
        (report.subscribers, report.failed_deliveries, report.gone),
        (3, 1, 0)
    );
    while throttled.first_missing(1, 20).is_some() {
        assert!(throttled.next(WAIT).await.is_some());
    }
    assert_eq!(
        bed.api
            .stats()
            .throttled
            .load(std::sync::atomic::Ordering::Relaxed),
        3,
        "throttled three times, then delivered"
    );
    assert_eq!(throttled.duplicates, 0);
    bed.shutdown().await;
}

/// Issue 19 (adaptive batching): when the fan-out gets many runner flushes of one operation at once (load:
/// they queued up), one post per subscriber carries several flushes, packed (`log_batch`) and under the
/// 32 KB frame limit; at a low rate a lone flush goes out as one post by the invocation that got it.
#[tokio::test(flavor = "multi_thread")]
async fn queued_flushes_go_out_in_few_full_frames_and_a_lone_flush_at_once() {
    let bed = Bed::with_pump(false).await;
    let (op, mut c) = bed.subscribed("acme").await;
    let mut runner = bed.runner(&op);
    let posts = || bed.api.stats().posts.load(std::sync::atomic::Ordering::Relaxed);

    // Low rate: one flush of three lines, one post, there without waiting for more.
    runner.emit(3, 3).await;
    let msgs = live_logs_support::receive_all(&bed, 1).await;
    let before = posts();
    strato_log_fanout::handle(&bed.fanout, live_logs_support::sqs_event(&msgs)).await;
    // Deleted as Lambda does: an undeleted message would hold its FIFO group back.
    live_logs_support::delete_all(&bed, &msgs).await;
    assert_eq!(posts() - before, 1);
    c.until(WAIT, |f| {
        matches!(f, ServerFrame::Control(ControlFrame::LogBatch { .. }))
    })
    .await;
    assert_eq!(c.arrival, vec![1, 2, 3]);

    // Load: ten flushes of 100 lines in one batch. As one `log` frame per flush that was 10 posts (and a
    // `log` frame holds only ~250 of these lines); packed, 1,000 lines fit 3 frames.
    runner.emit(1000, 100).await;
    let msgs = live_logs_support::receive_all(&bed, 10).await;
    let before = posts();
    let (_, report) =
        strato_log_fanout::handle_with_report(&bed.fanout, live_logs_support::sqs_event(&msgs)).await;
    let made = posts() - before;
    assert!(made <= 3, "{made} posts for 1,000 lines: {report:?}");
    while c.arrival.len() < 1003 {
        assert!(c.next(WAIT).await.is_some(), "have {} lines", c.arrival.len());
    }
    assert_eq!(c.arrival, (1..=1003).collect::<Vec<_>>(), "complete and in order");
    assert!(c.largest_frame <= MAX_FRAME_BYTES, "{}", c.largest_frame);
    assert!(c.batch_frames >= 2 && c.batch_frames <= 4, "{}", c.batch_frames);
    bed.shutdown().await;
}

/// Issue 19 (order at any fan-out concurrency): the logs queue is FIFO grouped by operation, so while one
/// invocation holds a batch of an operation's frames no other invocation gets that operation's later
/// frames. Four invocations receiving at once and finishing in reverse order still deliver every line once,
/// in order (on a standard queue they took four batches and posted them backwards).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_fan_out_invocations_keep_an_operations_order() {
    let bed = Bed::with_pump(false).await;
    let (op, mut c) = bed.subscribed("acme").await;
    let mut runner = bed.runner(&op);
    runner.emit(400, 10).await;
    let mut rounds = 0;
    loop {
        let mut batches = Vec::new();
        for _ in 0..4 {
            let got = live_logs_support::receive_some(&bed).await;
            if !got.is_empty() {
                batches.push(got);
            }
        }
        if batches.is_empty() {
            break;
        }
        for b in batches.into_iter().rev() {
            let resp = strato_log_fanout::handle(&bed.fanout, live_logs_support::sqs_event(&b)).await;
            assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
            live_logs_support::delete_all(&bed, &b).await;
        }
        rounds += 1;
        assert!(rounds < 100, "the queue never drained");
    }
    while c.arrival.len() < 400 {
        assert!(c.next(WAIT).await.is_some(), "have {} lines", c.arrival.len());
    }
    assert_eq!(
        c.arrival,
        (1..=400).collect::<Vec<_>>(),
        "complete, once each, in order"
    );
    bed.shutdown().await;
}
