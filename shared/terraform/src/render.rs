//! Rendering of Terraform inputs. Everything is written as JSON (`*.tfvars.json`, `*.tf.json`) through
//! serde, never by pasting user values into HCL, so no value can become code.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use strato_domain::error::Error;
use strato_domain::validate::ValidatedSpec;

/// Values Strato itself supplies for a template's `managed` variables.
#[derive(Debug, Clone, Default)]
pub struct ManagedValues(pub BTreeMap<String, Value>);

/// `terraform.tfvars.json`: the validated variables plus managed ones the template declares.
pub fn tfvars_json(spec: &ValidatedSpec, managed: &ManagedValues) -> Result<String, Error> {
    let mut vars: Map<String, Value> = spec
        .variables()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for name in spec.managed() {
        if let Some(v) = managed.0.get(name) {
            vars.insert(name.clone(), v.clone());
        }
    }
    serde_json::to_string_pretty(&vars).map_err(|source| Error::Render {
        what: "terraform.tfvars.json",
        source,
    })
}

/// Which generation of S3-backend settings the engine understands. Terraform 1.6 / OpenTofu 1.6 replaced
/// `endpoint`/`dynamodb_endpoint`/`force_path_style` with `endpoints {}` and `use_path_style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineDialect {
    Legacy,
    Modern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl EngineVersion {
    /// Parses `terraform version -json` output (`{"terraform_version": "0.15.0-rc2", …}`); OpenTofu prints the
    /// same key.
    pub fn from_version_json(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(strip_write_prefix(text)).ok()?;
        Self::parse(v.get("terraform_version")?.as_str()?)
    }

    pub fn parse(s: &str) -> Option<Self> {
        let core = s.trim().trim_start_matches('v').split(['-', '+']).next()?;
        let mut it = core.split('.').map(|p| p.parse::<u32>().ok());
        Some(Self {
            major: it.next()??,
            minor: it.next()??,
            patch: it.next().flatten().unwrap_or(0),
        })
    }

    fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        (self.major, self.minor, self.patch) >= (major, minor, patch)
    }

    pub fn dialect(&self) -> EngineDialect {
        if self.at_least(1, 6, 0) {
            EngineDialect::Modern
        } else {
            EngineDialect::Legacy
        }
    }

    /// `plan -refresh-only` arrived in 0.15.4.
    pub fn supports_refresh_only(&self) -> bool {
        self.at_least(0, 15, 4)
    }

    /// `-json` machine-readable UI for plan/apply arrived in 0.15.3.
    pub fn supports_json_ui(&self) -> bool {
        self.at_least(0, 15, 3)
    }
}

/// Some engine builds (the offline Terraform 0.15) prefix a write to stdout with `o:` and to stderr with
/// `e:`. Strips that marker from the start of a captured output or a line; real engines never print it.
pub fn strip_write_prefix(text: &str) -> &str {
    text.strip_prefix("o:")
        .or_else(|| text.strip_prefix("e:"))
        .unwrap_or(text)
}

/// Where a cluster's state lives: the platform bucket or the customer's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendConfig {
    pub bucket: String,
    pub key: String,
    pub region: String,
    pub lock_table: String,
    /// Emulator endpoint (moto); `None` in AWS.
    pub endpoint: Option<String>,
    /// Encrypt state objects with this KMS key (SSE-KMS). Without it, the backend's `encrypt` sends SSE-S3
    /// (AES256) on every write, overriding the bucket's default SSE-KMS.
    pub kms_key_id: Option<String>,
    /// The profile of the shared credentials file (named by the engine's `AWS_SHARED_CREDENTIALS_FILE`)
    /// holding the backend's own credentials (the run's state session, scoped to this cluster's state), so
    /// the providers' credentials never reach the state bucket and vice versa. `None`: the environment's.
    ///
    /// Only the profile's name is in the block, never a key: a saved plan records the backend
    /// configuration, and the run that applies it after an approval (hours or days later) must use its own
    /// fresh session, not the planning run's expired one; nor may the sealed plan carry a credential.
    pub profile: Option<String>,
}

pub use crate::state_key::state_key;

