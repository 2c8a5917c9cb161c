//! Semantic checks of a string variable's `format`: what a regular expression cannot say (`10.999.0.0/16`
//! matches `10\.\d{1,3}\.0\.0/16` and fails at plan 20 s later). Each check says what is wrong with the
//! value and what would be right, so the caller can put both in one field error.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::template::StringFormat;

/// The longest hostname DNS carries (RFC 1123), and the longest label.
const HOSTNAME_MAX: usize = 253;
const LABEL_MAX: usize = 63;

/// `Err((what is wrong, what is expected))` when `s` is not of `format`. `shown` is how the value may be
/// quoted (a sensitive value is not).
pub fn check(format: StringFormat, s: &str, shown: &str) -> Result<(), (String, String)> {
    match format {
        StringFormat::Cidr => cidr(s, shown),
        StringFormat::Ip => s
            .parse::<IpAddr>()
            .map(drop)
            .map_err(|_| (format!("{shown} is not an IP address"), expected(format))),
        StringFormat::Hostname => hostname(s).map_err(|why| (format!("{shown} {why}"), expected(format))),
        StringFormat::Duration => duration(s)
            .map(drop)
            .ok_or_else(|| (format!("{shown} is not a duration"), expected(format))),
    }
}

/// What a value of `format` looks like, in words.
pub fn expected(format: StringFormat) -> String {
    match format {
        StringFormat::Cidr => "a network in CIDR notation, e.g. 10.0.0.0/16 or fd00::/64".into(),
        StringFormat::Ip => "an IPv4 or IPv6 address, e.g. 10.0.0.1".into(),
        StringFormat::Hostname => {
            "a DNS name: labels of letters, digits and inner hyphens, each at most 63 characters, \
             joined by dots (253 at most), e.g. api.example.com"
                .into()
        }
        StringFormat::Duration => "a duration of whole units s, m, h or d, e.g. 90s, 15m or 1h30m".into(),
    }
}

fn cidr(s: &str, shown: &str) -> Result<(), (String, String)> {
    let bad = |why: String| Err((why, expected(StringFormat::Cidr)));
    let Some((addr, len)) = s.split_once('/') else {
        return bad(format!("{shown} has no prefix length (/n)"));
    };
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return bad(format!("{shown} does not start with an IP address"));
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    // Digits only: `parse` would also take `+16`.
    let len = match len.parse::<u32>() {
        Ok(n) if n <= max && !len.is_empty() && len.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => return bad(format!("{shown} has a prefix length that is not 0..={max}")),
    };
    let network = network_of(addr, len);
    if network != addr {
        // The providers refuse a network address with host bits set (AWS: "not a valid network value").
        return Err((
            format!("{shown} has host bits set"),
            format!("the network address: {network}/{len}"),
        ));
    }
    Ok(())
}

/// `addr` with every bit past the first `len` cleared.
fn network_of(addr: IpAddr, len: u32) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

fn hostname(s: &str) -> Result<(), String> {
    let name = s.strip_suffix('.').unwrap_or(s);
    if name.is_empty() || name.len() > HOSTNAME_MAX {
        return Err(format!("is not 1..={HOSTNAME_MAX} characters long"));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= LABEL_MAX
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!("has an invalid label '{label}'"));
        }
    }
    Ok(())
}

/// Seconds in a duration of whole units (`90s`, `1h30m`, `2d`), each unit at most once and largest first.
pub fn duration(s: &str) -> Option<u64> {
    const UNITS: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];
    let mut rest = s;
    let mut total: u64 = 0;
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].chars().next()?;
        let at = UNITS[next_unit..].iter().position(|(u, _)| *u == unit)? + next_unit;
        total = total.checked_add(n.checked_mul(UNITS[at].1)?)?;
        next_unit = at + 1;
        rest = &rest[digits + unit.len_utf8()..];
    }
    (!s.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(f: StringFormat, s: &str) -> bool {
        check(f, s, "v").is_ok()
    }

    #[test]
    fn cidrs_are_parsed_not_matched() {
        for good in [
            "10.0.0.0/16",
            "0.0.0.0/0",
            "192.168.1.0/24",
            "10.1.2.3/32",
            "fd00::/64",
            "::/0",
        ] {
            assert!(ok(StringFormat::Cidr, good), "{good}");
        }
        for bad in [
            "999.999.999.999/99",
            "10.999.0.0/16",
            "10.0.0.0/33",
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/+16",
            "fd00::/129",
            "ten/8",
        ] {
            assert!(!ok(StringFormat::Cidr, bad), "{bad}");
        }
        let (what, fix) = check(StringFormat::Cidr, "10.0.0.1/16", "'10.0.0.1/16'").unwrap_err();
        assert_eq!(what, "'10.0.0.1/16' has host bits set");
        assert_eq!(fix, "the network address: 10.0.0.0/16");
    }

    #[test]
    fn addresses_hostnames_and_durations() {
        assert!(ok(StringFormat::Ip, "10.0.0.1") && ok(StringFormat::Ip, "2001:db8::1"));
        assert!(!ok(StringFormat::Ip, "10.0.0.256") && !ok(StringFormat::Ip, "10.0.0.1/32"));
        for good in [
            "api.example.com",
            "a",
            "xn--bcher-kva.example",
            "host-1.example.com.",
        ] {
            assert!(ok(StringFormat::Hostname, good), "{good}");
        }
        let long_label = "a".repeat(64);
        for bad in [
            "-a.example",
            "a-.example",
            "a..b",
            "under_score.example",
            "",
            long_label.as_str(),
        ] {
            assert!(!ok(StringFormat::Hostname, bad), "{bad}");
        }
        assert_eq!(duration("90s"), Some(90));
        assert_eq!(duration("1h30m"), Some(5_400));
        assert_eq!(duration("2d"), Some(172_800));
        for bad in ["", "30", "m", "1x", "30m1h", "1h1h", "-5m", "1.5h", "9999999999s"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }
}
