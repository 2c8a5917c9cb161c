//! The per-operation workspace: the verified bundle unpacked into a private temp directory, one generated
//! root module per stage (`stages/<stage>/main.tf.json`), and the rendered inputs next to it. Every file is
//! JSON produced by `strato_domain` (no user value is pasted into HCL).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use strato_domain::template::Template;
use strato_terraform::backend::StateBackend;
use strato_terraform::compose::{ComposedStage, compose_template};
use strato_terraform::modules::ModuleInterface;
use strato_terraform::render::{
    BackendConfig, EngineDialect, EngineVersion, ProviderDialect, aws_provider_tf_json,
};

use crate::RunnerError;
use crate::credentials::EngineCredentials;

pub const TFVARS_FILE: &str = "terraform.tfvars.json";
pub const BACKEND_FILE: &str = "strato_backend.tf.json";
/// Declares the AWS provider at the stage root when an emulator endpoint is used (modules without their own
/// provider block inherit it).
pub const ROOT_PROVIDER_FILE: &str = "strato_provider.tf.json";
/// Overrides a module's own `provider "aws"` block with the emulator endpoint.
pub const MODULE_PROVIDER_OVERRIDE_FILE: &str = "strato_provider_override.tf.json";
pub const PLAN_FILE: &str = "strato.tfplan";
/// The run's shared credentials file (one profile per session), at the workspace's root: named to the
/// engine by `AWS_SHARED_CREDENTIALS_FILE`, so no configuration file (nor a saved plan) holds a key.
pub const CREDENTIALS_FILE: &str = ".strato-aws-credentials";
/// The run's identity files (identity tokens, credential configurations), owner-only, at the workspace's
/// root: named to the engine by its environment, like the credentials file.
pub const IDENTITY_DIR: &str = ".strato-identity";
/// Written by `init`: the provider versions it selected. A template that carries one (at its bundle's
/// root) has it copied into every stage, and `init` must then keep to it (`-lockfile=readonly`).
pub const LOCK_FILE: &str = strato_terraform::provider_lock::LOCK_FILE;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunnerError {
    let what = what.into();
    move |source| RunnerError::Io { what, source }
}

pub struct Workspace {
    /// Removed when dropped.
    pub dir: tempfile::TempDir,
    pub template: Template,
    pub stages: Vec<ComposedStage>,
    /// The template pins its providers: every stage starts with its lock file.
    pub locked: bool,
}

impl Workspace {
    pub fn bundle_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn stage_dir(&self, stage: &str) -> PathBuf {
        self.dir.path().join("stages").join(stage)
    }

    /// Reads the unpacked bundle's module interfaces, composes every stage and writes its root module.
    pub fn compose(dir: tempfile::TempDir, template: Template) -> Result<Self, RunnerError> {
        let mut interfaces = BTreeMap::new();
        for stage in &template.manifest.stages {
            for m in &stage.modules {
                if !interfaces.contains_key(m) {
                    let iface = ModuleInterface::read_dir(&dir.path().join("modules").join(m))?;
                    interfaces.insert(m.clone(), iface);
                }
            }
        }
        let stages = compose_template(&template, &interfaces, &|m| format!("../../modules/{m}"))?;
        let lock = std::fs::read(dir.path().join(LOCK_FILE)).ok();
        let ws = Self {
            dir,
            template,
            stages,
            locked: lock.is_some(),
        };
        for s in &ws.stages {
            let d = ws.stage_dir(&s.stage);
            std::fs::create_dir_all(&d).map_err(io(d.display().to_string()))?;
            std::fs::write(d.join("main.tf.json"), s.main_tf_json_text()?)
                .map_err(io("writing main.tf.json"))?;
            if let Some(lock) = &lock {
                std::fs::write(d.join(LOCK_FILE), lock).map_err(io("writing the lock file"))?;
            }
        }
        Ok(ws)
    }

