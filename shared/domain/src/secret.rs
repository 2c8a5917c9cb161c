//! `Sensitive`: a string that is a secret of the tenant's (its issued external id). `Debug` shows `(sensitive)`,
//! the memory is wiped on drop (`secrecy`), and reading it takes an explicit `expose()`. It serializes as the
//! plain string (the tenant endpoint shows it to its owner); at rest it is only ever stored sealed
//! (`crate::sealed`).

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone)]
pub struct Sensitive(SecretString);

impl Sensitive {
    pub fn new(value: impl Into<String>) -> Self {
        Self(SecretString::from(value.into()))
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(sensitive)")
    }
}

impl PartialEq for Sensitive {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for Sensitive {}

impl From<String> for Sensitive {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

impl From<&str> for Sensitive {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl Serialize for Sensitive {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for Sensitive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_it_serde_keeps_it() {
        let s = Sensitive::new("ext-secret-42");
        assert_eq!(format!("{s:?}"), "(sensitive)");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"ext-secret-42\"");
        let back: Sensitive = serde_json::from_str("\"ext-secret-42\"").unwrap();
        assert_eq!(back, s);
        assert_eq!(back.expose(), "ext-secret-42");
    }
}

/// What a redacted value reads as.
pub const REDACTED: &str = "(sensitive value)";

/// Replaces sensitive values in user-visible text (the runner's log lines, every message a policy returns)
/// and in documents shown to code a tenant wrote (policy inputs). Clones share the set of secrets.
#[derive(Debug, Default, Clone)]
pub struct Redactor(std::sync::Arc<std::sync::RwLock<Vec<String>>>);

impl Redactor {
    /// Adds a secret; very short values are not redacted (they would mangle ordinary text) and are not
    /// expected for secrets.
    pub fn add(&self, secret: &str) {
        if secret.len() >= 4
            && let Ok(mut v) = self.0.write()
            && !v.iter().any(|s| s == secret)
        {
            v.push(secret.to_owned());
            // Longest first, so a secret containing another is replaced whole.
            v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// Adds every string leaf of a JSON value.
    pub fn add_json(&self, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => self.add(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| self.add_json(x)),
            serde_json::Value::Object(m) => m.values().for_each(|x| self.add_json(x)),
            other => self.add(&other.to_string()),
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let Ok(v) = self.0.read() else {
            return text.to_owned();
        };
        let mut out = text.to_owned();
        for s in v.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        out
    }

    /// Redacts, in place, every string of a JSON document (keys included) and every number or boolean
    /// that is itself a secret.
    pub fn redact_json(&self, v: &mut serde_json::Value) {
        use serde_json::Value;
        match v {
            Value::String(s) => {
                let r = self.redact(s);
                if r != *s {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact_json(x)),
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (k, mut x) in old {
                    self.redact_json(&mut x);
                    m.insert(self.redact(&k), x);
                }
            }
            Value::Number(_) | Value::Bool(_) => {
                if self.redact(&v.to_string()) == REDACTED {
                    *v = Value::from(REDACTED);
                }
            }
            Value::Null => {}
        }
    }
}
