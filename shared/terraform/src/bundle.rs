//! Template bundles: a template's manifest and the modules its stages use, packed into a deterministic
//! tar.gz (same content → same bytes → same sha256), published immutably, and verified before use.
//!
//! Source layout: `<catalog>/<template>/template.toml` and `<modules>/<module>/*.tf` (plus README, examples).
//! Bundle layout: `template.toml` at the root and `modules/<module>/...` for every module any stage names.
//! A template's provider lock file (`<catalog>/<template>/.terraform.lock.hcl`, see [`crate::provider_lock`])
//! goes to the bundle's root when there is one, after it is checked to pin every provider the modules
//! require; the bundle's sha256 covers it like every other file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::modules::ModuleInterface;
use crate::provider_lock::{self, LOCK_FILE};
use strato_domain::error::Error;
use strato_domain::template::Template;

pub const MANIFEST_FILE: &str = "template.toml";

#[derive(Debug)]
pub struct Bundle {
    pub template: Template,
    pub bytes: Vec<u8>,
    pub sha256: String,
}

impl Bundle {
    /// Object key in the templates bucket; it contains the hash, so different content never overwrites.
    pub fn key(&self) -> String {
        format!(
            "bundles/{}/{}/{}.tar.gz",
            self.template.name(),
            self.template.version(),
            self.sha256
        )
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Packs `template_dir/template.toml` and the modules its stages use (from `modules_dir`).
pub fn pack(template_dir: &Path, modules_dir: &Path) -> Result<Bundle, Error> {
    let manifest_path = template_dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest_path).map_err(io(manifest_path.display().to_string()))?;
    let template = Template::from_toml(&text)?;
    let mut files: Vec<(String, PathBuf)> = vec![(MANIFEST_FILE.into(), manifest_path)];
    let mut modules: Vec<&String> = template.manifest.stages.iter().flat_map(|s| &s.modules).collect();
    modules.sort();
    modules.dedup();
    for m in modules {
        let dir = modules_dir.join(m);
        if !dir.is_dir() {
            return Err(Error::Manifest {
                name: template.name().into(),
                reason: format!("module '{m}' not found at {}", dir.display()),
            });
        }
        collect(&dir, &format!("modules/{m}"), &mut files)?;
    }
    let lock = template_dir.join(LOCK_FILE);
    if lock.is_file() {
        check_lock(&template, &lock, modules_dir)?;
        files.push((LOCK_FILE.into(), lock));
    }
    files.sort();
    let mut tar = tar::Builder::new(Vec::new());
    for (name, path) in &files {
        let data = std::fs::read(path).map_err(io(path.display().to_string()))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        tar.append_data(&mut header, name, data.as_slice())
            .map_err(io(format!("packing {name}")))?;
    }
    let tar = tar.into_inner().map_err(io("packing bundle"))?;
    // GzBuilder writes mtime 0 and no file name unless told: the output depends on content only.
    let mut gz = flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).map_err(io("compressing bundle"))?;
    let bytes = gz.finish().map_err(io("compressing bundle"))?;
    Ok(Bundle {
        template,
        sha256: sha256_hex(&bytes),
        bytes,
    })
}

/// The template's lock file parses and pins every provider its modules require.
pub(crate) fn check_lock(template: &Template, lock: &Path, modules_dir: &Path) -> Result<(), Error> {
    let refuse = |reason: String| Error::Manifest {
        name: template.name().into(),
        reason,
    };
    let text = std::fs::read_to_string(lock).map_err(io(lock.display().to_string()))?;
    let locked = provider_lock::parse(&text).map_err(refuse)?;
    let mut required = std::collections::BTreeSet::new();
    for stage in &template.manifest.stages {
        for m in &stage.modules {
            required.extend(ModuleInterface::read_dir(&modules_dir.join(m))?.required_providers);
        }
    }
    match provider_lock::missing(&locked, &required).as_slice() {
        [] => Ok(()),
        problems => Err(refuse(problems.join("; "))),
    }
}

