//! Runs one engine command: output read line by line without ever blocking the engine, graceful stop
//! (SIGINT, grace period, kill) when the operation is cancelled, times out or the task is stopped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strato_domain::messages::LogStream;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;

use crate::logs::{LogHub, StderrSplitter};
use crate::outcome::{Outcome, StopRx, wait_stop};

/// The engine as a process ([`crate::ports::Engine`] on the real binary): binary and its environment
/// (credentials, region, mirror config…). The engine inherits only [`inherited`] variables of the runner's
/// environment: never the runner's own credentials (`AWS_*`, the task role's container-credentials URI), its
/// run proof or its secrets (`STRATO_*`).
#[derive(Debug, Clone)]
pub struct ProcessEngine {
    pub bin: PathBuf,
    pub env: Vec<(String, String)>,
    pub grace: Duration,
}

/// Makes the runner's process non-dumpable: a process of the same user (the engine, a provider, anything a
/// module runs) can then neither read `/proc/<runner>/environ` — where the task role's credentials URI and
/// the run proof are — nor its memory, nor attach to it. Children get the default back at exec.
pub fn harden_runner_process() -> std::io::Result<()> {
    nix::sys::prctl::set_dumpable(false).map_err(std::io::Error::from)
}

/// Whether the engine inherits the runner's variable `name`: the system basics, proxies and CA bundles,
/// and Terraform's own settings (`TF_*`: CLI config, plugin cache, log level).
pub fn inherited(name: &str) -> bool {
    const BASICS: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TERM",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        // The engine's Go runtime, when the operator tunes it on the task (see ENGINE_GOGC).
        "GOGC",
        "GOMEMLIMIT",
    ];
    BASICS.contains(&name) || name.starts_with("LC_") || name.starts_with("TF_")
}

/// The engine's garbage-collection target unless the task sets `GOGC` itself. Terraform starts the provider
/// plugin anew for each command (three times for a plan), and the AWS provider 5 builds its whole schema
/// each time: at Go's default (100) a one-resource plan takes 17 s of CPU, at 200 about 14 s (-19 %) for
/// 6 % more memory (measured 2026-11-29, Terraform 1.11.4, provider 5.100.0). Fargate bills the vCPU the
/// runner holds; memory it has to spare.
pub const ENGINE_GOGC: &str = "200";

/// Bounded memory for the classifier's view of the output: keep the tail.
const USER_TEXT_MAX: usize = 256 * 1024;
/// The longest logged line: an engine (or a module's `local-exec`) printing without newlines is cut here,
/// with a marker, instead of growing the runner's memory until the task dies.
pub const LINE_MAX: usize = 64 * 1024;
/// The most of the engine's debug trace kept per command (its tail: the failure is at the end), with a
/// marker saying how much was dropped. It is uploaded as an artifact, so it is also bounded in S3.
pub const DEBUG_MAX: usize = 8 * 1024 * 1024;
/// The most captured stdout (`show -json`, `output -json`) kept: one JSON document, often one line. Past
/// this the command fails saying so (a cut JSON document means nothing).
pub const CAPTURE_MAX: usize = 32 * 1024 * 1024;

fn push_capped(buf: &Mutex<String>, line: &str) {
    if let Ok(mut b) = buf.lock() {
        b.push_str(line);
        b.push('\n');
        if b.len() > USER_TEXT_MAX {
            let mut cut = b.len() - USER_TEXT_MAX / 2;
            while !b.is_char_boundary(cut) {
                cut += 1;
            }
            b.drain(..cut);
        }
    }
}

/// The last `max` bytes (about) of a stream of lines, and how many bytes before them were dropped.
#[derive(Debug)]
struct Tail {
    bytes: Vec<u8>,
    max: usize,
    dropped: u64,
}

impl Tail {
    fn new(max: usize) -> Self {
        Self {
            bytes: Vec::new(),
            max,
            dropped: 0,
        }
    }

