//! Issue 16 finding 2 (SSRF): the sender connects only where the egress policy allows, judged on the
//! address it actually connects to. A receiver on 127.0.0.1 stands for any internal service.

use std::time::Duration;

use strato_domain::webhook::{Egress, Webhook};
use strato_webhooks::Attempt;
use strato_webhooks::deliver::{self, GuardedResolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A receiver answering 204 to every request; the count of connections it accepted.
async fn receiver() -> (u16, tokio::sync::watch::Receiver<u32>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::watch::channel(0u32);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tx.send_modify(|n| *n += 1);
            let mut buf = vec![0u8; 8192];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    });
    (port, rx)
}

async fn post(egress: Egress, url: &str) -> Attempt {
    let hook = Webhook::new(url, "0123456789abcdef0123").unwrap();
    let http = deliver::client(egress);
    deliver::post(
        &http,
        egress,
        &hook,
        "drift.detected",
        "op-1",
        b"{}",
        Duration::from_secs(3),
    )
    .await
}

#[tokio::test]
async fn a_host_name_resolving_to_loopback_is_never_connected_to_without_the_devstack_switch() {
    let (port, calls) = receiver().await;
    // Plain http allowed (so only the address rule is tested), loopback not: production's address rule.
    let http_only = Egress {
        allow_http: true,
        allow_loopback: false,
    };
    for url in [
        format!("http://localhost:{port}/hook"),
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
    ] {
        let got = post(http_only, &url).await;
        assert!(matches!(got, Attempt::Failed { .. }), "{url}: {got:?}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*calls.borrow(), 0, "the receiver was connected to");

    // devstack's switches: the same receiver is reached.
    let got = post(Egress::DEVSTACK, &format!("http://localhost:{port}/hook")).await;
    assert_eq!(got, Attempt::Delivered { status: 204 });
    assert_eq!(*calls.borrow(), 1);
    // And production refuses http at all.
    let got = post(Egress::STRICT, &format!("http://example.com:{port}/hook")).await;
    assert!(matches!(got, Attempt::Failed { .. }), "{got:?}");
}

#[tokio::test]
async fn the_resolver_drops_forbidden_addresses() {
    use reqwest::dns::Resolve;
    let strict = GuardedResolver {
        egress: Egress::STRICT,
    };
    let name: reqwest::dns::Name = "localhost".parse().unwrap();
    let err = match strict.resolve(name).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("may not reach"), "{err}");
    let dev = GuardedResolver {
        egress: Egress::DEVSTACK,
    };
    let name: reqwest::dns::Name = "localhost".parse().unwrap();
    let got: Vec<_> = dev.resolve(name).await.unwrap().collect();
    assert!(
        got.iter().all(|a| a.ip().is_loopback()) && !got.is_empty(),
        "{got:?}"
    );
}
