//! Stamps: what an installed component was built from (its pins) and the sha256 of each file it owns. A
//! component whose stamp does not match is removed and reinstalled.
//!
//! Checking a stamp hashes the component's files — the Terraform binary and the provider's zip are about 150 MB
//! together, about a second of CPU in a debug build — and under cargo-nextest every test is a process of its
//! own that checks the bed once. So a check that hashed and matched leaves a memo beside the stamp: each file's
//! length, modification time and inode (and the stamp's own). While the memo still describes every file, a
//! later check trusts the hashes it vouched for; any write to a file, or a new stamp, changes what the memo
//! describes and the files are hashed again.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::install::{ToolsError, io, write_if_changed};

pub(crate) fn sha256_file(path: &Path) -> Result<String, ToolsError> {
    let mut f = File::open(path).map_err(io("reading", path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io("reading", path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A stamp lists `key=value` lines: the pinned versions and the sha256 of each file the component owns.
pub(crate) fn stamp_valid(stamp: &Path, pins: &str, files: &[&Path]) -> bool {
    let Ok(text) = fs::read_to_string(stamp) else {
        return false;
    };
    let mut lines = text.lines();
    if lines.next() != Some(pins) {
        return false;
    }
    if memo(stamp, files).is_some_and(|m| Some(m) == read_memo(stamp)) {
        return true;
    }
    let valid = files.iter().all(|f| {
        let want = lines.next();
        match sha256_file(f) {
            Ok(got) => want == Some(got.as_str()),
            Err(_) => false,
        }
    });
    if valid {
        remember(stamp, files);
    }
    valid
}

pub(crate) fn write_stamp(stamp: &Path, pins: &str, files: &[&Path]) -> Result<(), ToolsError> {
    let mut text = format!("{pins}\n");
    for f in files {
        text.push_str(&sha256_file(f)?);
        text.push('\n');
    }
    fs::write(stamp, text).map_err(io("writing", stamp))?;
    remember(stamp, files);
    Ok(())
}

fn memo_path(stamp: &Path) -> PathBuf {
    let mut name = stamp.as_os_str().to_owned();
    name.push(".seen");
    PathBuf::from(name)
}

/// What the stamp and its files look like now: length, modification time (ns) and inode of each, the stamp first.
/// `None` when one of them is missing.
fn memo(stamp: &Path, files: &[&Path]) -> Option<String> {
    std::iter::once(stamp)
        .chain(files.iter().copied())
        .map(|f| {
            let m = fs::metadata(f).ok()?;
            Some(format!(
                "{} {} {} {}\n",
                m.len(),
                m.mtime(),
                m.mtime_nsec(),
                m.ino()
            ))
        })
        .collect()
}

fn read_memo(stamp: &Path) -> Option<String> {
    fs::read_to_string(memo_path(stamp)).ok()
}

/// Best effort: without a memo the next check hashes again, which is only slower. Written aside and renamed
/// (`write_if_changed`), so a concurrent check reads a whole memo or none.
fn remember(stamp: &Path, files: &[&Path]) {
    if let Some(memo) = memo(stamp, files) {
        let _ = write_if_changed(&memo_path(stamp), &memo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory holding a file `a` ("hello"), and the path of a stamp for it (not written yet).
    fn scratch(name: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("strato-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a");
        fs::write(&a, "hello").unwrap();
        let stamp = dir.join("s.stamp");
        (dir, a, stamp)
    }

    #[test]
    fn stamps_detect_changed_and_missing_files() {
        let (dir, a, stamp) = scratch("stamp");
        assert!(!stamp_valid(&stamp, "pins", &[&a]), "no stamp, not trusted");
        write_stamp(&stamp, "pins", &[&a]).unwrap();
        assert!(stamp_valid(&stamp, "pins", &[&a]));
        assert!(
            !stamp_valid(&stamp, "other pins", &[&a]),
            "pin change invalidates"
        );
        fs::write(&a, "hell").unwrap();
        assert!(!stamp_valid(&stamp, "pins", &[&a]), "truncated file invalidates");
        fs::remove_file(&a).unwrap();
        assert!(!stamp_valid(&stamp, "pins", &[&a]), "missing file invalidates");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_memo_spares_the_hash_only_while_it_describes_the_files() {
        let (dir, a, stamp) = scratch("stamp-memo");
        write_stamp(&stamp, "pins", &[&a]).unwrap();
        assert!(memo_path(&stamp).exists(), "a written stamp leaves its memo");
        assert!(stamp_valid(&stamp, "pins", &[&a]));

        // The memo is what the check trusts: bytes changed in place with the length, inode and modification
        // time kept (nothing a write does by itself) pass unhashed — the hash is spared.
        let then = fs::metadata(&a).unwrap().modified().unwrap();
        fs::write(&a, "jello").unwrap();
        File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(then)
            .unwrap();
        assert!(
            stamp_valid(&stamp, "pins", &[&a]),
            "an unchanged memo spares the hash"
        );

        // Same length, different bytes: the file's modification time moved, so the hash is checked again.
        // (The kernel stamps writes with a clock of a few milliseconds' grain; the test moves the time
        // itself rather than depend on it.)
        fs::write(&a, "jello").unwrap();
        let later = fs::metadata(&a).unwrap().modified().unwrap() + std::time::Duration::from_secs(1);
        File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(
            !stamp_valid(&stamp, "pins", &[&a]),
            "changed content invalidates despite the memo"
        );

        // A memo that no longer matches (the file replaced by another inode) is not trusted either.
        fs::write(&a, "hello").unwrap();
        assert!(
            stamp_valid(&stamp, "pins", &[&a]),
            "restored content hashes valid again"
        );
        let stale = read_memo(&stamp).unwrap();
        fs::remove_file(&a).unwrap();
        fs::write(&a, "HELLO").unwrap();
        assert_ne!(memo(&stamp, &[&a]).unwrap(), stale);
        assert!(!stamp_valid(&stamp, "pins", &[&a]));

        // The pins are checked before the memo is consulted.
        fs::write(&a, "hello").unwrap();
        assert!(stamp_valid(&stamp, "pins", &[&a]));
        assert!(!stamp_valid(&stamp, "other pins", &[&a]));
        fs::remove_dir_all(&dir).unwrap();
    }
}
