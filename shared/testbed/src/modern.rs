//! The modern engine: a Terraform >= 1.5 (or OpenTofu >= 1.6) with an AWS provider >= 5 in a filesystem
//! mirror, used wherever the machine has them (`infra/` needs them; the engine matrix runs both engines).
//! Nothing is downloaded: a machine without them gets a reason, and the tests that need them say they were
//! skipped instead of passing silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where images of this machine kind keep the unpacked AWS provider (`find / -path '*hashicorp/aws/5.*'`).
const KNOWN_MIRRORS: &[&str] = &[
    "/opt/tf-plugins",
    "/usr/share/terraform/plugins",
    "/usr/local/share/terraform/plugins",
];

/// A usable modern engine and provider mirror.
#[derive(Debug, Clone)]
pub struct ModernEngine {
    /// The engine binary (`STRATO_MODERN_TERRAFORM`, else `terraform` on `PATH`).
    pub terraform: PathBuf,
    /// Its version, e.g. `1.11.4`.
    pub version: String,
    /// Filesystem mirror root holding `registry.terraform.io/hashicorp/aws/<version>/` (`STRATO_PROVIDER_MIRROR`).
    pub mirror: PathBuf,
    /// The AWS provider version found in the mirror, e.g. `5.100.0`.
    pub provider_version: String,
    /// CLI config that installs providers from `mirror` only (`TF_CLI_CONFIG_FILE`).
    pub cli_config: PathBuf,
}

impl ModernEngine {
    /// Environment every invocation needs: the mirror-only CLI config, no calls home.
    pub fn engine_env(&self) -> Vec<(String, String)> {
        vec![
            ("TF_CLI_CONFIG_FILE".into(), self.cli_config.display().to_string()),
            ("CHECKPOINT_DISABLE".into(), "1".into()),
            ("TF_IN_AUTOMATION".into(), "1".into()),
        ]
    }
}

/// The machine's modern engine, found once; `Err` says why there is none (for a loud skip message).
pub fn modern_engine() -> Result<&'static ModernEngine, String> {
    static FOUND: OnceLock<Result<ModernEngine, String>> = OnceLock::new();
    FOUND.get_or_init(find).as_ref().map_err(Clone::clone)
}

/// For tests that need the modern engine: `Some` when present, else prints a loud skip line naming the test
/// and the reason, and returns `None`.
pub fn modern_engine_or_skip(test: &str) -> Option<&'static ModernEngine> {
    match modern_engine() {
        Ok(e) => Some(e),
        Err(why) => {
            eprintln!("SKIPPED {test}: no modern Terraform engine on this machine: {why}");
            None
        }
    }
}

fn find() -> Result<ModernEngine, String> {
    let terraform = match std::env::var_os("STRATO_MODERN_TERRAFORM") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("terraform"),
    };
    modern_engine_at(terraform)
}

/// `terraform` as a modern engine (version >= 1.5, with an AWS provider >= 5 in a filesystem mirror), or why
/// it is not one. Runs the engine each time: [`modern_engine`] is the cached machine's engine.
pub fn modern_engine_at(terraform: PathBuf) -> Result<ModernEngine, String> {
    let out = Command::new(&terraform)
        .args(["version", "-json"])
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .map_err(|e| {
            format!(
                "cannot run {}: {e} (set STRATO_MODERN_TERRAFORM)",
                terraform.display()
            )
        })?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("`{} version -json` printed no JSON: {e}", terraform.display()))?;
    let version = json["terraform_version"].as_str().unwrap_or_default().to_owned();
    // OpenTofu reports its own version in the same field; both count from 1.6 on.
    if !at_least(&version, (1, 5)) {
        return Err(format!(
            "{} is version {version:?}; >= 1.5 is needed",
            terraform.display()
        ));
    }
    let (mirror, provider_version) = find_mirror()?;
    let cli_config = crate::tools_dir().join(format!("terraform-modern-{}.tfrc", digest(&mirror)));
    let text = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"registry.terraform.io/hashicorp/*\"]\n  }}\n  direct {{\n    exclude = [\"*/*/*\"]\n  }}\n}}\n",
        mirror.display()
    );
    std::fs::create_dir_all(crate::tools_dir()).map_err(|e| format!("creating .tools: {e}"))?;
    // Written whole under a private name, then renamed: parallel tests never read half a file.
    let tmp = cli_config.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &cli_config))
        .map_err(|e| format!("writing {}: {e}", cli_config.display()))?;
    Ok(ModernEngine {
        terraform,
        version,
        mirror,
        provider_version,
        cli_config,
    })
}

/// The mirror root and the newest AWS provider >= 5 in it.
fn find_mirror() -> Result<(PathBuf, String), String> {
    let candidates: Vec<PathBuf> = match std::env::var_os("STRATO_PROVIDER_MIRROR") {
        Some(p) if !p.is_empty() => vec![PathBuf::from(p)],
        _ => KNOWN_MIRRORS.iter().map(PathBuf::from).collect(),
    };
    for root in &candidates {
        let dir = root.join("registry.terraform.io/hashicorp/aws");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let best = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|v| at_least(v, (5, 0)) && has_linux_amd64(&dir.join(v)))
            .max_by_key(|v| parse(v));
        if let Some(v) = best {
            return Ok((root.clone(), v));
        }
    }
    Err(format!(
        "no AWS provider >= 5 in a filesystem mirror (looked in {}; set STRATO_PROVIDER_MIRROR)",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn has_linux_amd64(version_dir: &Path) -> bool {
    // Unpacked layout (<version>/linux_amd64/) or packed (<name>_<version>_linux_amd64.zip beside it).
    version_dir.join("linux_amd64").is_dir()
}

fn parse(v: &str) -> (u64, u64, u64) {
    let mut parts = v
        .trim_start_matches('v')
        .split(['.', '-'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

fn at_least(v: &str, (major, minor): (u64, u64)) -> bool {
    !v.is_empty() && {
        let (a, b, _) = parse(v);
        (a, b) >= (major, minor)
    }
}

fn digest(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(p.display().to_string().as_bytes()))[..12].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number_not_text() {
        assert!(at_least("1.11.4", (1, 5)));
        assert!(at_least("1.5.0", (1, 5)));
        assert!(!at_least("1.4.9", (1, 5)));
        assert!(!at_least("0.15.0-rc2", (1, 5)));
        assert!(!at_least("", (1, 5)));
        assert!(at_least("5.100.0", (5, 0)) && !at_least("3.39.0", (5, 0)));
        assert!(parse("5.100.0") > parse("5.99.9"));
    }
}

#[cfg(test)]
mod on_this_machine {
    /// The CLI config really installs the provider from the mirror alone (no registry is reachable).
    #[test]
    fn init_installs_the_provider_from_the_mirror() {
        let Some(engine) = super::modern_engine_or_skip("init_installs_the_provider_from_the_mirror") else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("strato-modern-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = format!(
            "terraform {{\n  required_providers {{\n    aws = {{\n      source  = \"hashicorp/aws\"\n      version = \"= {}\"\n    }}\n  }}\n}}\n",
            engine.provider_version
        );
        std::fs::write(dir.join("main.tf"), config).unwrap();
        let out = std::process::Command::new(&engine.terraform)
            .args(["init", "-backend=false", "-input=false", "-no-color"])
            .current_dir(&dir)
            .envs(engine.engine_env())
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "init failed:\n{text}");
        assert!(text.contains(&engine.provider_version), "{text}");
    }
}
