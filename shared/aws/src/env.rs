//! Reading a process's settings from its environment, once, at start. Every function and the runner take a
//! `lookup` standing for the environment (so tests and `infra_apply` feed them maps); [`Env`] gives them the
//! same readers and the same messages: the variable, what is wrong, and what is expected.

use std::fmt::Display;
use std::str::FromStr;

use crate::resources::Names;
use strato_domain::run_proof::RunProofKey;

/// The variable holding the run-proof key ([`Env::run_proof_key`]).
pub const ENV_RUN_PROOF_SECRET: &str = "STRATO_RUN_PROOF_SECRET";
/// The key it replaced, while a rotation overlaps (`crate::secret_env` reads it from `AWSPREVIOUS`).
pub const ENV_RUN_PROOF_SECRET_PREVIOUS: &str = "STRATO_RUN_PROOF_SECRET_PREVIOUS";

/// A setting that is missing or malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} {reason}")]
pub struct EnvError {
    pub var: &'static str,
    pub reason: String,
}

impl EnvError {
    fn new(var: &'static str, reason: impl Into<String>) -> Self {
        Self {
            var,
            reason: reason.into(),
        }
    }
}

/// The environment seen through `lookup`. A variable set to blanks counts as unset (a template left empty).
pub struct Env<F> {
    lookup: F,
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub fn new(lookup: F) -> Self {
        Self { lookup }
    }

    /// The value as given (secrets are not trimmed), or `None` when unset or blank.
    pub fn optional(&self, var: &'static str) -> Option<String> {
        (self.lookup)(var).filter(|v| !v.trim().is_empty())
    }

    pub fn required(&self, var: &'static str) -> Result<String, EnvError> {
        self.optional(var).ok_or_else(|| EnvError::new(var, "is not set"))
    }

    /// A secret of at least `min_bytes` bytes, or `None` when unset; a shorter one is an error (a process
    /// must not start with a key that can be guessed).
    pub fn secret(&self, var: &'static str, min_bytes: usize) -> Result<Option<String>, EnvError> {
        match self.optional(var) {
            Some(s) if s.len() < min_bytes => Err(EnvError::new(
                var,
                format!(
                    "is {} bytes long; it must be at least {min_bytes} random bytes (e.g. `openssl rand -hex 32`)",
                    s.len()
                ),
            )),
            other => Ok(other),
        }
    }

    pub fn or(&self, var: &'static str, default: &str) -> String {
        self.optional(var).unwrap_or_else(|| default.to_owned())
    }

    /// `STRATO_RESOURCE_PREFIX`, which names every table, queue and bucket.
    pub fn names(&self) -> Result<Names, EnvError> {
        let var = "STRATO_RESOURCE_PREFIX";
        Names::new(self.required(var)?).map_err(|e| EnvError::new(var, e.to_string()))
    }

    /// A required, comma-separated list of at least one item.
    pub fn list(&self, var: &'static str) -> Result<Vec<String>, EnvError> {
        let items: Vec<String> = self
            .required(var)?
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        if items.is_empty() {
            return Err(EnvError::new(var, "must list at least one item, comma-separated"));
        }
        Ok(items)
    }