    fn push_line(&mut self, line: &str) {
        self.bytes.extend_from_slice(line.as_bytes());
        self.bytes.push(b'\n');
        if self.bytes.len() > self.max {
            // Drop whole lines from the front, down to half the cap, so a trickle of lines does not move
            // the buffer on every push.
            let target = self.bytes.len() - self.max / 2;
            let cut = self.bytes[target..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(self.bytes.len(), |i| target + i + 1);
            self.bytes.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// The kept bytes, after a first line saying what was dropped (if anything was).
    fn finish(self) -> Vec<u8> {
        if self.dropped == 0 {
            return self.bytes;
        }
        let mut out = format!(
            "[strato: the first {} bytes of this trace were dropped; the runner keeps the last {} MiB]\n",
            self.dropped,
            self.max / (1024 * 1024)
        )
        .into_bytes();
        out.extend_from_slice(&self.bytes);
        out
    }
}

/// Reads `r` line by line and hands each line, without its line ending, to `each` with whether it was cut.
/// A line longer than `max` bytes is handed on cut at `max`; the rest of it is read and dropped. So memory
/// stays bounded whatever the engine prints, and the engine is never blocked on a full pipe.
async fn read_lines<R: AsyncRead + Unpin>(mut r: BufReader<R>, max: usize, mut each: impl FnMut(&str, bool)) {
    let mut line = Vec::new();
    // Inside the rest of a line already handed on cut.
    let mut dropping = false;
    let mut emit = |line: &mut Vec<u8>, cut: bool| {
        let text = String::from_utf8_lossy(line);
        each(text.trim_end_matches(['\n', '\r']), cut);
        line.clear();
    };
    loop {
        let (used, ended) = match r.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => {
                let end = chunk.iter().position(|b| *b == b'\n');
                let part = &chunk[..end.unwrap_or(chunk.len())];
                if !dropping {
                    let room = max.saturating_sub(line.len());
                    line.extend_from_slice(&part[..part.len().min(room)]);
                    if part.len() > room {
                        emit(&mut line, true);
                        dropping = true;
                    }
                }
                (end.map_or(chunk.len(), |i| i + 1), end.is_some())
            }
        };
        r.consume(used);
        if ended {
            if !dropping {
                emit(&mut line, false);
            }
            dropping = false;
        }
    }
    if !line.is_empty() && !dropping {
        emit(&mut line, false);
    }
}

/// A logged line as shown: cut lines end with a marker.
fn shown(line: &str, cut: bool) -> std::borrow::Cow<'_, str> {
    if cut {
        format!("{line} … [strato: line cut at {LINE_MAX} bytes]").into()
    } else {
        line.into()
    }
}

impl ProcessEngine {
    pub fn command(&self, dir: &Path, args: &[String]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .envs(std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(inherited)));
        if std::env::var_os("GOGC").is_none() {
            cmd.env("GOGC", ENGINE_GOGC);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs `args` in `dir`, logging user lines under `step`. Stops gracefully when `stop` fires.
    pub async fn run(
        &self,
        dir: &Path,
        args: &[String],
        step: &str,
        capture_stdout: bool,
        logs: &LogHub,
        stop: &mut StopRx,
    ) -> std::io::Result<Outcome> {
        if let Some(reason) = *stop.borrow() {
            return Ok(Outcome {
                stopped: Some(reason),
                ..Outcome::default()
            });
        }
        let mut child = self.command(dir, args).spawn()?;
        let pid = child.id();
        let stdout = child.stdout.take().map(BufReader::new);
        let stderr = child.stderr.take().map(BufReader::new);
        let user_text = Arc::new(Mutex::new(String::new()));
        let debug = Arc::new(Mutex::new(Tail::new(DEBUG_MAX)));
        let captured = Arc::new(Mutex::new(String::new()));
        let capture_over = Arc::new(std::sync::atomic::AtomicBool::new(false));

        let out_task = stdout.map(|r| {
            let (logs, user_text, captured, over, step) = (
                logs.clone(),
                user_text.clone(),
                captured.clone(),
                capture_over.clone(),
                step.to_owned(),
            );
            let max = if capture_stdout { CAPTURE_MAX } else { LINE_MAX };
            crate::spawn(read_lines(r, max, move |line, cut| {
                if capture_stdout {
                    if let Ok(mut c) = captured.lock() {
                        if cut || c.len() + line.len() >= CAPTURE_MAX {
                            // Keep reading (the engine must not block on a full pipe) but nothing more.
                            over.store(true, std::sync::atomic::Ordering::Relaxed);
                            c.clear();
                            c.shrink_to_fit();
                        } else if !over.load(std::sync::atomic::Ordering::Relaxed) {
                            c.push_str(line);
                            c.push('\n');
                        }
                    }
                } else {
                    let line = shown(line, cut);
                    logs.emit(LogStream::Stdout, &step, &line);
                    push_capped(&user_text, &logs.redactor.redact(&line));
                }
            }))
        });
        let err_task = stderr.map(|r| {
            let (logs, user_text, debug, step) =
                (logs.clone(), user_text.clone(), debug.clone(), step.to_owned());
            let mut splitter = StderrSplitter::default();
            crate::spawn(read_lines(r, LINE_MAX, move |line, cut| {
                let line = shown(line, cut);
                if splitter.is_debug(&line) {
                    if let Ok(mut d) = debug.lock() {
                        d.push_line(&logs.redactor.redact(&line));
                    }
                } else {
                    logs.emit(LogStream::Stderr, &step, &line);
                    push_capped(&user_text, &logs.redactor.redact(&line));
                }
            }))
        });

        let mut stopped = None;
        let status = tokio::select! {
            s = child.wait() => s?,
            reason = wait_stop(stop) => {
                stopped = Some(reason);
                logs.emit(LogStream::Strato, step, &format!("stopping the engine ({reason:?}): interrupt sent, waiting up to {}s", self.grace.as_secs()));
                if let Some(pid) = pid {
                    // SIGINT makes Terraform stop, write its state and release the state lock.
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGINT);
                }
                match tokio::time::timeout(self.grace, child.wait()).await {
                    Ok(s) => s?,
                    Err(_) => {
                        logs.emit(LogStream::Strato, step, "the engine did not stop within the grace period; killing it");
                        child.kill().await?;
                        child.wait().await?
                    }
                }
            }
        };
        // The readers end at EOF; a grandchild holding the pipe open must not hang the runner.
        for t in [out_task, err_task].into_iter().flatten() {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        if capture_over.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(std::io::Error::other(format!(
                "its output was over the {} MiB the runner keeps in memory",
                CAPTURE_MAX / (1024 * 1024)
            )));
        }
        let take = |m: &Arc<Mutex<String>>| m.lock().map(|s| s.clone()).unwrap_or_default();
        let debug = std::mem::replace(
            &mut *debug.lock().unwrap_or_else(|p| p.into_inner()),
            Tail::new(0),
        );
        Ok(Outcome {
            code: status.code(),
            stdout: take(&captured),
            user_text: take(&user_text),
            stopped,
            debug: debug.finish(),
        })
    }
}

impl crate::ports::Engine for ProcessEngine {
    fn with_env(&self, env: Vec<(String, String)>) -> Self {
        Self { env, ..self.clone() }
    }

    async fn version_text(&self) -> std::io::Result<String> {
        let out = self
            .command(&std::env::temp_dir(), &["version".into(), "-json".into()])
            .output()
            .await?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    async fn run(
        &self,
        dir: &Path,
        args: &[String],
        step: &str,
        capture_stdout: bool,
        logs: &LogHub,
        stop: &mut StopRx,
    ) -> std::io::Result<Outcome> {
        ProcessEngine::run(self, dir, args, step, capture_stdout, logs, stop).await
    }
}

#[cfg(test)]
mod tests;
