//! Identifiers. Each is a newtype that can only be built by parsing, so a value in hand is always valid.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::IdError;

macro_rules! string_newtype {
    ($name:ident, $what:literal, $parse:path) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                $parse(s)
                    .map(|()| Self(s.to_owned()))
                    .map_err(|reason| IdError {
                        kind: $what,
                        value: truncate_for_display(s),
                        reason,
                    })
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                s.parse()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Values echoed back in errors are cut short so a hostile megabyte never lands in a log line.
fn truncate_for_display(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        s.chars().take(MAX).collect::<String>() + "…"
    }
}

/// Tenants come from a JWT claim; the id is used in S3 keys and DynamoDB keys, so it is kept to a safe alphabet.
fn parse_tenant(s: &str) -> Result<(), &'static str> {
    let ok_len = (1..=64).contains(&s.len());
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok_len && first_ok && rest_ok {
        Ok(())
    } else {
        Err("must be 1-64 characters of a-z, 0-9, '-' or '_', starting with a letter or digit")
    }
}

fn parse_prefixed(s: &str, prefix: &str) -> Result<(), &'static str> {
    let Some(rest) = s.strip_prefix(prefix) else {
        return Err("has the wrong prefix");
    };
    if rest.len() == 32
        && rest
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    {
        Ok(())
    } else {
        Err("must be the prefix followed by 32 lowercase hex digits")
    }
}

fn parse_cluster_id(s: &str) -> Result<(), &'static str> {
    parse_prefixed(s, "cl-")
}

fn parse_operation_id(s: &str) -> Result<(), &'static str> {
    parse_prefixed(s, "op-")
}

/// Cluster names become cloud resource names (EKS allows 100 chars; IAM role names built from it need room).
fn parse_cluster_name(s: &str) -> Result<(), &'static str> {
    let ok_len = (3..=40).contains(&s.len());
    let first_ok = s.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let last_ok = s
        .chars()
        .last()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok_len && first_ok && last_ok && rest_ok {
        Ok(())
    } else {
        Err("must be 3-40 characters of a-z, 0-9 and '-', start with a letter and not end with '-'")
    }
}

string_newtype!(TenantId, "tenant id", parse_tenant);
string_newtype!(ClusterId, "cluster id", parse_cluster_id);
string_newtype!(OperationId, "operation id", parse_operation_id);
string_newtype!(ClusterName, "cluster name", parse_cluster_name);

impl ClusterId {
    /// Time-ordered (UUIDv7) so listings sort by creation without another attribute.
    pub fn generate() -> Self {
        Self(format!("cl-{}", uuid::Uuid::now_v7().simple()))
    }
}

impl OperationId {
    pub fn generate() -> Self {
        Self(format!("op-{}", uuid::Uuid::now_v7().simple()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_back() {
        let c = ClusterId::generate();
        assert_eq!(c.as_str().parse::<ClusterId>().unwrap(), c);
        let o = OperationId::generate();
        assert_eq!(o.as_str().parse::<OperationId>().unwrap(), o);
        assert_ne!(OperationId::generate(), o);
    }

    #[test]
    fn ids_reject_the_other_prefix_and_junk() {
        let c = ClusterId::generate();
        assert!(c.as_str().replace("cl-", "op-").parse::<ClusterId>().is_err());
        assert!("cl-xyz".parse::<ClusterId>().is_err());
        assert!("".parse::<OperationId>().is_err());
        assert!(format!("{}0", c).parse::<ClusterId>().is_err());
    }

    #[test]
    fn tenant_alphabet() {
        assert!("acme".parse::<TenantId>().is_ok());
        assert!("acme-corp_2".parse::<TenantId>().is_ok());
        for bad in [
            "",
            "-acme",
            "Acme",
            "ac/me",
            "a b",
            "acme#1",
            &"a".repeat(65),
            "ténant",
        ] {
            let err = bad.parse::<TenantId>().unwrap_err();
            assert_eq!(err.kind, "tenant id", "{bad}");
        }
    }

    #[test]
    fn cluster_names() {
        for good in ["prod", "my-cluster-01", "abc"] {
            assert!(good.parse::<ClusterName>().is_ok(), "{good}");
        }
        for bad in [
            "ab",
            "1abc",
            "abc-",
            "ABC",
            "a_b_c",
            "a\"b",
            "${x}",
            &"a".repeat(41),
        ] {
            assert!(bad.parse::<ClusterName>().is_err(), "{bad}");
        }
    }

    #[test]
    fn error_echo_is_truncated() {
        let err = "x".repeat(10_000).parse::<TenantId>().unwrap_err();
        assert!(err.to_string().len() < 300);
    }

    #[test]
    fn serde_round_trip_and_rejects_invalid() {
        let c = ClusterId::generate();
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ClusterId>(&json).unwrap(), c);
        assert!(serde_json::from_str::<ClusterId>("\"nope\"").is_err());
    }
}