    /// Emulator mode: the root of every stage declares the AWS provider pointed at `endpoint`, and every
    /// module that declares its own `provider "aws"` gets an override file doing the same, in the settings
    /// `dialect` of the provider version `init` selected.
    pub fn point_provider_at(
        &self,
        endpoint: &str,
        max_retries: Option<u32>,
        dialect: ProviderDialect,
    ) -> Result<(), RunnerError> {
        let mut doc: Value = serde_json::from_str(&aws_provider_tf_json(endpoint, dialect)?)
            .map_err(|e| RunnerError::Config(format!("provider override: {e}")))?;
        if let Some(n) = max_retries {
            doc["provider"]["aws"]["max_retries"] = Value::from(n);
        }
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        // A template of another cloud (a stand-in) has no AWS resource: a root AWS provider would only make
        // every command load its schema.
        let aws = self
            .template
            .manifest
            .providers
            .contains(&strato_domain::model::CloudProvider::Aws);
        for s in self.stages.iter().filter(|_| aws) {
            std::fs::write(self.stage_dir(&s.stage).join(ROOT_PROVIDER_FILE), &text)
                .map_err(io("writing provider file"))?;
        }
        let modules = self.dir.path().join("modules");
        for entry in std::fs::read_dir(&modules).map_err(io(modules.display().to_string()))? {
            let dir = entry.map_err(io("reading modules"))?.path();
            if dir.is_dir() && declares_aws_provider(&dir) {
                std::fs::write(dir.join(MODULE_PROVIDER_OVERRIDE_FILE), &text)
                    .map_err(io("writing provider override"))?;
            }
        }
        Ok(())
    }

    /// The run's shared credentials file ([`CREDENTIALS_FILE`]).
    pub fn credentials_file(&self) -> PathBuf {
        self.dir.path().join(CREDENTIALS_FILE)
    }

    /// Adds `creds` as `profile` to the run's credentials file (created owner-only).
    pub fn add_credentials(&self, profile: &str, creds: &EngineCredentials) -> Result<(), RunnerError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.credentials_file();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(io("opening the run's credentials file"))?;
        f.write_all(creds.profile_section(profile).as_bytes())
            .map_err(io("writing the run's credentials file"))
    }

    /// Writes `contents` as `name` in the run's identity folder (created owner-only; the file too) and
    /// returns its path. Replaces an earlier file of that name.
    pub fn write_private(&self, name: &str, contents: &[u8]) -> Result<PathBuf, RunnerError> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = self.dir.path().join(IDENTITY_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io("creating the run's identity folder"))?;
        let path = dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(io(format!("writing {name}")))?;
        f.write_all(contents).map_err(io(format!("writing {name}")))?;
        Ok(path)
    }

    /// A stage's backend block for a state location other than S3 with a lock table (see
    /// [`strato_terraform::backend`]), for `engine`; refused when the engine is too old for it.
    pub fn write_state_backend(
        &self,
        stage: &str,
        backend: &StateBackend,
        engine: &EngineVersion,
    ) -> Result<(), RunnerError> {
        std::fs::write(self.stage_dir(stage).join(BACKEND_FILE), backend.tf_json(engine)?)
            .map_err(io("writing backend configuration"))
    }

    pub fn write_backend(
        &self,
        stage: &str,
        cfg: &BackendConfig,
        dialect: EngineDialect,
    ) -> Result<(), RunnerError> {
        std::fs::write(self.stage_dir(stage).join(BACKEND_FILE), cfg.tf_json(dialect)?)
            .map_err(io("writing backend configuration"))
    }

    /// `terraform.tfvars.json` of a stage: the rendered template variables (`rendered`, from
    /// `render::tfvars_json`) and earlier stages' outputs, restricted to the root variables the stage declares.
    pub fn write_tfvars(
        &self,
        stage: &ComposedStage,
        rendered: &Map<String, Value>,
        earlier_outputs: &Map<String, Value>,
    ) -> Result<(), RunnerError> {
        let mut vars = Map::new();
        for name in stage.variables.keys() {
            // A template variable wins over an earlier stage's output of the same name.
            if let Some(v) = rendered.get(name).or_else(|| earlier_outputs.get(name)) {
                vars.insert(name.clone(), v.clone());
            }
        }
        let text = serde_json::to_string_pretty(&Value::Object(vars)).unwrap_or_default();
        std::fs::write(self.stage_dir(&stage.stage).join(TFVARS_FILE), text).map_err(io("writing tfvars"))
    }
}

fn declares_aws_provider(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(|e| e.ok().map(|e| e.path())).any(|p| {
        p.extension().is_some_and(|x| x == "tf")
            && !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with("_override.tf"))
            && std::fs::read_to_string(&p)
                .ok()
                .and_then(|t| hcl::from_str::<hcl::Body>(&t).ok())
                .is_some_and(|b| {
                    b.blocks().any(|blk| {
                        blk.identifier() == "provider"
                            && blk.labels().first().is_some_and(|l| l.as_str() == "aws")
                    })
                })
    })
}
