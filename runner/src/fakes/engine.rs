//! A scripted engine: the commands a test expects, each with what it does (exit code, output, files it
//! writes, a hang until the run stops it), and a record of what the lifecycle actually ran.

use std::path::Path;
use std::sync::{Arc, Mutex};

use strato_domain::messages::LogStream;

use super::lock;
use crate::logs::LogHub;
use crate::outcome::{Outcome, StopRx, wait_stop};
use crate::ports::Engine;
use crate::workspace::PLAN_FILE;

/// An engine command, by what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Init,
    /// `plan` (with `-out`; a drift check's with `-refresh-only` where the engine has it).
    Plan,
    /// `show -json` of the saved plan.
    Show,
    Apply,
    /// `apply -refresh-only` after an apply.
    Refresh,
    Output,
    Destroy,
    StatePull,
    StateList,
    /// `import ADDRESS ID` (adoption after a false failure).
    Import,
    /// `force-unlock -force ID` (a dead run's lock in a customer's state storage).
    ForceUnlock,
    Other,
}

impl Cmd {
    pub fn of(args: &[String]) -> Self {
        let has = |flag: &str| args.iter().any(|a| a == flag);
        match args.first().map(String::as_str) {
            Some("init") => Self::Init,
            Some("plan") => Self::Plan,
            Some("show") => Self::Show,
            Some("apply") if has("-refresh-only") => Self::Refresh,
            Some("apply") => Self::Apply,
            Some("output") => Self::Output,
            Some("destroy") => Self::Destroy,
            Some("import") => Self::Import,
            Some("force-unlock") => Self::ForceUnlock,
            Some("state") => match args.get(1).map(String::as_str) {
                Some("pull") => Self::StatePull,
                Some("list") => Self::StateList,
                _ => Self::Other,
            },
            _ => Self::Other,
        }
    }
}

type Hook = Arc<dyn Fn(&Path) + Send + Sync>;

/// What one scripted command does.
#[derive(Clone, Default)]
pub struct Reply {
    code: i32,
    stdout: String,
    stderr: String,
    debug: String,
    files: Vec<(String, Vec<u8>)>,
    hang: bool,
    wedged: bool,
    on_start: Option<Hook>,
}

impl Reply {
    /// Exit 0, no output.
    pub fn ok() -> Self {
        Self::default()
    }

    /// Exit 1 with `stderr` (the engine's diagnostics, which the runner classifies).
    pub fn fail(stderr: &str) -> Self {
        Self::ok().code(1).stderr(stderr)
    }

    /// Exit 0 printing `v` as JSON (`show -json`, `output -json`, `state pull`).
    pub fn json(v: &serde_json::Value) -> Self {
        Self::ok().stdout(&v.to_string())
    }

    /// `plan -detailed-exitcode` with changes: exit 2, the saved plan (`plan`'s bytes) written.
    pub fn changes(plan: &[u8]) -> Self {
        Self::ok().code(2).file(PLAN_FILE, plan)
    }

    /// `plan -detailed-exitcode` without changes: exit 0, the saved plan written.
    pub fn no_changes() -> Self {
        Self::ok().file(PLAN_FILE, b"empty plan")
    }

    /// Runs until the run stops it (cancel, time limit, SIGTERM), as an engine interrupted mid-apply.
    pub fn hang() -> Self {
        Self {
            hang: true,
            ..Self::ok().code(1)
        }
    }

    /// Never returns, stop or not: an engine (or a call of the runner) that is wedged.
    pub fn wedged() -> Self {
        Self {
            wedged: true,
            ..Self::ok()
        }
    }

    pub fn code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }

    pub fn stdout(mut self, text: &str) -> Self {
        self.stdout = text.to_owned();
        self
    }

    pub fn stderr(mut self, text: &str) -> Self {
        self.stderr = text.to_owned();
        self
    }

    /// Debug-log lines (stderr lines the runner keeps out of the user log).
    pub fn debug(mut self, text: &str) -> Self {
        self.debug = text.to_owned();
        self
    }

    /// A file the command writes in its stage's directory.
    pub fn file(mut self, name: &str, bytes: &[u8]) -> Self {
        self.files.push((name.to_owned(), bytes.to_vec()));
        self
    }

    /// Runs `f` with the stage's directory when the command starts: what the lifecycle wrote there (inputs,
    /// backend, the plan file) can be read, and a cancel requested or a SIGTERM sent meanwhile.
    pub fn on_start(mut self, f: impl Fn(&Path) + Send + Sync + 'static) -> Self {
        self.on_start = Some(Arc::new(f));
        self
    }
}

struct Expected {
    stage: Option<String>,
    cmd: Cmd,
    reply: Reply,
}

/// One command the lifecycle ran.
#[derive(Debug, Clone)]
pub struct Call {
    /// The stage directory's name.
    pub stage: String,
    pub cmd: Cmd,
    pub args: Vec<String>,
    /// The step its lines were logged under.
    pub step: String,
    /// The engine's environment.
    pub env: Vec<(String, String)>,
}

#[derive(Default)]
struct Script {
    expected: Vec<Expected>,
    calls: Vec<Call>,
    unexpected: Vec<Call>,
    version: String,
}