    /// A value parsed as `T` (`what` says what is expected), or `None` when unset.
    pub fn parsed<T>(&self, var: &'static str, what: &str) -> Result<Option<T>, EnvError>
    where
        T: FromStr,
        T::Err: Display,
    {
        self.optional(var)
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|e| EnvError::new(var, format!("must be {what}, not '{v}' ({e})")))
            })
            .transpose()
    }

    /// Like [`Env::parsed`], for a variable that must be set.
    pub fn required_parsed<T>(&self, var: &'static str, what: &str) -> Result<T, EnvError>
    where
        T: FromStr,
        T::Err: Display,
    {
        self.parsed(var, what)?
            .ok_or_else(|| EnvError::new(var, "is not set"))
    }

    /// A whole number, `default` when unset.
    pub fn number(&self, var: &'static str, default: u64) -> Result<u64, EnvError> {
        Ok(self.parsed(var, "a whole number")?.unwrap_or(default))
    }

    /// A whole number above zero, `default` when unset.
    pub fn positive(&self, var: &'static str, default: u64) -> Result<u64, EnvError> {
        match self.number(var, default)? {
            0 => Err(EnvError::new(var, "must be a positive whole number, not 0")),
            n => Ok(n),
        }
    }

    /// `true` or `false`, `default` when unset.
    pub fn flag(&self, var: &'static str, default: bool) -> Result<bool, EnvError> {
        match self.optional(var).as_deref().map(str::trim) {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(EnvError::new(
                var,
                format!("must be true or false, not '{other}'"),
            )),
        }
    }

    /// `STRATO_RUN_PROOF_SECRET`: the key runners' proofs are made with (the dispatcher) and checked with
    /// (status); at least 32 bytes. `STRATO_RUN_PROOF_SECRET_PREVIOUS` (optional, the key before a
    /// rotation) is also accepted when checking, never used to make a proof.
    pub fn run_proof_key(&self) -> Result<RunProofKey, EnvError> {
        let key = |var: &'static str, value: String| {
            RunProofKey::new(value.into_bytes()).map_err(|e| EnvError::new(var, e.to_string()))
        };
        let current = key(ENV_RUN_PROOF_SECRET, self.required(ENV_RUN_PROOF_SECRET)?)?;
        Ok(match self.optional(ENV_RUN_PROOF_SECRET_PREVIOUS) {
            Some(previous) => current.with_previous(key(ENV_RUN_PROOF_SECRET_PREVIOUS, previous)?),
            None => current,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> Env<impl Fn(&str) -> Option<String>> {
        Env::new(move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn blank_is_unset_and_errors_name_the_variable() {
        let e = env(&[("A", "  "), ("B", " x ")]);
        assert_eq!(e.optional("A"), None);
        assert_eq!(e.optional("B").as_deref(), Some(" x "), "not trimmed (secrets)");
        assert_eq!(e.required("A").unwrap_err().to_string(), "A is not set");
        assert_eq!(e.or("A", "dflt"), "dflt");
    }

    #[test]
    fn numbers_lists_flags_and_names() {
        let e = env(&[
            ("N", " 42 "),
            ("Z", "0"),
            ("BAD", "soon"),
            ("L", "a, b,,"),
            ("EMPTY_L", " , "),
            ("T", "true"),
            ("Y", "yes"),
            ("STRATO_RESOURCE_PREFIX", "strato-dev"),
        ]);
        assert_eq!(e.number("N", 1).unwrap(), 42);
        assert_eq!(e.number("UNSET", 7).unwrap(), 7);
        assert_eq!(e.number("Z", 7).unwrap(), 0);
        assert_eq!(e.required_parsed::<u8>("N", "a byte").unwrap(), 42);
        assert!(
            e.required_parsed::<u8>("UNSET", "a byte")
                .unwrap_err()
                .to_string()
                .contains("is not set")
        );
        let err = e.positive("Z", 7).unwrap_err();
        assert_eq!(err.var, "Z");
        assert!(err.reason.contains("positive"), "{err}");
        let err = e.number("BAD", 1).unwrap_err().to_string();
        assert!(err.starts_with("BAD must be a whole number, not 'soon'"), "{err}");
        assert_eq!(e.list("L").unwrap(), ["a", "b"]);
        assert!(
            e.list("EMPTY_L")
                .unwrap_err()
                .to_string()
                .contains("at least one")
        );
        assert!(e.list("UNSET").unwrap_err().to_string().contains("is not set"));
        assert!(e.flag("T", false).unwrap());
        assert!(!e.flag("UNSET", false).unwrap());
        assert!(
            e.flag("Y", false)
                .unwrap_err()
                .to_string()
                .contains("true or false")
        );
        assert_eq!(e.names().unwrap().table("locks"), "strato-dev-locks");
        let err = env(&[]).names().unwrap_err();
        assert_eq!(err.var, "STRATO_RESOURCE_PREFIX");
    }

    #[test]
    fn the_run_proof_key_accepts_the_previous_one_while_a_rotation_overlaps() {
        use strato_domain::ids::OperationId;
        const OLD: &str = "old-run-proof-key-0123456789abcdef";
        const NEW: &str = "new-run-proof-key-0123456789abcdef";
        let op = OperationId::generate();
        let old_proof = env(&[(ENV_RUN_PROOF_SECRET, OLD)])
            .run_proof_key()
            .unwrap()
            .proof(&op, 1);
        let rotated = env(&[(ENV_RUN_PROOF_SECRET, NEW), (ENV_RUN_PROOF_SECRET_PREVIOUS, OLD)])
            .run_proof_key()
            .unwrap();
        assert!(rotated.verify(&op, 1, &old_proof));
        let alone = env(&[(ENV_RUN_PROOF_SECRET, NEW)]).run_proof_key().unwrap();
        assert!(!alone.verify(&op, 1, &old_proof));
        let e = env(&[
            (ENV_RUN_PROOF_SECRET, NEW),
            (ENV_RUN_PROOF_SECRET_PREVIOUS, "short"),
        ])
        .run_proof_key()
        .unwrap_err();
        assert_eq!(e.var, ENV_RUN_PROOF_SECRET_PREVIOUS, "{e}");
    }
}
