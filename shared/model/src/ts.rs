//! Timestamps as fixed-width UTC RFC 3339 strings (`2026-11-22T04:30:00.123456Z`). Fixed width makes the
//! text sort like the time, which DynamoDB sort keys rely on.

use serde::{Deserialize, Deserializer, Serializer};
use time::format_description::FormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

pub fn format(t: OffsetDateTime) -> String {
    t.to_offset(UtcOffset::UTC).format(FORMAT).unwrap_or_default()
}

pub fn parse(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
}

/// Now, at the microsecond precision timestamps are stored with, so a value survives a round trip.
pub fn now() -> OffsetDateTime {
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000).unwrap_or(t)
}

pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*t))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not an RFC 3339 timestamp")))
}

pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<OffsetDateTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&super::format(*t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OffsetDateTime>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => super::parse(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not an RFC 3339 timestamp"))),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_sorts_like_time() {
        let a = time::macros::datetime!(2026-11-22 04:30:00 UTC);
        let b = a + time::Duration::microseconds(1);
        let c = a + time::Duration::milliseconds(500);
        let (fa, fb, fc) = (format(a), format(b), format(c));
        assert_eq!(fa, "2026-11-22T04:30:00.000000Z");
        assert!(fa < fb && fb < fc);
        assert_eq!(parse(&fb).unwrap(), b);
        let offset = a.to_offset(time::macros::offset!(+2));
        assert_eq!(format(offset), fa, "always rendered in UTC");
    }
}
