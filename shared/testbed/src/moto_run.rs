//! One moto server for a whole cargo-nextest run. nextest runs each test in a process of its own, so a
//! per-process server would be started once per test. Here the first test of the run that needs moto starts
//! it, detached (its own process group, no stdio of the test's, so nextest sees no leaked process), and writes
//! its port under the run's id (`NEXTEST_RUN_ID`); later tests, in other processes, find it there. The
//! launcher watches the nextest process (the tests' parent) and stops when it exits, however the run ends.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::install::{Tools, ToolsError};

fn fail(detail: String) -> ToolsError {
    ToolsError::Step {
        step: "starting the nextest run's moto_server",
        detail,
        fix: "delete .tools/moto-runs/ and .tools/venv* to force a reinstall, or check that 127.0.0.1 ports \
              can be bound",
    }
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// The port of the run's server: found by the run's id, or started (under the run's lock, so exactly one is).
/// The caller wraps it as a shared `MotoServer`, so this file needs nothing of the server's own.
pub(crate) fn shared_by_run(tools: &Tools, run: &str) -> Result<u16, ToolsError> {
    // A run id is a UUID; anything else is not used as a file name.
    if run.is_empty() || !run.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(fail(format!("NEXTEST_RUN_ID {run:?} is not a run id")));
    }
    let dir = tools.root.join("moto-runs");
    fs::create_dir_all(&dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    let lock_path = dir.join(format!("{run}.lock"));
    let lock = File::create(&lock_path).map_err(|e| fail(format!("{}: {e}", lock_path.display())))?;
    lock.lock()
        .map_err(|e| fail(format!("locking {}: {e}", lock_path.display())))?;
    let port_path = dir.join(format!("{run}.port"));
    if let Some(port) = fs::read_to_string(&port_path)
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok())
        && listening(port)
    {
        return Ok(port);
    }
    prune(&dir);
    let port = start_detached(tools)?;
    fs::write(&port_path, port.to_string())
        .map_err(|e| fail(format!("writing {}: {e}", port_path.display())))?;
    Ok(port)
}

fn start_detached(tools: &Tools) -> Result<u16, ToolsError> {
    let mut child = Command::new(&tools.python)
        .arg(&tools.moto_launcher)
        .env("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
        // The nextest process: the server stops when it is gone.
        .env(
            "STRATO_MOTO_WATCH_PID",
            std::os::unix::process::parent_id().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Not in the test's process group: nextest ends a test's group with the test.
        .process_group(0)
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let stdout = child.stdout.take().ok_or_else(|| fail("no stdout".into()))?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| fail(e.to_string()))?;
    let Some(port) = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()) else {
        let _ = child.kill();
        return Err(fail(format!("launcher printed {line:?} instead of its port")));
    };
    for _ in 0..100 {
        if listening(port) {
            // Not waited for: it outlives this test process and is reaped by whoever inherits it.
            drop(child);
            return Ok(port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    Err(fail(format!("nothing listens on port {port}")))
}

/// Removes the files of runs older than a day (their servers are long gone).
fn prune(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let day = Duration::from_secs(24 * 3600);
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > day);
        if old {
            let _ = fs::remove_file(e.path());
        }
    }
}
