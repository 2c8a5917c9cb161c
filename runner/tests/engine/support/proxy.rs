//! A small fault-injecting HTTP proxy in front of moto: answers the first N matching requests with an error
//! (EC2's real throttling response for one action, or S3's `AccessDenied` for PUTs of matching keys),
//! forwards everything else.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct FaultProxy {
    pub endpoint: String,
    pub injected: Arc<AtomicUsize>,
    pub forwarded: Arc<AtomicUsize>,
}

const THROTTLE_BODY: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>5c8c5b1e-6d8f-4a4e-9a39-0f8f2a1b7e11</RequestID></Response>";

const ACCESS_DENIED_BODY: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>";

/// Whether a request (head, body) gets the fault.
type Matcher = Box<dyn Fn(&str, &[u8]) -> bool + Send + Sync>;

/// Which requests fail, and how.
struct Fault {
    matches: Matcher,
    response: String,
}

impl FaultProxy {
    /// Throttles the first `faults` requests whose form body names `Action=<action>`.
    pub async fn start(upstream: &str, action: &str, faults: usize) -> Self {
        let needle = format!("Action={action}&");
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/xml;charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{THROTTLE_BODY}",
            THROTTLE_BODY.len()
        );
        let fault = Fault {
            matches: Box::new(move |_, body| String::from_utf8_lossy(body).contains(&needle)),
            response,
        };
        Self::with_fault(upstream, fault, faults).await
    }

    /// Denies (S3 `AccessDenied`, 403: the SDK does not retry it) the first `faults` PUTs whose path
    /// contains `key_part`.
    pub async fn deny_s3_puts(upstream: &str, key_part: &str, faults: usize) -> Self {
        let key_part = key_part.to_owned();
        let response = format!(
            "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ACCESS_DENIED_BODY}",
            ACCESS_DENIED_BODY.len()
        );
        let fault = Fault {
            matches: Box::new(move |head, _| {
                head.lines()
                    .next()
                    .is_some_and(|l| l.starts_with("PUT ") && l.contains(&key_part))
            }),
            response,
        };
        Self::with_fault(upstream, fault, faults).await
    }

    async fn with_fault(upstream: &str, fault: Fault, faults: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let fault = Arc::new(fault);
        let remaining = Arc::new(AtomicUsize::new(faults));
        let injected = Arc::new(AtomicUsize::new(0));
        let forwarded = Arc::new(AtomicUsize::new(0));
        let (inj, fwd) = (injected.clone(), forwarded.clone());
        tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let (upstream, fault, remaining, inj, fwd) = (
                    upstream.clone(),
                    fault.clone(),
                    remaining.clone(),
                    inj.clone(),
                    fwd.clone(),
                );
                tokio::spawn(async move {
                    let _ = serve(client, &upstream, &fault, &remaining, &inj, &fwd).await;
                });
            }
        });
        Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            injected,
            forwarded,
        }
    }
}

fn header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Replaces (or adds) the Connection header with `close`: one request per connection keeps this simple.
fn with_connection_close(head: &str) -> String {
    let mut out: Vec<&str> = head
        .trim_end_matches("\r\n")
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    out.push("Connection: close");
    format!("{}\r\n\r\n", out.join("\r\n"))
}

async fn serve(
    mut client: TcpStream,
    upstream: &str,
    fault: &Fault,
    remaining: &AtomicUsize,
    injected: &AtomicUsize,
    forwarded: &AtomicUsize,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let end = loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(e) = header_end(&buf) {
            break e;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len = content_length(&head);
    while buf.len() < end + len {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = &buf[end..];
    let throttle = (fault.matches)(&head, body)
        && remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
            .is_ok();
    if throttle {
        injected.fetch_add(1, Ordering::SeqCst);
        client.write_all(fault.response.as_bytes()).await?;
        return client.shutdown().await;
    }
    forwarded.fetch_add(1, Ordering::SeqCst);
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(with_connection_close(&head).as_bytes()).await?;
    up.write_all(body).await?;
    let mut resp = Vec::new();
    up.read_to_end(&mut resp).await?;
    match header_end(&resp) {
        Some(e) => {
            let h = with_connection_close(&String::from_utf8_lossy(&resp[..e]));
            client.write_all(h.as_bytes()).await?;
            client.write_all(&resp[e..]).await?;
        }
        None => client.write_all(&resp).await?,
    }
    client.shutdown().await
}
