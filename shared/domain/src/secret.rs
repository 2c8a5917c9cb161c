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
