//! The HTTP adapter's reading of the control plane's answers, against a local server answering each status.

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use secrecy::SecretString;
use std::time::Duration;
use strato_agent_wire::Report;

use crate::control_plane::{HttpControlPlane, client};
use crate::ports::{CallError, ControlPlane};

/// `/<status>/v1/agent/heartbeat` answers `<status>`; 200 with an Ack when the bearer is right.
async fn answer(Path(status): Path<u16>, headers: HeaderMap) -> Response {
    let status = StatusCode::from_u16(status).unwrap();
    if status == StatusCode::OK {
        let ok = headers.get("authorization").is_some_and(|v| v == "Bearer cl-1.s");
        if !ok {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let body = r#"{"cluster_id":"cl-1","heartbeat_secs":15,"health":"degraded"}"#;
        return (status, [("content-type", "application/json")], body).into_response();
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        return (status, [("retry-after", "42")], "").into_response();
    }
    (status, "report too large: 20000 bytes").into_response()
}

async fn server() -> String {
    let app = axum::Router::new().route("/{status}/v1/agent/heartbeat", post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn heartbeat(base: &str, status: u16) -> Result<strato_agent_wire::Ack, CallError> {
    let plane = HttpControlPlane::new(client().unwrap(), &format!("{base}/{status}"));
    plane
        .heartbeat(&SecretString::from("cl-1.s"), &Report::default())
        .await
}

#[tokio::test]
async fn each_answer_of_the_control_plane_reads_as_what_the_agent_decides_on() {
    let base = server().await;
    let ack = heartbeat(&base, 200).await.unwrap();
    assert_eq!((ack.heartbeat_secs, ack.health.as_str()), (15, "degraded"));
    assert_eq!(heartbeat(&base, 401).await, Err(CallError::Refused));
    assert_eq!(heartbeat(&base, 403).await, Err(CallError::Refused));
    assert_eq!(
        heartbeat(&base, 429).await,
        Err(CallError::TooMany {
            retry_after: Some(Duration::from_secs(42))
        })
    );
    assert!(matches!(
        heartbeat(&base, 503).await,
        Err(CallError::Unreachable(_))
    ));
    match heartbeat(&base, 413).await {
        Err(CallError::Rejected { status: 413, detail }) => assert!(detail.contains("too large"), "{detail}"),
        other => panic!("{other:?}"),
    }
    // Nothing listens there.
    let closed = HttpControlPlane::new(client().unwrap(), "http://127.0.0.1:9");
    let err = closed
        .heartbeat(&SecretString::from("cl-1.s"), &Report::default())
        .await
        .unwrap_err();
    match err {
        CallError::Unreachable(why) => assert!(
            !why.contains("cl-1.s"),
            "the credential is never in the error: {why}"
        ),
        other => panic!("{other:?}"),
    }
}
