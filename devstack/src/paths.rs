//! Where devstack finds what it starts: the workspace it was built in and the binaries built beside it.
//! Asked by the stack's configuration and by the emulated clusters' agents alike, so it imports nothing.

use std::path::{Path, PathBuf};

/// The workspace this crate was built in (templates, events samples).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_owned()
}

/// A binary of the same cargo target directory as the running executable.
pub fn sibling_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir.join(name)
}
