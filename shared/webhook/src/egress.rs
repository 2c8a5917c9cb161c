//! Where a tenant's webhook may point: the SSRF guard. A webhook is a URL a tenant chooses and Strato calls
//! from inside its own network, so without a guard a tenant could make Strato call the instance metadata
//! service, a loopback admin port or a private address, and read the outcome as a port scanner.
//!
//! Two checks, one rule ([`Egress::address_allowed`]): the URL when it is set (`PUT /v1/webhook`, 422 for a
//! literal forbidden address or a non-https scheme), and every address a host name resolves to when a call
//! is made (the webhooks function's DNS resolver drops forbidden ones, so nothing is connected to between a
//! check and the call: no DNS-rebinding window). Parsing is the WHATWG URL standard's (`url` crate), so
//! odd IPv4 spellings (`http://2130706433/`, `0x7f.1`, `0177.0.0.1`) are read as the address a browser or
//! HTTP client would connect to, and checked as such.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use super::WebhookError;

/// What receivers the webhooks may reach. Production allows only https to public addresses; devstack's
/// switches exist for its local receivers (`http://127.0.0.1:…`) and nothing else sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Egress {
    /// Plain `http://` accepted (`STRATO_DEVSTACK_ONLY_ALLOW_HTTP_WEBHOOKS`).
    pub allow_http: bool,
    /// Loopback addresses and `localhost` accepted (`STRATO_DEVSTACK_ONLY_ALLOW_LOOPBACK_WEBHOOKS`).
    pub allow_loopback: bool,
}

/// The environment switch that allows `http://` webhooks: set by devstack only, never in infra/.
pub const ALLOW_HTTP_ENV: &str = "STRATO_DEVSTACK_ONLY_ALLOW_HTTP_WEBHOOKS";
/// The environment switch that allows loopback webhooks: set by devstack only, never in infra/.
pub const ALLOW_LOOPBACK_ENV: &str = "STRATO_DEVSTACK_ONLY_ALLOW_LOOPBACK_WEBHOOKS";

/// What a tenant is told is allowed.
pub const ALLOWED: &str = "an https:// URL whose host is a public DNS name or a public IP address (not loopback, \
     link-local or metadata, private, CGNAT, unique-local, multicast, broadcast or unspecified)";

impl Egress {
    /// Production: https only, public addresses only.
    pub const STRICT: Egress = Egress {
        allow_http: false,
        allow_loopback: false,
    };
    /// Devstack: its receivers listen on `http://127.0.0.1`.
    pub const DEVSTACK: Egress = Egress {
        allow_http: true,
        allow_loopback: true,
    };

    /// Reads the two devstack-only switches (`1`/`true` turns one on) through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let on = |k: &str| lookup(k).is_some_and(|v| matches!(v.trim(), "1" | "true"));
        Self {
            allow_http: on(ALLOW_HTTP_ENV),
            allow_loopback: on(ALLOW_LOOPBACK_ENV),
        }
    }

    /// The URL as it will be called, or why it may not be. A host name is accepted here (what it resolves
    /// to is checked at each call), except `localhost` names, which always mean loopback.
    pub fn check_url(&self, raw: &str) -> Result<Url, WebhookError> {
        self.check(raw, true)
    }

    /// [`Self::check_url`] at call time: a host name is left to the caller's resolver, which must drop every
    /// address [`Self::address_allowed`] refuses (`localhost` included).
    pub fn check_call(&self, raw: &str) -> Result<Url, WebhookError> {
        self.check(raw, false)
    }

    fn check(&self, raw: &str, names: bool) -> Result<Url, WebhookError> {
        let forbidden = |why: String| WebhookError::Forbidden(why);
        let url = Url::parse(raw).map_err(|e| forbidden(format!("is not a URL ({e})")))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            s => return Err(forbidden(format!("uses the scheme '{s}'; only https is allowed"))),
        }
        match url.host() {
            None => Err(forbidden("names no host".into())),
            Some(Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                if names && (d == "localhost" || d.ends_with(".localhost")) && !self.allow_loopback {
                    Err(forbidden(format!("names '{d}', a loopback host")))
                } else {
                    Ok(url)
                }
            }
            Some(Host::Ipv4(a)) => self.literal(IpAddr::V4(a)).map(|()| url),
            Some(Host::Ipv6(a)) => self.literal(IpAddr::V6(a)).map(|()| url),
        }
    }

    fn literal(&self, ip: IpAddr) -> Result<(), WebhookError> {
        match self.refusal(ip) {
            None => Ok(()),
            Some(kind) => Err(WebhookError::Forbidden(format!("is a {kind} address ({ip})"))),
        }
    }

    /// Whether a call may connect to `ip`.
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        self.refusal(ip).is_none()
    }

    /// The kind of range `ip` is in when calls may not go there.
    fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        let kind = forbidden_kind(ip)?;
        (!(kind == LOOPBACK && self.allow_loopback)).then_some(kind)
    }
}

const LOOPBACK: &str = "loopback";

