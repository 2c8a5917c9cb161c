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
mod stamp;
mod upx;

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
pub use moto::{MotoServer, TestEnv, shared_moto, unique_prefix};

/// A spec of the `fixture-vpc-sg` template (`tests/fixtures/vpc-sg`, 0.1.0) named `name`, on AWS in
/// us-east-1 with no variables: the cluster the moto and engine tests record and run.
pub fn fixture_spec(name: &str) -> strato_domain::model::ClusterSpec {
    use strato_domain::model::{CloudProvider, ClusterSpec, TemplateRef};
    ClusterSpec {
        name: name.parse().expect("a valid cluster name"),
        template: TemplateRef {
            name: "fixture-vpc-sg".into(),
            version: "0.1.0".into(),
        },
        provider: CloudProvider::Aws,
        region: "us-east-1".into(),
        variables: Default::default(),
        target: None,
    }
}
