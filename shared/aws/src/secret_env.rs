//! Secrets given to a function by reference: instead of `NAME=<value>` in its (describable) Lambda
//! environment, infra/ sets `NAME_ARN=<Secrets Manager ARN>` and the function reads the value once, at cold
//! start, into the environment its `Config::from_lookup` sees. Only the names in [`SECRET_VARS`] resolve.
//!
//! Rotation is a two-key overlap: `put-secret-value` makes the new value `AWSCURRENT` and the old one
//! `AWSPREVIOUS`. For the keys that only check signatures somewhere else ([`OVERLAPPING_VARS`]) the
//! previous value is read too, as `NAME_PREVIOUS`: the ws function accepts tickets and status accepts run
//! proofs made with either, while the api and the dispatcher sign with the current one.

use std::collections::HashMap;

use crate::error::Error;

/// The settings that may come from Secrets Manager, by `NAME_ARN`.
pub const SECRET_VARS: &[&str] = &[
    "STRATO_JWT_SECRET",
    "STRATO_RUN_PROOF_SECRET",
    "STRATO_AGENT_TOKEN_SECRET",
];

/// The suffix naming a secret's ARN.
pub const ARN_SUFFIX: &str = "_ARN";

/// The settings whose previous value (`AWSPREVIOUS`) is also read, as `NAME_PREVIOUS`.
pub const OVERLAPPING_VARS: &[&str] = &["STRATO_JWT_SECRET", "STRATO_RUN_PROOF_SECRET"];

/// The suffix naming the value before a rotation.
pub const PREVIOUS_SUFFIX: &str = "_PREVIOUS";

/// The references among `env`: (setting, ARN). Both a value and a reference for one setting is an error,
/// so a stale plaintext value never silently wins.
pub fn references(env: &HashMap<String, String>) -> Result<Vec<(&'static str, String)>, Error> {
    let mut out = Vec::new();
    for name in SECRET_VARS {
        let Some(arn) = env
            .get(&format!("{name}{ARN_SUFFIX}"))
            .filter(|a| !a.trim().is_empty())
        else {
            continue;
        };
        if env.get(*name).is_some_and(|v| !v.trim().is_empty()) {
            return Err(Error::Config {
                what: "secret settings",
                reason: format!(
                    "both {name} and {name}{ARN_SUFFIX} are set; keep only the Secrets Manager reference"
                ),
            });
        }
        out.push((*name, arn.trim().to_owned()));
    }
    Ok(out)
}

/// The process environment with every reference resolved (one GetSecretValue each).
pub async fn environment(config: &aws_config::SdkConfig) -> Result<HashMap<String, String>, Error> {
    resolve(std::env::vars().collect(), config).await
}

/// `env` with its references resolved.
pub async fn resolve(
    mut env: HashMap<String, String>,
    config: &aws_config::SdkConfig,
) -> Result<HashMap<String, String>, Error> {
    let refs = references(&env)?;
    if refs.is_empty() {
        return Ok(env);
    }
    let client = aws_sdk_secretsmanager::Client::new(config);
    for (name, arn) in refs {
        let out = client
            .get_secret_value()
            .secret_id(&arn)
            .send()
            .await
            .map_err(|e| Error::aws("GetSecretValue", e))?;
        let value = out.secret_string().ok_or_else(|| Error::Config {
            what: "secret settings",
            reason: format!("{name}{ARN_SUFFIX}: secret {arn} holds no string"),
        })?;
        env.insert(name.to_owned(), value.to_owned());
        if !OVERLAPPING_VARS.contains(&name) {
            continue;
        }
        // A secret never rotated has no AWSPREVIOUS version: nothing to overlap with.
        let previous = client
            .get_secret_value()
            .secret_id(&arn)
            .version_stage("AWSPREVIOUS")
            .send()
            .await;
        match previous {
            Ok(out) => {
                if let Some(v) = out.secret_string() {
                    env.insert(format!("{name}{PREVIOUS_SUFFIX}"), v.to_owned());
                }
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) => {}
            Err(e) => return Err(Error::aws("GetSecretValue (AWSPREVIOUS)", e)),
        }
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_known_secrets_resolve_and_never_beside_a_plain_value() {
        let e = env(&[
            (
                "STRATO_JWT_SECRET_ARN",
                "arn:aws:secretsmanager:eu-west-1:1:secret:jwt",
            ),
            ("STRATO_RESOURCE_PREFIX_ARN", "arn:x"),
        ]);
        assert_eq!(
            references(&e).unwrap(),
            [(
                "STRATO_JWT_SECRET",
                "arn:aws:secretsmanager:eu-west-1:1:secret:jwt".to_owned()
            )]
        );
        let both = env(&[
            ("STRATO_RUN_PROOF_SECRET", "x"),
            ("STRATO_RUN_PROOF_SECRET_ARN", "arn:y"),
        ]);
        let err = references(&both).unwrap_err().to_string();
        assert!(
            err.contains("both STRATO_RUN_PROOF_SECRET and STRATO_RUN_PROOF_SECRET_ARN"),
            "{err}"
        );
    }
}
