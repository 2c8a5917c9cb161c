//! The `@connections` management API (PostToConnection, GetConnection, DeleteConnection) over the emulated connections.

use super::*;

pub(super) fn aws_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        [("x-amzn-errortype", kind), ("content-type", "application/json")],
        json!({ "message": message }).to_string(),
    )
        .into_response()
}

pub(super) fn gone(shared: &Shared) -> Response {
    shared.stats.gone.fetch_add(1, Ordering::Relaxed);
    aws_error(StatusCode::GONE, "GoneException", "")
}

pub(super) fn find(shared: &Shared, id: &str) -> Option<Arc<Conn>> {
    lock(&shared.conns).get(id).cloned()
}

/// Extracts the id from either `/@connections/{id}` or `/{stage}/@connections/{id}`.
pub(super) fn conn_id(params: &HashMap<String, String>) -> String {
    params.get("id").cloned().unwrap_or_default()
}

pub(super) async fn post_to_connection(
    State(shared): State<Arc<Shared>>,
    Path(params): Path<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    shared.stats.posts.fetch_add(1, Ordering::Relaxed);
    if body.len() > shared.config.max_frame_bytes {
        shared.stats.too_large.fetch_add(1, Ordering::Relaxed);
        return aws_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PayloadTooLargeException",
            &format!(
                "Message of {} bytes exceeds the {} byte frame limit",
                body.len(),
                shared.config.max_frame_bytes
            ),
        );
    }
    let id = conn_id(&params);
    let fault = {
        let mut faults = lock(&shared.faults);
        match faults.get_mut(&id) {
            Some(Fault::Throttle { times }) if *times > 0 => {
                *times -= 1;
                Some(Fault::Throttle { times: 1 })
            }
            Some(Fault::Delay(d)) => Some(Fault::Delay(*d)),
            _ => None,
        }
    };
    match fault {
        Some(Fault::Throttle { .. }) => {
            shared.stats.throttled.fetch_add(1, Ordering::Relaxed);
            return aws_error(
                StatusCode::TOO_MANY_REQUESTS,
                "LimitExceededException",
                "Rate exceeded",
            );
        }
        Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    let Some(conn) = find(&shared, &id) else {
        return gone(&shared);
    };
    shared
        .stats
        .posted_bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    let text = String::from_utf8_lossy(&body).into_owned();
    if conn.tx.send(Message::Text(text.into())).is_err() {
        return gone(&shared);
    }
    StatusCode::OK.into_response()
}

pub(super) async fn get_connection(
    State(shared): State<Arc<Shared>>,
    Path(params): Path<HashMap<String, String>>,
) -> Response {
    let Some(conn) = find(&shared, &conn_id(&params)) else {
        return gone(&shared);
    };
    let fmt = |t: OffsetDateTime| t.format(&Rfc3339).unwrap_or_default();
    let mut identity = json!({ "sourceIp": conn.source_ip });
    if let Some(ua) = &conn.user_agent {
        identity["userAgent"] = json!(ua);
    }
    let body = json!({
        "connectedAt": fmt(conn.connected_at),
        "identity": identity,
        "lastActiveAt": fmt(*lock(&conn.last_active_at)),
    });
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) async fn delete_connection(
    State(shared): State<Arc<Shared>>,
    Path(params): Path<HashMap<String, String>>,
) -> Response {
    let Some(conn) = lock(&shared.conns).remove(&conn_id(&params)) else {
        return gone(&shared);
    };
    let _ = conn
        .tx
        .send(close_message(1000, "Connection closed by the server"));
    StatusCode::NO_CONTENT.into_response()
}
