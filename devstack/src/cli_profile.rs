//! The `strato` CLI profile `strato-devstack up` writes: the stack's endpoints and the demo tenant's token.
//! Each stack writes its own (named after its resource prefix unless `--profile-name` says otherwise), so a
//! second stack does not take over the profile of one still running.

use std::path::PathBuf;

use strato_cli::CliError;
use strato_cli::config::{self, Profile};

/// The profile's name: `--profile-name`, else the stack's resource prefix.
pub fn profile_name(prefix: &str, flag: Option<&str>) -> String {
    flag.filter(|f| !f.trim().is_empty()).unwrap_or(prefix).to_owned()
}

/// What [`write`] did.
#[derive(Debug)]
pub struct Written {
    /// The configuration directory.
    pub dir: PathBuf,
    /// The endpoint of the profile of the same name it replaced, when that was another stack's.
    pub replaced: Option<String>,
}

/// Saves `profile` and `token` as profile `name` in the CLI's configuration directory.
pub fn write(name: &str, profile: Profile, token: &str) -> Result<Written, CliError> {
    let dir = config::config_dir()?;
    let (_, existing) = config::list_profiles()?;
    let replaced = existing
        .get(name)
        .map(|p| p.endpoint.clone())
        .filter(|e| *e != profile.endpoint);
    config::save_profile(&dir, name, profile, Some(token), false)?;
    Ok(Written { dir, replaced })
}

#[cfg(test)]
mod tests {
    use super::profile_name;

    #[test]
    fn each_stack_writes_a_profile_of_its_own() {
        assert_eq!(profile_name("strato-dev", None), "strato-dev");
        assert_eq!(
            profile_name("strato-b", None),
            "strato-b",
            "another stack, another profile"
        );
        assert_eq!(profile_name("strato-b", Some("mine")), "mine");
        assert_eq!(profile_name("strato-b", Some(" ")), "strato-b");
    }
}