impl BackendConfig {
    /// `strato_backend.tf.json`, a complete `terraform { backend "s3" {} }` block.
    pub fn tf_json(&self, dialect: EngineDialect) -> Result<String, Error> {
        let mut s3 = json!({
            "bucket": self.bucket,
            "key": self.key,
            "region": self.region,
            "dynamodb_table": self.lock_table,
            "encrypt": true,
        });
        // Workspaces (which Strato never uses) are listed at init; under the state's own prefix that listing
        // stays within what a cluster-scoped state session may list.
        if let Some((prefix, _)) = self.key.rsplit_once('/') {
            s3["workspace_key_prefix"] = json!(format!("{prefix}/workspaces"));
        }
        if let Some(p) = &self.profile {
            s3["profile"] = json!(p);
        }
        if let Some(k) = &self.kms_key_id {
            s3["kms_key_id"] = json!(k);
        }
        if let Some(ep) = &self.endpoint {
            let extra = match dialect {
                EngineDialect::Legacy => json!({
                    "endpoint": ep, "dynamodb_endpoint": ep, "sts_endpoint": ep, "force_path_style": true,
                    "skip_credentials_validation": true, "skip_metadata_api_check": true,
                    "skip_region_validation": true,
                }),
                EngineDialect::Modern => json!({
                    "endpoints": { "s3": ep, "dynamodb": ep, "sts": ep }, "use_path_style": true,
                    "skip_credentials_validation": true, "skip_metadata_api_check": true,
                    "skip_region_validation": true, "skip_requesting_account_id": true,
                }),
            };
            merge(&mut s3, extra);
        }
        let doc = json!({ "terraform": { "backend": { "s3": s3 } } });
        serde_json::to_string_pretty(&doc).map_err(|source| Error::Render {
            what: "backend configuration",
            source,
        })
    }
}

/// AWS services the templates use; each gets the emulator endpoint when one is configured.
const AWS_SERVICES: &[&str] = &[
    "ec2",
    "iam",
    "eks",
    "sts",
    "s3",
    "dynamodb",
    "kms",
    "elb",
    "elbv2",
    "autoscaling",
];

/// Which generation of AWS provider settings a provider version understands: 4.0 renamed
/// `s3_force_path_style` to `s3_use_path_style` (5.x no longer has the old name). The engine version says
/// nothing about it (a modern engine may run a template pinned to 3.x), so the runner reads the version
/// `init` selected from the stage's lock file ([`ProviderDialect::from_lock_file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderDialect {
    /// AWS provider < 4.
    Legacy,
    /// AWS provider >= 4.
    Modern,
}

/// The lock file's provider address of the AWS provider.
pub const AWS_PROVIDER_ADDRESS: &str = "registry.terraform.io/hashicorp/aws";

impl ProviderDialect {
    pub fn for_version(version: &str) -> Option<Self> {
        let v = EngineVersion::parse(version)?;
        Some(if v.major >= 4 { Self::Modern } else { Self::Legacy })
    }

    /// The AWS provider version `init` selected, from `.terraform.lock.hcl`'s
    /// `provider "registry.terraform.io/hashicorp/aws" { version = "…" }` (`None`: no AWS provider).
    pub fn selected_aws_version(lock_file: &str) -> Option<String> {
        let body: hcl::Body = hcl::from_str(lock_file).ok()?;
        body.blocks()
            .filter(|b| b.identifier() == "provider")
            .find(|b| {
                b.labels()
                    .first()
                    .is_some_and(|l| l.as_str() == AWS_PROVIDER_ADDRESS)
            })?
            .body()
            .attributes()
            .find(|a| a.key() == "version")
            .and_then(|a| match a.expr() {
                hcl::Expression::String(s) => Some(s.clone()),
                _ => None,
            })
    }
}

/// `strato_provider_override.tf.json` for the AWS provider < 4 (see [`aws_provider_tf_json`]).
pub fn aws_provider_override_tf_json(endpoint: &str) -> Result<String, Error> {
    aws_provider_tf_json(endpoint, ProviderDialect::Legacy)
}

/// `strato_provider_override.tf.json`: points the AWS provider at an emulator. Terraform merges `_override`
/// files into the module's own `provider "aws"` block, so templates stay free of emulator settings.
/// Written in the provider's `dialect`: an override file's unknown argument is dropped without a word by
/// the engine (only a plain file's is an error), so a wrong dialect would silently lose path-style S3.
pub fn aws_provider_tf_json(endpoint: &str, dialect: ProviderDialect) -> Result<String, Error> {
    let endpoints: Map<String, Value> = AWS_SERVICES
        .iter()
        .map(|s| ((*s).to_owned(), json!(endpoint)))
        .collect();
    let path_style = match dialect {
        ProviderDialect::Legacy => "s3_force_path_style",
        ProviderDialect::Modern => "s3_use_path_style",
    };
    let mut aws = json!({
        "endpoints": [endpoints],
        "skip_credentials_validation": true,
        "skip_requesting_account_id": true,
        "skip_metadata_api_check": true,
    });
    aws[path_style] = json!(true);
    let doc = json!({ "provider": { "aws": aws } });
    serde_json::to_string_pretty(&doc).map_err(|source| Error::Render {
        what: "provider override",
        source,
    })
}

