//! The offline test bed: moto (AWS emulator) and the Terraform engine + AWS provider mirror, installed by
//! this code into `.tools/` on first use, and private moto servers for test processes.

mod azurite;
mod clouds;
mod engines;
mod fake_clouds;
mod install;
mod modern;
mod moto;
mod moto_run;

pub use azurite::{AZURITE_PACKAGE, AzureBed, Azurite, BlobAnswer, azure_bed};
pub use clouds::{
    CloudBed, FAKE_GCS_PACKAGE, FakeGcs, NULL_PROVIDER_PACKAGE, NULL_PROVIDER_VERSION, cloud_bed,
    stand_in_cli_config,
};
pub use engines::{TEST_STACK, TestEngine, preferred_engine, report_time, run_async};
pub use fake_clouds::{FakeClouds, Knobs as FakeCloudKnobs};
pub use install::{
    CHECKOV_VERSION, SCHEMATHESIS_VERSION, Tools, ToolsError, checkov, schemathesis, tools, tools_dir,
};
pub use modern::{ModernEngine, modern_engine, modern_engine_at, modern_engine_or_skip};
pub use moto::{MotoServer, TestEnv, shared_moto};