/// The kind of non-public range `ip` is in; `None` for a public address. IPv6 forms that carry an IPv4
/// address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
/// judged by the IPv4 address inside.
pub fn forbidden_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => v4_kind(a),
        IpAddr::V6(a) => v6_kind(a),
    }
}

fn v4_kind(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, ..] = a.octets();
    Some(if a.is_loopback() {
        LOOPBACK
    } else if a.is_unspecified() || o0 == 0 {
        "unspecified (0.0.0.0/8)"
    } else if a.is_link_local() {
        "link-local or metadata (169.254.0.0/16)"
    } else if a.is_private() {
        "private (10/8, 172.16/12, 192.168/16)"
    } else if o0 == 100 && (o1 & 0xc0) == 64 {
        "shared CGNAT (100.64.0.0/10)"
    } else if a.is_broadcast() {
        "broadcast"
    } else if a.is_multicast() {
        "multicast"
    } else if o0 >= 240 {
        "reserved (240.0.0.0/4)"
    } else if o0 == 192 && o1 == 0 && a.octets()[2] == 0 {
        "IETF protocol (192.0.0.0/24)"
    } else if o0 == 198 && (o1 & 0xfe) == 18 {
        "benchmarking (198.18.0.0/15)"
    } else {
        return None;
    })
}

fn v6_kind(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if let Some(v4) = embedded_v4(a) {
        return v4_kind(v4);
    }
    Some(if a.is_loopback() {
        LOOPBACK
    } else if a.is_unspecified() {
        "unspecified (::)"
    } else if (s[0] & 0xffc0) == 0xfe80 {
        "link-local (fe80::/10)"
    } else if (s[0] & 0xffc0) == 0xfec0 {
        "site-local (fec0::/10)"
    } else if (s[0] & 0xfe00) == 0xfc00 {
        "unique-local or metadata (fc00::/7)"
    } else if a.is_multicast() {
        "multicast"
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        "documentation (2001:db8::/32)"
    } else if s[0] == 0x2001 && s[1] == 0 {
        "Teredo (2001::/32)"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 address stands for, in the forms that route to it.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let o = a.octets();
    if let Some(v4) = a.to_ipv4_mapped() {
        return Some(v4);
    }
    // IPv4-compatible (::a.b.c.d, deprecated); `::` and `::1` are themselves.
    if s[..6] == [0; 6] && !(a.is_unspecified() || a.is_loopback()) {
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    // 6to4 2002:a.b.c.d::/48.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(e: Egress, url: &str) -> bool {
        matches!(e.check_url(url), Err(WebhookError::Forbidden(_)))
    }

    #[test]
    fn literal_forbidden_addresses_and_odd_encodings_are_refused() {
        for url in [
            "https://169.254.169.254/latest/meta-data/",
            "https://127.0.0.1:8080/",
            "https://[::1]/",
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://172.31.255.255/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://100.127.255.255/",
            "https://0.0.0.0/",
            "https://[::]/",
            "https://224.0.0.1/",
            "https://255.255.255.255/",
            "https://[fd00:ec2::254]/",
            "https://[fc00::1]/",
            "https://[fe80::1]/",
            "https://[ff02::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:169.254.169.254]/",
            "https://[::10.0.0.1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:7f00:1::]/",
            "https://2130706433/",
            "https://0x7f.1/",
            "https://0177.0.0.1/",
            "https://0x7f000001/",
            "https://017700000001/",
            "https://localhost/",
            "https://LOCALHOST./",
            "https://api.localhost/",
            "http://hooks.example.com/",
            "ftp://hooks.example.com/",
            "file:///etc/passwd",
        ] {
            assert!(refused(Egress::STRICT, url), "{url} must be refused");
        }
    }

    #[test]
    fn public_hosts_pass_and_devstack_allows_only_http_and_loopback() {
        for url in [
            "https://hooks.example.com/t?k=v",
            "https://8.8.8.8/",
            "https://100.128.0.1/",
            "https://172.32.0.1/",
            "https://[2606:4700::1111]/",
        ] {
            assert!(Egress::STRICT.check_url(url).is_ok(), "{url}");
        }
        let dev = Egress::DEVSTACK;
        assert!(dev.check_url("http://127.0.0.1:9000/hook").is_ok());
        assert!(dev.check_url("http://localhost:9000/hook").is_ok());
        assert!(dev.check_url("http://[::1]:9000/").is_ok());
        assert!(refused(dev, "http://169.254.169.254/"));
        assert!(refused(dev, "http://10.0.0.1/"));
        assert!(!Egress::STRICT.address_allowed("127.0.0.1".parse().unwrap()));
        assert!(dev.address_allowed("127.0.0.1".parse().unwrap()));
        assert!(!dev.address_allowed("fd00:ec2::254".parse().unwrap()));
    }

    #[test]
    fn the_switches_are_read_from_their_devstack_only_names() {
        assert_eq!(Egress::from_lookup(|_| None), Egress::STRICT);
        let both =
            Egress::from_lookup(|k| (k == ALLOW_HTTP_ENV || k == ALLOW_LOOPBACK_ENV).then(|| "1".into()));
        assert_eq!(both, Egress::DEVSTACK);
    }
}