fn merge(base: &mut Value, extra: Value) {
    if let (Value::Object(b), Value::Object(e)) = (base, extra) {
        b.extend(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strato_domain::catalog::Catalogs;
    use strato_domain::ids::ClusterId;
    use strato_domain::model::{CloudProvider, ClusterSpec, TemplateRef};
    use strato_domain::template::sample::eks;
    use strato_domain::validate::validate;

    fn validated(vars: Value) -> ValidatedSpec {
        let spec = ClusterSpec {
            name: "prod".parse().unwrap(),
            template: TemplateRef {
                name: "aws-eks-basic".into(),
                version: "1.2.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "us-east-1".into(),
            variables: serde_json::from_value(vars).unwrap(),
            target: None,
        };
        validate(&spec, &eks(), Catalogs::builtin()).unwrap()
    }

    #[test]
    fn tfvars_round_trip_hostile_strings_exactly() {
        let hostile = [
            "\"; resource \"aws_instance\" \"x\" {}",
            "${file(\"/etc/passwd\")}",
            "%{ for x in y }x%{ endfor }",
            "line1\nline2\r\n}",
            "back\\slash",
            "ünïcødé ✓ 日本語 \u{202e}rtl",
            "<<EOF\nheredoc\nEOF",
        ];
        let tags: Map<String, Value> = hostile
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("k{i}"), json!(s)))
            .collect();
        let v = validated(json!({"owner_email": "a@b", "tags": tags}));
        let managed = ManagedValues(
            [
                ("cluster_name".to_owned(), json!("prod")),
                ("unknown".to_owned(), json!(1)),
            ]
            .into(),
        );
        let text = tfvars_json(&v, &managed).unwrap();
        let back: Map<String, Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(back["tags"], Value::Object(tags));
        assert_eq!(back["cluster_name"], "prod");
        assert!(
            !back.contains_key("unknown"),
            "only managed variables the template declares"
        );
        assert_eq!(back["node_instance_type"], "t3.medium");
        // The raw text never contains an unescaped quote or newline from a value.
        assert!(!text.contains("line1\nline2"));
    }

    #[test]
    fn state_keys_are_per_tenant_cluster_and_stage() {
        let c: ClusterId = ClusterId::generate();
        let k = state_key(&"acme".parse().unwrap(), &c, "cluster");
        assert_eq!(k, format!("tenants/acme/clusters/{c}/cluster.tfstate"));
        assert_ne!(k, state_key(&"acme2".parse().unwrap(), &c, "cluster"));
        assert_ne!(k, state_key(&"acme".parse().unwrap(), &c, "addons"));
    }

    #[test]
    fn backend_dialects() {
        let cfg = BackendConfig {
            bucket: "state".into(),
            key: "tenants/a/clusters/c/x.tfstate".into(),
            region: "us-east-1".into(),
            lock_table: "locks".into(),
            endpoint: Some("http://127.0.0.1:5000".into()),
            profile: None,
            kms_key_id: None,
        };
        let legacy: Value = serde_json::from_str(&cfg.tf_json(EngineDialect::Legacy).unwrap()).unwrap();
        let s3 = &legacy["terraform"]["backend"]["s3"];
        assert_eq!(s3["bucket"], "state");
        assert_eq!(s3["dynamodb_table"], "locks");
        assert_eq!(s3["encrypt"], true);
        assert_eq!(s3["endpoint"], "http://127.0.0.1:5000");
        assert_eq!(s3["force_path_style"], true);
        assert!(s3.get("endpoints").is_none());
        let modern: Value = serde_json::from_str(&cfg.tf_json(EngineDialect::Modern).unwrap()).unwrap();
        let s3 = &modern["terraform"]["backend"]["s3"];
        assert_eq!(s3["endpoints"]["dynamodb"], "http://127.0.0.1:5000");
        assert_eq!(s3["use_path_style"], true);
        assert!(s3.get("endpoint").is_none() && s3.get("force_path_style").is_none());
        let aws = BackendConfig {
            endpoint: None,
            ..cfg
        };
        let plain: Value = serde_json::from_str(&aws.tf_json(EngineDialect::Modern).unwrap()).unwrap();
        let plain = &plain["terraform"]["backend"]["s3"];
        assert_eq!(plain.as_object().unwrap().len(), 6, "{plain}");
        assert_eq!(plain["workspace_key_prefix"], "tenants/a/clusters/c/workspaces");
        let scoped = BackendConfig {
            profile: Some("strato-state".into()),
            ..aws
        };
        for dialect in [EngineDialect::Legacy, EngineDialect::Modern] {
            let v: Value = serde_json::from_str(&scoped.tf_json(dialect).unwrap()).unwrap();
            let s3 = &v["terraform"]["backend"]["s3"];
            assert_eq!(s3["profile"], "strato-state");
            for key in ["access_key", "secret_key", "token"] {
                assert!(s3.get(key).is_none(), "no credential in the block: {s3}");
            }
        }
        let kms = BackendConfig {
            kms_key_id: Some("arn:aws:kms:us-east-1:1:key/k".into()),
            profile: None,
            ..scoped
        };
        let with: Value = serde_json::from_str(&kms.tf_json(EngineDialect::Modern).unwrap()).unwrap();
        assert_eq!(
            with["terraform"]["backend"]["s3"]["kms_key_id"],
            "arn:aws:kms:us-east-1:1:key/k"
        );
    }

    #[test]
    fn engine_versions() {
        let tf015 = EngineVersion::from_version_json(
            r#"{"terraform_version":"0.15.0-rc2","platform":"linux_amd64"}"#,
        )
        .unwrap();
        assert_eq!(
            tf015,
            EngineVersion {
                major: 0,
                minor: 15,
                patch: 0
            }
        );
        assert_eq!(tf015.dialect(), EngineDialect::Legacy);
        assert!(!tf015.supports_refresh_only() && !tf015.supports_json_ui());
        let tofu = EngineVersion::parse("1.8.3").unwrap();
        assert_eq!(tofu.dialect(), EngineDialect::Modern);
        assert!(tofu.supports_refresh_only());
        assert!(EngineVersion::parse("0.15.4").unwrap().supports_refresh_only());
        assert!(EngineVersion::parse("0.15.3").unwrap().supports_json_ui());
        assert_eq!(
            EngineVersion::parse("v1.5").unwrap().dialect(),
            EngineDialect::Legacy
        );
        assert!(EngineVersion::parse("banana").is_none());
        assert!(EngineVersion::from_version_json("Terraform v0.15.0").is_none());
        let prefixed =
            EngineVersion::from_version_json("o:{\n  \"terraform_version\": \"0.15.0-rc2\"\n}\n").unwrap();
        assert_eq!(prefixed.minor, 15);
        assert_eq!(strip_write_prefix("e:Error: x"), "Error: x");
        assert_eq!(strip_write_prefix("ok: fine"), "ok: fine");
    }

    #[test]
    fn provider_override_points_every_service_at_the_emulator() {
        let doc: Value =
            serde_json::from_str(&aws_provider_override_tf_json("http://127.0.0.1:1").unwrap()).unwrap();
        let eps = &doc["provider"]["aws"]["endpoints"][0];
        for s in AWS_SERVICES {
            assert_eq!(eps[*s], "http://127.0.0.1:1", "{s}");
        }
        assert_eq!(doc["provider"]["aws"]["s3_force_path_style"], true);
        let v5: Value = serde_json::from_str(
            &aws_provider_tf_json("http://127.0.0.1:1", ProviderDialect::Modern).unwrap(),
        )
        .unwrap();
        let aws = &v5["provider"]["aws"];
        assert_eq!(aws["s3_use_path_style"], true);
        assert!(aws.get("s3_force_path_style").is_none(), "{aws}");
        assert_eq!(aws["endpoints"][0]["s3"], "http://127.0.0.1:1");
    }

    #[test]
    fn provider_dialect_from_the_lock_file() {
        let lock = r#"# This file is maintained automatically by "terraform init".
provider "registry.terraform.io/hashicorp/helm" {
  version = "2.4.1"
}

provider "registry.terraform.io/hashicorp/aws" {
  version     = "5.100.0"
  constraints = ">= 3.39.0"
  hashes = [
    "h1:abc=",
  ]
}
"#;
        let v = ProviderDialect::selected_aws_version(lock).unwrap();
        assert_eq!(v, "5.100.0");
        assert_eq!(ProviderDialect::for_version(&v), Some(ProviderDialect::Modern));
        assert_eq!(
            ProviderDialect::for_version("4.0.0"),
            Some(ProviderDialect::Modern)
        );
        assert_eq!(
            ProviderDialect::for_version("3.39.0"),
            Some(ProviderDialect::Legacy)
        );
        assert_eq!(ProviderDialect::selected_aws_version("provider \"x\" {}"), None);
        assert_eq!(ProviderDialect::selected_aws_version(""), None);
    }
}
