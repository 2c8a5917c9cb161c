//! Runs one engine command: output read line by line without ever blocking the engine, graceful stop
//! (SIGINT, grace period, kill) when the operation is cancelled, times out or the task is stopped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strato_domain::messages::LogStream;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::watch;

use crate::logs::{LogHub, StderrSplitter};

/// Why the operation must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Cancelled,
    TimedOut,
    Terminated,
}

pub type StopRx = watch::Receiver<Option<StopReason>>;

/// How the engine is run: binary and extra environment (credentials, region, mirror config…).
#[derive(Debug, Clone)]
pub struct Engine {
    pub bin: PathBuf,
    pub env: Vec<(String, String)>,
    /// Variables removed from the inherited environment (e.g. the runner's own credentials when a target
    /// account's credentials are given).
    pub env_remove: Vec<String>,
    pub grace: Duration,
}

/// Result of one command.
#[derive(Debug, Default)]
pub struct Outcome {
    pub code: Option<i32>,
    /// Captured stdout (only for commands run with `capture_stdout`, which is then not logged).
    pub stdout: String,
    /// The user-visible output (redacted), for error classification.
    pub user_text: String,
    pub stopped: Option<StopReason>,
    pub debug: Vec<u8>,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.stopped.is_none()
    }
}

/// Bounded memory for the classifier's view of the output: keep the tail.
const USER_TEXT_MAX: usize = 256 * 1024;

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

async fn read_lines<R: AsyncRead + Unpin>(mut r: BufReader<R>, mut each: impl FnMut(&str)) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&buf);
                each(text.trim_end_matches(['\n', '\r']));
            }
        }
    }
}

impl Engine {
    pub fn command(&self, dir: &Path, args: &[String]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).current_dir(dir);
        for k in &self.env_remove {
            cmd.env_remove(k);
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
        let debug = Arc::new(Mutex::new(Vec::<u8>::new()));
        let captured = Arc::new(Mutex::new(String::new()));

        let out_task = stdout.map(|r| {
            let (logs, user_text, captured, step) =
                (logs.clone(), user_text.clone(), captured.clone(), step.to_owned());
            tokio::spawn(read_lines(r, move |line| {
                if capture_stdout {
                    if let Ok(mut c) = captured.lock() {
                        c.push_str(line);
                        c.push('\n');
                    }
                } else {
                    logs.emit(LogStream::Stdout, &step, line);
                    push_capped(&user_text, &logs.redactor.redact(line));
                }
            }))
        });
        let err_task = stderr.map(|r| {
            let (logs, user_text, debug, step) =
                (logs.clone(), user_text.clone(), debug.clone(), step.to_owned());
            let mut splitter = StderrSplitter::default();
            tokio::spawn(read_lines(r, move |line| {
                if splitter.is_debug(line) {
                    if let Ok(mut d) = debug.lock() {
                        d.extend_from_slice(logs.redactor.redact(line).as_bytes());
                        d.push(b'\n');
                    }
                } else {
                    logs.emit(LogStream::Stderr, &step, line);
                    push_capped(&user_text, &logs.redactor.redact(line));
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
        let take = |m: &Arc<Mutex<String>>| m.lock().map(|s| s.clone()).unwrap_or_default();
        Ok(Outcome {
            code: status.code(),
            stdout: take(&captured),
            user_text: take(&user_text),
            stopped,
            debug: debug.lock().map(|d| d.clone()).unwrap_or_default(),
        })
    }
}

async fn wait_stop(stop: &mut StopRx) -> StopReason {
    loop {
        if let Some(r) = *stop.borrow_and_update() {
            return r;
        }
        if stop.changed().await.is_err() {
            // The sender is gone: nobody can ask to stop any more.
            std::future::pending::<()>().await;
        }
    }
}
