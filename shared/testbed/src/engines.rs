//! The engine matrix: the PyPI bed's Terraform 0.15 with AWS provider 3.39 (`tf015`) and the machine's
//! modern engine (`modern`: Terraform >= 1.5 with an AWS provider >= 5 from a filesystem mirror), each with
//! the environment its `init` needs to install the provider without copying it; and the engine devstack
//! and the demo run ([`preferred_engine`]).

use std::path::PathBuf;

use crate::{ModernEngine, Tools, modern_engine, modern_engine_at, modern_engine_or_skip, tools};

/// One engine of the matrix.
#[derive(Debug, Clone)]
pub struct TestEngine {
    /// `tf015` or `modern` (test-name suffixes), `user` for a `STRATO_TERRAFORM` without a modern mirror.
    pub name: &'static str,
    pub terraform: PathBuf,
    /// The engine's version as it prints it (`0.15.0-rc2`, `1.11.4`).
    pub version: String,
    /// The AWS provider version its mirror offers (`3.39.0`, `5.100.0`).
    pub provider_version: String,
    env: Vec<(String, String)>,
}

impl TestEngine {
    /// The PyPI bed: Terraform 0.15 (always the installed one, whatever `STRATO_TERRAFORM` says) and the
    /// provider 3.39 mirror. Panics when the bed cannot be installed, as every engine test does.
    pub fn tf015() -> Self {
        let tools = tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"));
        Self::bed(tools, tools.bed_terraform.clone(), "tf015", "0.15.0-rc2")
    }

    /// The machine's modern engine, or `None` after a loud `SKIPPED <test>: …` line.
    pub fn modern_or_skip(test: &str) -> Option<Self> {
        modern_engine_or_skip(test).map(Self::modern)
    }

    /// A modern engine: its mirror is unpacked, so `init` links the provider (`.terraform/providers/…`
    /// becomes a symlink into the mirror; nothing of its 675 MB is copied) and no plugin cache is needed.
    pub fn modern(m: &ModernEngine) -> Self {
        Self {
            name: "modern",
            terraform: m.terraform.clone(),
            version: m.version.clone(),
            provider_version: m.provider_version.clone(),
            env: m.engine_env(),
        }
    }

    fn bed(tools: &Tools, terraform: PathBuf, name: &'static str, version: &str) -> Self {
        let mut env = tools.engine_env();
        // The bed's mirror holds the provider zipped: without the shared cache every `init` unpacks 170 MB.
        if let Ok(cache) = tools.shared_plugin_cache() {
            env.push(("TF_PLUGIN_CACHE_DIR".into(), cache.display().to_string()));
        }
        Self {
            name,
            terraform,
            version: version.to_owned(),
            provider_version: "3.39.0".into(),
            env,
        }
    }

    /// Environment every invocation needs (CLI config with the mirror, plugin cache, no calls home).
    pub fn engine_env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }

    /// Terraform >= 1.5 with an AWS provider >= 5.
    pub fn is_modern(&self) -> bool {
        self.name == "modern"
    }

    /// One line for logs: which engine and provider, from where.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, Terraform {} with AWS provider {})",
            self.terraform.display(),
            self.name,
            self.version,
            self.provider_version
        )
    }
}

/// The engine devstack and the demo run:
/// - `STRATO_TERRAFORM` set: that engine; with the AWS provider >= 5 of `STRATO_PROVIDER_MIRROR` (or of a
///   known mirror of this machine kind) when it is >= 1.5, else with the bed's provider 3.39 mirror;
/// - else the machine's modern engine when present;
/// - else the PyPI bed (Terraform 0.15, provider 3.39).
pub fn preferred_engine() -> Result<TestEngine, String> {
    let tools = tools().map_err(|e| format!("installing the test bed failed: {e}"))?;
    if let Some(user) = std::env::var_os("STRATO_TERRAFORM").filter(|v| !v.is_empty()) {
        let user = PathBuf::from(user);
        return Ok(match modern_engine_at(user.clone()) {
            Ok(m) => TestEngine::modern(&m),
            Err(why) => {
                tracing::info!(%why, "STRATO_TERRAFORM is not a modern engine with a mirror: using the bed's provider 3.39 mirror");
                TestEngine::bed(tools, user, "user", "(STRATO_TERRAFORM)")
            }
        });
    }
    Ok(match modern_engine() {
        Ok(m) => TestEngine::modern(m),
        Err(why) => {
            tracing::info!(%why, "no modern engine: using the PyPI bed's Terraform 0.15");
            TestEngine::tf015()
        }
    })
}

