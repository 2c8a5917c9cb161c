//! Checking a bundle someone uploaded (the operator's `POST /v1/admin/templates/{name}/versions/{version}`)
//! with the checks `strato-devstack publish` runs on a directory before it packs one: its manifest parses,
//! names what the upload says, every module its stages use is in it, its lock file (if any) pins every
//! provider those modules require, and the variable schema agrees with the modules' interfaces. Bounded on
//! the way in: the compressed size, the unpacked size and the number of files, and only plain files at
//! plain relative paths (a crafted archive neither escapes the directory nor fills the disk).

use std::io::Read;
use std::path::{Component, Path};

use strato_domain::error::Error;
use strato_domain::template::Template;

use crate::bundle::{Bundle, MANIFEST_FILE, check_lock, sha256_hex};
use crate::catalog_check::check_template;
use crate::provider_lock::LOCK_FILE;

/// The largest bundle accepted, compressed. Uploads travel base64 in JSON through API Gateway (10 MB) into
/// Lambda (6 MB per synchronous request): 4 MiB encodes to about 5.6 MB, under both.
pub const MAX_BUNDLE_BYTES: usize = 4 * 1024 * 1024;
/// The most its files may hold, unpacked (a module is text: this is generous).
pub const MAX_UNPACKED_BYTES: u64 = 64 * 1024 * 1024;
/// The most files it may hold.
pub const MAX_FILES: usize = 2_000;

fn bad(reason: impl Into<String>) -> Error {
    Error::Manifest {
        name: "bundle".into(),
        reason: reason.into(),
    }
}

/// Unpacks `bytes` (a tar.gz as `bundle::pack` makes) into `dest` (an empty directory) within the limits,
/// then checks it as publishing does. The bundle, its sha256 that of `bytes`, or what is wrong.
pub fn inspect(bytes: &[u8], dest: &Path) -> Result<Bundle, Error> {
    if bytes.len() > MAX_BUNDLE_BYTES {
        return Err(bad(format!(
            "is {} bytes; at most {MAX_BUNDLE_BYTES} compressed",
            bytes.len()
        )));
    }
    unpack_bounded(bytes, dest)?;
    let manifest = dest.join(MANIFEST_FILE);
    let text =
        std::fs::read_to_string(&manifest).map_err(|_| bad(format!("has no {MANIFEST_FILE} at its root")))?;
    let template = Template::from_toml(&text)?;
    let modules = dest.join("modules");
    for stage in &template.manifest.stages {
        for m in &stage.modules {
            if !modules.join(m).is_dir() {
                return Err(Error::Manifest {
                    name: template.name().into(),
                    reason: format!("module '{m}' (a stage uses it) is not in the bundle under modules/{m}/"),
                });
            }
        }
    }
    let lock = dest.join(LOCK_FILE);
    if lock.is_file() {
        check_lock(&template, &lock, &modules)?;
    }
    check_template(&template, &modules)?;
    Ok(Bundle {
        template,
        bytes: bytes.to_vec(),
        sha256: sha256_hex(bytes),
    })
}

fn unpack_bounded(bytes: &[u8], dest: &Path) -> Result<(), Error> {
    // One byte past the limit tells "too big" from "exactly the limit".
    let gz = flate2::read::GzDecoder::new(bytes).take(MAX_UNPACKED_BYTES + 1);
    let mut archive = tar::Archive::new(gz);
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("is not a tar.gz: {e}")))?;
    let mut files = 0usize;
    let mut total = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("is not a readable tar.gz: {e}")))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| bad(format!("has an unreadable path: {e}")))?
            .into_owned();
        if !kind.is_file() {
            return Err(bad(format!(
                "holds {} which is not a plain file (links and devices are refused)",
                path.display()
            )));
        }
        if path.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(bad(format!(
                "holds {} which is not a plain relative path",
                path.display()
            )));
        }
        files += 1;
        total += entry.size();
        if files > MAX_FILES {
            return Err(bad(format!("holds more than {MAX_FILES} files")));
        }
        if total > MAX_UNPACKED_BYTES {
            return Err(bad(format!("unpacks to more than {MAX_UNPACKED_BYTES} bytes")));
        }
        let target = dest.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                what: parent.display().to_string(),
                source,
            })?;
        }
        entry
            .unpack(&target)
            .map_err(|e| bad(format!("could not unpack {}: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates")
    }

    fn packed() -> Bundle {
        let dir = root().join("catalog/aws-eks-basic");
        crate::bundle::pack(&dir, &root().join("modules")).unwrap()
    }

    #[test]
    fn a_packed_catalog_template_passes_and_keeps_its_hash() {
        let b = packed();
        let dest = tempfile::tempdir().unwrap();
        let got = inspect(&b.bytes, dest.path()).unwrap();
        assert_eq!(got.sha256, b.sha256);
        assert_eq!(got.template.name(), b.template.name());
    }

    fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            tar.append_data(&mut h, name, *data).unwrap();
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar.into_inner().unwrap()).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_bundle_missing_a_module_its_stage_uses_is_refused_naming_it() {
        let manifest = std::fs::read(root().join("catalog/aws-eks-basic/template.toml")).unwrap();
        let bytes = tar_gz(&[(MANIFEST_FILE, &manifest)]);
        let dest = tempfile::tempdir().unwrap();
        let e = inspect(&bytes, dest.path()).unwrap_err().to_string();
        assert!(
            e.contains("module '") && e.contains("is not in the bundle"),
            "{e}"
        );
    }

    #[test]
    fn garbage_oversize_and_no_manifest_are_refused() {
        let dest = tempfile::tempdir().unwrap();
        let e = inspect(b"not a tarball", dest.path()).unwrap_err().to_string();
        assert!(e.contains("tar.gz"), "{e}");
        let e = inspect(&vec![0u8; MAX_BUNDLE_BYTES + 1], dest.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("compressed"), "{e}");
        let bytes = tar_gz(&[("README.md", b"hi")]);
        let dest = tempfile::tempdir().unwrap();
        let e = inspect(&bytes, dest.path()).unwrap_err().to_string();
        assert!(e.contains(MANIFEST_FILE), "{e}");
    }

    #[test]
    fn a_bundle_over_the_unpacked_limit_is_refused_before_it_fills_the_disk() {
        // Zeros compress ~1000:1, so this is small packed and over the limit unpacked.
        let big = vec![0u8; (MAX_UNPACKED_BYTES + 1) as usize];
        let bytes = tar_gz(&[("a", &big)]);
        assert!(bytes.len() < MAX_BUNDLE_BYTES);
        let dest = tempfile::tempdir().unwrap();
        let e = inspect(&bytes, dest.path()).unwrap_err().to_string();
        assert!(e.contains("unpacks to more than"), "{e}");
    }
}