/// The scripted engine. Each command the lifecycle runs takes the first expected entry of its kind (and
/// stage, if the entry names one), so commands that run at the same time (`output` ∥ `apply
/// -refresh-only`) match whatever their order; a command nothing expects fails (exit 1) and is kept for
/// [`FakeEngine::assert_done`]. Clones share the script.
#[derive(Clone)]
pub struct FakeEngine {
    script: Arc<Mutex<Script>>,
    env: Vec<(String, String)>,
}

impl Default for FakeEngine {
    fn default() -> Self {
        Self::new("1.8.3")
    }
}

impl FakeEngine {
    /// An engine that says it is `version` (`0.15.0-rc2` cannot apply saved plans; before 0.15.4 there is
    /// no `-refresh-only`).
    pub fn new(version: &str) -> Self {
        Self {
            script: Arc::new(Mutex::new(Script {
                version: version.to_owned(),
                ..Script::default()
            })),
            env: Vec::new(),
        }
    }

    /// Expects `cmd` in any stage.
    pub fn expect(&self, cmd: Cmd, reply: Reply) -> &Self {
        self.push(None, cmd, reply)
    }

    /// Expects `cmd` in `stage`.
    pub fn expect_in(&self, stage: &str, cmd: Cmd, reply: Reply) -> &Self {
        self.push(Some(stage.to_owned()), cmd, reply)
    }

    fn push(&self, stage: Option<String>, cmd: Cmd, reply: Reply) -> &Self {
        lock(&self.script).expected.push(Expected { stage, cmd, reply });
        self
    }

    /// Every command run, in the order they started.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.script).calls.clone()
    }

    /// The commands run, as `stage:cmd` (`main:Plan`), in order.
    pub fn commands(&self) -> Vec<String> {
        self.calls()
            .iter()
            .map(|c| format!("{}:{:?}", c.stage, c.cmd))
            .collect()
    }

    /// How many times `cmd` ran.
    /// The first `cmd` run (panics if none was).
    pub fn first(&self, cmd: Cmd) -> Call {
        let first = self.calls().into_iter().find(|c| c.cmd == cmd);
        first.unwrap_or_else(|| panic!("no {cmd:?} ran: {:?}", self.commands()))
    }

    pub fn count(&self, cmd: Cmd) -> usize {
        self.calls().iter().filter(|c| c.cmd == cmd).count()
    }

    /// Panics unless every expected command ran and nothing unexpected did.
    pub fn assert_done(&self) {
        let s = lock(&self.script);
        let left: Vec<String> = s
            .expected
            .iter()
            .map(|e| format!("{}:{:?}", e.stage.as_deref().unwrap_or("*"), e.cmd))
            .collect();
        let extra: Vec<String> = s
            .unexpected
            .iter()
            .map(|c| format!("{}:{:?} {:?}", c.stage, c.cmd, c.args))
            .collect();
        assert!(
            left.is_empty() && extra.is_empty(),
            "expected but not run: {left:?}; run but not expected: {extra:?}"
        );
    }

    /// The reply for `call`, consumed; `None` when nothing expects it.
    fn take(&self, call: Call) -> Option<Reply> {
        let mut s = lock(&self.script);
        let at = s
            .expected
            .iter()
            .position(|e| e.cmd == call.cmd && e.stage.as_ref().is_none_or(|st| *st == call.stage));
        match at {
            Some(i) => {
                s.calls.push(call);
                Some(s.expected.remove(i).reply)
            }
            None => {
                s.calls.push(call.clone());
                s.unexpected.push(call);
                None
            }
        }
    }
}

impl Engine for FakeEngine {
    fn with_env(&self, env: Vec<(String, String)>) -> Self {
        Self {
            script: self.script.clone(),
            env,
        }
    }

    async fn version_text(&self) -> std::io::Result<String> {
        let version = lock(&self.script).version.clone();
        Ok(serde_json::json!({ "terraform_version": version }).to_string())
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
        // As the real engine: a stop that has already fired runs nothing.
        if let Some(reason) = *stop.borrow() {
            return Ok(Outcome {
                stopped: Some(reason),
                ..Outcome::default()
            });
        }
        let call = Call {
            stage: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            cmd: Cmd::of(args),
            args: args.to_vec(),
            step: step.to_owned(),
            env: self.env.clone(),
        };
        let Some(reply) = self.take(call) else {
            let text = format!("unscripted command {args:?}");
            logs.emit(LogStream::Stderr, step, &text);
            return Ok(Outcome {
                code: Some(1),
                user_text: text,
                ..Outcome::default()
            });
        };
        if let Some(hook) = &reply.on_start {
            hook(dir);
        }
        for (name, bytes) in &reply.files {
            std::fs::write(dir.join(name), bytes)?;
        }
        let mut user_text = String::new();
        let mut user_line = |stream: LogStream, line: &str| {
            logs.emit(stream, step, line);
            user_text.push_str(&logs.redactor.redact(line));
            user_text.push('\n');
        };
        if !capture_stdout {
            reply.stdout.lines().for_each(|l| user_line(LogStream::Stdout, l));
        }
        reply.stderr.lines().for_each(|l| user_line(LogStream::Stderr, l));
        if reply.wedged {
            std::future::pending::<()>().await;
        }
        let stopped = if reply.hang {
            Some(wait_stop(stop).await)
        } else {
            None
        };
        Ok(Outcome {
            code: Some(reply.code),
            stdout: if capture_stdout {
                reply.stdout
            } else {
                String::new()
            },
            user_text,
            stopped,
            debug: logs.redactor.redact(&reply.debug).into_bytes(),
        })
    }
}