/// Stack of the thread an async matrix test runs on: the runner's lifecycle, awaited directly by a test, is
/// a deep future in a debug build, and it overflowed libtest's 2 MiB test thread (an abort, in CI).
pub const TEST_STACK: usize = 32 * 1024 * 1024;

/// Runs an async test body under a multi-threaded runtime on a thread of its own with [`TEST_STACK`] bytes
/// of stack (named after the test, so a panic names it); the body's panic is the test's.
pub fn run_async<F: std::future::Future<Output = ()>>(name: &str, body: impl FnOnce() -> F + Send) {
    std::thread::scope(|s| {
        let joined = std::thread::Builder::new()
            .name(name.to_owned())
            .stack_size(TEST_STACK)
            .spawn_scoped(s, move || {
                tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime")
                    .block_on(body())
            })
            .expect("a test thread")
            .join();
        if let Err(panic) = joined {
            std::panic::resume_unwind(panic);
        }
    });
}

/// Wall time of one matrix test, printed (`cargo test -- --nocapture` shows it) for CI's timing table.
pub fn report_time(test: &str, started: std::time::Instant) {
    eprintln!("ENGINE-MATRIX {test}: {:.1}s", started.elapsed().as_secs_f64());
}

/// Runs a test body once per engine, as the tests `<name>::tf015` and `<name>::modern` (the latter a loud
/// `SKIPPED` where the machine has no modern engine), each printing its wall time.
///
/// ```ignore
/// engine_matrix!(async create_update_delete => body);   // async fn body(engine: TestEngine)
/// engine_matrix!(sync network_applies => body);          // fn body(engine: TestEngine)
/// engine_matrix!(async create_update_delete);            // the module and its body fn share the name
/// ```
#[macro_export]
macro_rules! engine_matrix {
    // Terraform 0.15 only: a slow scenario whose engine-facing steps another matrix test already runs on
    // the modern engine (keeps the test command's wall time in check on 2 cores).
    (async $name:ident, tf015_only) => {
        mod $name {
            #[test]
            fn tf015() {
                let name = concat!(stringify!($name), "::tf015");
                $crate::run_async(name, || async {
                    let t = std::time::Instant::now();
                    super::$name($crate::TestEngine::tf015()).await;
                    $crate::report_time(name, t);
                });
            }
        }
    };
    (async $name:ident) => {
        $crate::engine_matrix!(async $name => $name);
    };
    (sync $name:ident) => {
        $crate::engine_matrix!(sync $name => $name);
    };
    (async $name:ident => $body:ident) => {
        mod $name {
            #[test]
            fn tf015() {
                let name = concat!(stringify!($name), "::tf015");
                $crate::run_async(name, || async {
                    let t = std::time::Instant::now();
                    super::$body($crate::TestEngine::tf015()).await;
                    $crate::report_time(name, t);
                });
            }
            #[test]
            fn modern() {
                let name = concat!(stringify!($name), "::modern");
                let Some(engine) = $crate::TestEngine::modern_or_skip(name) else {
                    return;
                };
                $crate::run_async(name, || async {
                    let t = std::time::Instant::now();
                    super::$body(engine).await;
                    $crate::report_time(name, t);
                });
            }
        }
    };
    (sync $name:ident => $body:ident) => {
        mod $name {
            #[test]
            fn tf015() {
                let t = std::time::Instant::now();
                super::$body($crate::TestEngine::tf015());
                $crate::report_time(concat!(stringify!($name), "::tf015"), t);
            }
            #[test]
            fn modern() {
                let name = concat!(stringify!($name), "::modern");
                let Some(engine) = $crate::TestEngine::modern_or_skip(name) else {
                    return;
                };
                let t = std::time::Instant::now();
                super::$body(engine);
                $crate::report_time(name, t);
            }
        }
    };
}
