//! Profiles: where Strato is and who the user is there. `config.toml` holds endpoints (shareable);
//! `credentials.toml` holds tokens and is written readable by the user only (0600), as the AWS CLI keeps
//! `credentials` apart from `config`. Both live in `$STRATO_CONFIG_DIR`, else `$XDG_CONFIG_HOME/strato`, else
//! `~/.config/strato`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CliError;

pub const DEFAULT_PROFILE: &str = "default";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Profile {
    /// The HTTP API's base URL, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com`.
    pub endpoint: String,
    /// The WebSocket API's URL (`wss://…/live`), for live logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_endpoint: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ConfigFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default_profile: Option<String>,
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CredentialsFile {
    #[serde(default, flatten)]
    tokens: BTreeMap<String, TokenEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TokenEntry {
    token: String,
}

/// Where the profile files are.
pub fn config_dir() -> Result<PathBuf, CliError> {
    if let Some(d) = std::env::var_os("STRATO_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("strato"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".config").join("strato")),
        None => Err(CliError::Usage(
            "no configuration directory: set STRATO_CONFIG_DIR (or HOME)".into(),
        )),
    }
}

/// What a command runs against, after flags, environment and profile files are combined.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub profile: String,
    pub endpoint: String,
    pub ws_endpoint: Option<String>,
    pub token: Option<String>,
}

/// Combines, strongest first: flags/`STRATO_ENDPOINT`/`STRATO_TOKEN`/`STRATO_WS_ENDPOINT` (clap reads the
/// environment into the same fields), then the profile (`--profile`/`STRATO_PROFILE`, else the file's
/// default, else `default`).
pub fn resolve(
    profile: Option<&str>,
    endpoint: Option<&str>,
    ws_endpoint: Option<&str>,
    token: Option<&str>,
) -> Result<Resolved, CliError> {
    let dir = config_dir()?;
    let config: ConfigFile = read_toml(&dir.join("config.toml"))?;
    let creds: CredentialsFile = read_toml(&dir.join("credentials.toml"))?;
    let name = profile
        .map(str::to_owned)
        .or(config.default_profile.clone())
        .unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
    let stored = config.profiles.get(&name);
    if profile.is_some() && stored.is_none() && endpoint.is_none() {
        return Err(CliError::Usage(format!(
            "no profile '{name}' in {}: run `strato login --profile {name} --endpoint URL`",
            dir.join("config.toml").display()
        )));
    }
    let endpoint = match endpoint.map(str::to_owned).or(stored.map(|p| p.endpoint.clone())) {
        Some(e) => e,
        None => {
            return Err(CliError::Usage(
                "no endpoint: run `strato login --endpoint URL`, or set STRATO_ENDPOINT / --endpoint".into(),
            ));
        }
    };
    Ok(Resolved {
        profile: name.clone(),
        endpoint: endpoint.trim_end_matches('/').to_owned(),
        ws_endpoint: ws_endpoint
            .map(str::to_owned)
            .or(stored.and_then(|p| p.ws_endpoint.clone())),
        token: token
            .map(str::to_owned)
            .or(creds.tokens.get(&name).map(|t| t.token.clone())),
    })
}

/// Writes (or replaces) a profile and its token; the credentials file is created 0600.
pub fn save_profile(
    dir: &Path,
    name: &str,
    profile: Profile,
    token: Option<&str>,
    make_default: bool,
) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir, e))?;
    let cfg_path = dir.join("config.toml");
    let mut config: ConfigFile = read_toml(&cfg_path)?;
    config.profiles.insert(name.to_owned(), profile);
    if make_default || config.default_profile.is_none() {
        config.default_profile = Some(name.to_owned());
    }
    write_file(&cfg_path, &to_toml(&config)?, 0o644)?;
    if let Some(token) = token {
        let cred_path = dir.join("credentials.toml");
        let mut creds: CredentialsFile = read_toml(&cred_path)?;
        creds.tokens.insert(
            name.to_owned(),
            TokenEntry {
                token: token.trim().to_owned(),
            },
        );
        write_file(&cred_path, &to_toml(&creds)?, 0o600)?;
    }
    Ok(())
}

/// Profile names and endpoints, and which is the default.
pub fn list_profiles() -> Result<(Option<String>, BTreeMap<String, Profile>), CliError> {
    let config: ConfigFile = read_toml(&config_dir()?.join("config.toml"))?;
    Ok((config.default_profile, config.profiles))
}

fn read_toml<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text)
            .map_err(|e| CliError::Usage(format!("{} is not valid: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(CliError::io(path, e)),
    }
}

fn to_toml<T: Serialize>(v: &T) -> Result<String, CliError> {
    toml::to_string(v).map_err(|e| CliError::Usage(format!("cannot write the profile: {e}")))
}

/// Writes through a temporary file created with `mode` and renamed into place, so a token is never
/// readable by others, not even between create and chmod, and a crash leaves the old file whole.
fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), CliError> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(&tmp).map_err(|e| CliError::io(&tmp, e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| CliError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| CliError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_profile_round_trips_and_its_token_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let p = Profile {
            endpoint: "http://127.0.0.1:1".into(),
            ws_endpoint: Some("ws://127.0.0.1:2".into()),
        };
        save_profile(dir.path(), "dev", p.clone(), Some("tok\n"), false).unwrap();
        save_profile(dir.path(), "prod", p.clone(), None, false).unwrap();
        let config: ConfigFile = read_toml(&dir.path().join("config.toml")).unwrap();
        assert_eq!(
            config.default_profile.as_deref(),
            Some("dev"),
            "the first profile is the default"
        );
        assert_eq!(config.profiles["dev"], p);
        let creds: CredentialsFile = read_toml(&dir.path().join("credentials.toml")).unwrap();
        assert_eq!(creds.tokens["dev"].token, "tok");
        assert!(!creds.tokens.contains_key("prod"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("credentials.toml"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
