//! devstack's X-Ray daemon: a UDP socket collecting the segment documents `strato_telemetry::xray` sends (the
//! in-process functions through the process's subscriber, runners and runtime-API functions through
//! `AWS_XRAY_DAEMON_ADDRESS`), kept in memory and served by `GET /traces/{operation_id}/xray`. What AWS's
//! daemon would forward to X-Ray, checked here as X-Ray reads it.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

/// The collector: its address and what it has received.
#[derive(Clone)]
pub struct Collector {
    addr: SocketAddr,
    segments: Arc<Mutex<Vec<Value>>>,
}

static GLOBAL: OnceLock<Option<Collector>> = OnceLock::new();

/// The process's collector, started on first use; `None` if no UDP socket could be bound (tracing off).
pub fn collector() -> Option<&'static Collector> {
    GLOBAL.get_or_init(|| Collector::start().ok()).as_ref()
}

/// The running collector, if one was started (what runners and spawned functions are pointed at).
pub fn running() -> Option<&'static Collector> {
    GLOBAL.get().and_then(Option::as_ref)
}

/// The environment a process sending to the running collector needs.
pub fn daemon_env() -> Option<(String, String)> {
    let c = running()?;
    Some((
        strato_telemetry::xray::DAEMON_ADDRESS_ENV.to_owned(),
        c.addr.to_string(),
    ))
}

impl Collector {
    /// Binds a UDP socket on localhost and receives on a thread of its own for the life of the process.
    pub fn start() -> std::io::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let c = Self {
            addr: socket.local_addr()?,
            segments: Arc::default(),
        };
        let segments = c.segments.clone();
        std::thread::Builder::new()
            .name("xray-daemon".into())
            .spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while let Ok(n) = socket.recv(&mut buf) {
                    if let Some(doc) = parse(&buf[..n])
                        && let Ok(mut s) = segments.lock()
                    {
                        s.push(doc);
                    }
                }
            })?;
        Ok(c)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every segment received so far.
    pub fn segments(&self) -> Vec<Value> {
        self.segments.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The segments of every trace that has a segment annotated with `operation_id`, oldest start first.
    pub fn operation_segments(&self, operation_id: &str) -> Vec<Value> {
        let all = self.segments();
        let traces: Vec<&Value> = all
            .iter()
            .filter(|s| s["annotations"]["operation_id"].as_str() == Some(operation_id))
            .map(|s| &s["trace_id"])
            .collect();
        let mut out: Vec<Value> = all
            .iter()
            .filter(|s| traces.contains(&&s["trace_id"]))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            a["start_time"]
                .as_f64()
                .partial_cmp(&b["start_time"].as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        out
    }
}

/// One datagram: the daemon header line, then one segment document (anything else is dropped, as the
/// daemon drops it).
fn parse(datagram: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(datagram).ok()?;
    let (header, body) = text.split_once('\n')?;
    let header: Value = serde_json::from_str(header).ok()?;
    if header["format"] != "json" || header["version"] != 1 {
        return None;
    }
    serde_json::from_str(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_without_the_daemon_header_are_dropped() {
        assert!(parse(b"{\"format\": \"json\", \"version\": 1}\n{\"id\":\"1\"}").is_some());
        assert!(parse(b"{\"id\":\"1\"}").is_none());
        assert!(parse(b"{\"format\": \"xml\", \"version\": 1}\n{}").is_none());
    }
}