/// Files below `dir`, skipping Terraform's working files (`.terraform/`, state, lock files).
fn collect(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(io(dir.display().to_string()))? {
        let entry = entry.map_err(io(dir.display().to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.contains(".tfstate") || name.ends_with(".tfplan") {
            continue;
        }
        let path = entry.path();
        let rel = format!("{prefix}/{name}");
        if path.is_dir() {
            collect(&path, &rel, out)?;
        } else {
            out.push((rel, path));
        }
    }
    Ok(())
}

/// Verifies `bytes` against the catalog's sha256, then extracts into `dest` (which must exist). Entries
/// that would escape `dest` are refused by the tar crate.
pub fn unpack(bytes: &[u8], key: &str, expected_sha256: &str, dest: &Path) -> Result<Template, Error> {
    let actual = sha256_hex(bytes);
    if actual != expected_sha256 {
        return Err(Error::Checksum {
            key: key.into(),
            expected: expected_sha256.into(),
            actual,
        });
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries().map_err(io(format!("reading {key}")))? {
        let mut entry = entry.map_err(io(format!("reading {key}")))?;
        if !entry.unpack_in(dest).map_err(io(format!("extracting {key}")))? {
            return Err(Error::Corrupt {
                what: key.into(),
                reason: "an entry points outside the bundle".into(),
            });
        }
    }
    let mut text = String::new();
    std::fs::File::open(dest.join(MANIFEST_FILE))
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(io(format!("{key}: {MANIFEST_FILE}")))?;
    Template::from_toml(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(root: &Path, tag: &str) -> (PathBuf, PathBuf) {
        let tdir = root.join("catalog/t");
        let mdir = root.join("modules");
        std::fs::create_dir_all(&tdir).unwrap();
        std::fs::create_dir_all(mdir.join("net/.terraform")).unwrap();
        std::fs::write(
            tdir.join(MANIFEST_FILE),
            format!(
                "name = \"t\"\nversion = \"1.0.0\"\nproviders = [\"aws\"]\nrequired_outputs = [\"vpc_id\"]\n\
                 [[stages]]\nname = \"main\"\nmodules = [\"net\"]\n[variables.tag]\ntype = \"string\"\n\
                 default = \"{tag}\"\n"
            ),
        )
        .unwrap();
        std::fs::write(mdir.join("net/main.tf"), "variable \"tag\" {}\n").unwrap();
        std::fs::write(mdir.join("net/.terraform/junk"), "x").unwrap();
        (tdir, mdir)
    }

    #[test]
    fn packing_is_deterministic_and_unpacking_verifies() {
        let root = tempfile::tempdir().unwrap();
        let (t, m) = fixture(root.path(), "a");
        let a = pack(&t, &m).unwrap();
        let b = pack(&t, &m).unwrap();
        assert_eq!(a.sha256, b.sha256, "same content must give the same bundle");
        assert!(a.key().ends_with(&format!("{}.tar.gz", a.sha256)));

        let out = tempfile::tempdir().unwrap();
        let tpl = unpack(&a.bytes, &a.key(), &a.sha256, out.path()).unwrap();
        assert_eq!(tpl.name(), "t");
        assert!(out.path().join("modules/net/main.tf").is_file());
        assert!(
            !out.path().join("modules/net/.terraform").exists(),
            "working files stay out"
        );

        let mut bad = a.bytes.clone();
        let n = bad.len() / 2;
        bad[n] ^= 0xff;
        let err = unpack(&bad, &a.key(), &a.sha256, out.path()).unwrap_err();
        assert!(matches!(err, Error::Checksum { .. }), "{err}");

        let (t2, m2) = fixture(root.path(), "b");
        assert_ne!(pack(&t2, &m2).unwrap().sha256, a.sha256);
    }

    #[test]
    fn a_lock_file_travels_in_the_bundle_and_must_pin_the_modules_providers() {
        let root = tempfile::tempdir().unwrap();
        let (t, m) = fixture(root.path(), "a");
        let unlocked = pack(&t, &m).unwrap();
        std::fs::write(
            m.join("net/versions.tf"),
            "terraform {\n  required_providers {\n    aws = {\n      source = \"hashicorp/aws\"\n    }\n  }\n}\n",
        )
        .unwrap();
        let lock = |version: &str| {
            format!(
                "provider \"registry.terraform.io/hashicorp/aws\" {{\n  version = \"{version}\"\n  hashes = [\"h1:abc=\"]\n}}\n"
            )
        };
        std::fs::write(t.join(LOCK_FILE), lock("3.39.0")).unwrap();
        let locked = pack(&t, &m).unwrap();
        assert_ne!(locked.sha256, unlocked.sha256);
        let out = tempfile::tempdir().unwrap();
        unpack(&locked.bytes, &locked.key(), &locked.sha256, out.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join(LOCK_FILE)).unwrap(),
            lock("3.39.0"),
            "the lock file is at the bundle's root"
        );
        // Another pinned version is another bundle.
        std::fs::write(t.join(LOCK_FILE), lock("5.100.0")).unwrap();
        assert_ne!(pack(&t, &m).unwrap().sha256, locked.sha256);

        // A provider the lock does not pin refuses the template, naming it.
        std::fs::write(
            m.join("net/tls.tf"),
            "terraform {\n  required_providers {\n    tls = {\n      source = \"hashicorp/tls\"\n    }\n  }\n}\n",
        )
        .unwrap();
        let err = pack(&t, &m).expect_err("refused").to_string();
        assert!(err.contains("hashicorp/tls"), "{err}");
        // So does a lock without hashes.
        std::fs::remove_file(m.join("net/tls.tf")).unwrap();
        std::fs::write(
            t.join(LOCK_FILE),
            "provider \"registry.terraform.io/hashicorp/aws\" {\n  version = \"3.39.0\"\n}\n",
        )
        .unwrap();
        let err = pack(&t, &m).expect_err("refused").to_string();
        assert!(err.contains("no hashes"), "{err}");
    }
}
