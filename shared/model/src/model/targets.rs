//! Where a cluster is provisioned when it is not the platform's AWS account: a target per cloud.
//!
//! Stored and requested as `target: {provider, ...}`; a target without `provider` is AWS (the shape every
//! stored AWS target has). Each cloud's identifiers are newtypes that only parse when well-formed, so a
//! target in hand is always usable as is. How the engine gets each cloud's credentials: AWS assumes the
//! role (external id, or the run's OIDC token with `auth: web_identity`), GCP and Azure exchange the run's
//! OIDC token (workload identity federation, federated credentials), DigitalOcean and Linode use the API
//! token the tenant registered (`PUT /v1/tenant/cloud-tokens/{provider}`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::CloudProvider;

/// A customer's AWS account the runner provisions into: it assumes `role_arn` with the external id Strato
/// issued the tenant (never chosen by the caller, never stored on the cluster: see `strato_domain::sealed`), or with
/// the run's identity token (`auth: web_identity`), and gives the temporary credentials to the engine. With
/// `state_bucket`, state lives in the customer's account too (bucket and lock table created with versioning
/// and encryption if missing).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TargetAccount {
    pub role_arn: String,
    /// How the role is assumed; `assume_role` (external id) unless said otherwise.
    #[serde(default, skip_serializing_if = "AwsAuth::is_default")]
    pub auth: AwsAuth,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<String>,
    /// Defaults to `<state_bucket>-locks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_table: Option<String>,
    /// Region of the role session and the state bucket; defaults to the cluster's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// How the runner assumes an AWS target's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AwsAuth {
    /// `sts:AssumeRole` with the tenant's issued external id.
    #[default]
    AssumeRole,
    /// `sts:AssumeRoleWithWebIdentity` with the stage's Strato identity token (the role trusts Strato's
    /// OIDC provider for `sub` under the tenant).
    WebIdentity,
}

impl AwsAuth {
    fn is_default(&self) -> bool {
        *self == AwsAuth::AssumeRole
    }
}

/// A GCP project reached through workload identity federation: the run's token is exchanged at Google's
/// STS for the pool's federated token, which impersonates `service_account`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcpTarget {
    pub project_id: GcpProjectId,
    pub workload_identity_provider: WorkloadIdentityProvider,
    pub service_account: ServiceAccountEmail,
    /// A GCS bucket of the customer's for the state (native locking); Strato's S3 otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<String>,
}

/// An Azure subscription reached through a federated credential on an app registration or managed
/// identity (`client_id`) in the Entra tenant `tenant_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AzureTarget {
    pub tenant_id: Guid,
    pub client_id: Guid,
    pub subscription_id: Guid,
    /// A storage account and container of the customer's for the state (blob lease locking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_storage_account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_container: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_resource_group: Option<String>,
}

/// DigitalOcean or Linode: the engine uses the API token the tenant registered; optionally the state in
/// the customer's S3-compatible object storage (Spaces, Linode Object Storage).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_bucket: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_region: Option<String>,
}

impl TokenTarget {
    /// The state bucket's region: its own, else the cluster's.
    pub fn state_region<'a>(&'a self, cluster_region: &'a str) -> &'a str {
        self.state_region.as_deref().unwrap_or(cluster_region)
    }
}

/// The S3 endpoint of a cloud's object storage in `region` (a Spaces region such as `nyc3`, a Linode
/// Object Storage cluster such as `us-east-1`).
pub fn object_storage_endpoint(cloud: CloudProvider, region: &str) -> String {
    match cloud {
        CloudProvider::Linode => format!("https://{region}.linodeobjects.com"),
        _ => format!("https://{region}.digitaloceanspaces.com"),
    }
}

/// A cluster's target, per cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Aws(TargetAccount),
    Gcp(GcpTarget),
    Azure(AzureTarget),
    Digitalocean(TokenTarget),
    Linode(TokenTarget),
}

impl Target {
    pub fn provider(&self) -> CloudProvider {
        match self {
            Target::Aws(_) => CloudProvider::Aws,
            Target::Gcp(_) => CloudProvider::Gcp,
            Target::Azure(_) => CloudProvider::Azure,
            Target::Digitalocean(_) => CloudProvider::Digitalocean,
            Target::Linode(_) => CloudProvider::Linode,
        }
    }

    /// The AWS account, when this is one.
    pub fn aws(&self) -> Option<&TargetAccount> {
        match self {
            Target::Aws(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the engine's credentials come from the run's OIDC identity token (so the dispatcher mints
    /// tokens for the run), and for which audience.
    pub fn identity_audience(&self) -> Option<String> {
        match self {
            Target::Aws(t) if t.auth == AwsAuth::WebIdentity => Some(crate::run_identity::AUD_AWS.to_owned()),
            Target::Gcp(g) => Some(crate::run_identity::gcp_audience(
                g.workload_identity_provider.as_str(),
            )),
            Target::Azure(_) => Some(crate::run_identity::AUD_AZURE.to_owned()),
            _ => None,
        }
    }

    /// Where the state of a cluster with this target lives when it is the customer's own storage, and the
    /// command that lists its versions there (Strato holds no credentials of that storage between runs);
    /// `None` when the state is in Strato's bucket.
    pub fn customer_state_versions(&self, folder: &str, cluster_region: &str) -> Option<String> {
        let (what, how) = match self {
            Target::Aws(t) => {
                let b = t.state_bucket.as_ref()?;
                (
                    format!("your S3 bucket {b}"),
                    format!("aws s3api list-object-versions --bucket {b} --prefix {folder}/"),
                )
            }
            Target::Gcp(g) => {
                let b = g.state_bucket.as_ref()?;
                (
                    format!("your Cloud Storage bucket {b}"),
                    format!("gcloud storage ls --all-versions gs://{b}/{folder}/"),
                )
            }
            Target::Azure(a) => {
                let account = a.state_storage_account.as_ref()?;
                let container = a.state_container.as_deref().unwrap_or("tfstate");
                (
                    format!("your storage account {account} (container {container})"),
                    format!(
                        "az storage blob list --auth-mode login --account-name {account} \
                         --container-name {container} --prefix {folder}/ --include v"
                    ),
                )
            }
            Target::Digitalocean(t) | Target::Linode(t) => {
                let b = t.state_bucket.as_ref()?;
                let endpoint = object_storage_endpoint(self.provider(), t.state_region(cluster_region));
                (
                    format!("your bucket {b} at {endpoint}"),
                    format!(
                        "aws s3api list-object-versions --endpoint-url {endpoint} --bucket {b} --prefix {folder}/"
                    ),
                )
            }
        };
        Some(format!(
            "this cluster's Terraform state is in {what}, not in Strato's bucket; list and restore its \
             versions there: {how}"
        ))
    }

    /// The customer's own storage of the state, as the tenant reads it (`Cloud Storage bucket acme-tf`);
    /// `None` when the state is in Strato's bucket.
    pub fn customer_storage(&self, cluster_region: &str) -> Option<String> {
        Some(match self {
            Target::Aws(t) => format!("S3 bucket {}", t.state_bucket.as_ref()?),
            Target::Gcp(g) => format!("Cloud Storage bucket {}", g.state_bucket.as_ref()?),
            Target::Azure(a) => format!(
                "storage account {} (container {})",
                a.state_storage_account.as_ref()?,
                a.state_container.as_deref().unwrap_or("tfstate")
            ),
            Target::Digitalocean(t) | Target::Linode(t) => format!(
                "bucket {} at {}",
                t.state_bucket.as_ref()?,
                object_storage_endpoint(self.provider(), t.state_region(cluster_region))
            ),
        })
    }

    /// Whether the state lives in the customer's own storage rather than Strato's bucket.
    pub fn customer_state(&self) -> bool {
        match self {
            Target::Aws(t) => t.state_bucket.is_some(),
            Target::Gcp(g) => g.state_bucket.is_some(),
            Target::Azure(a) => a.state_storage_account.is_some(),
            Target::Digitalocean(t) | Target::Linode(t) => t.state_bucket.is_some(),
        }
    }
}

impl From<TargetAccount> for Target {
    fn from(t: TargetAccount) -> Self {
        Target::Aws(t)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut v = match self {
            // Without `provider`: the shape AWS targets have always been stored in.
            Target::Aws(t) => return t.serialize(s),
            Target::Gcp(t) => serde_json::to_value(t),
            Target::Azure(t) => serde_json::to_value(t),
            Target::Digitalocean(t) | Target::Linode(t) => serde_json::to_value(t),
        }
        .map_err(S::Error::custom)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("provider".into(), self.provider().as_str().into());
        }
        v.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
        let provider = match v.as_object_mut().and_then(|m| m.remove("provider")) {
            None => CloudProvider::Aws,
            Some(serde_json::Value::String(p)) => p.parse().map_err(D::Error::custom)?,
            Some(_) => return Err(D::Error::custom("target.provider must be a string")),
        };
        let e = D::Error::custom;
        Ok(match provider {
            CloudProvider::Aws => Target::Aws(serde_json::from_value(v).map_err(e)?),
            CloudProvider::Gcp => Target::Gcp(serde_json::from_value(v).map_err(e)?),
            CloudProvider::Azure => Target::Azure(serde_json::from_value(v).map_err(e)?),
            CloudProvider::Digitalocean => Target::Digitalocean(serde_json::from_value(v).map_err(e)?),
            CloudProvider::Linode => Target::Linode(serde_json::from_value(v).map_err(e)?),
        })
    }
}

macro_rules! parsed_string {
    ($name:ident, $check:path) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                $check(&s).map(|()| Self(s))
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::try_from(s.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// What each identifier must look like, said the way a 422 tells the fix.
pub const GCP_PROJECT_RULE: &str =
    "a GCP project id: 6-30 characters of a-z, 0-9 and '-', starting with a letter, not ending with '-'";
pub const WIF_PROVIDER_RULE: &str = "projects/<project number>/locations/global/workloadIdentityPools/<pool id>/providers/<provider id> \
     (the pool's provider resource name; ids 4-32 characters of a-z, 0-9 and '-')";
pub const SERVICE_ACCOUNT_RULE: &str = "a service account email: <name>@<project>.iam.gserviceaccount.com";
pub const GUID_RULE: &str =
    "a GUID: 8-4-4-4-12 hexadecimal digits, e.g. 00000000-0000-0000-0000-000000000000";

fn lower_dash(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn check_project(s: &str) -> Result<(), String> {
    let ok = (6..=30).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && lower_dash(s);
    ok.then_some(()).ok_or_else(|| GCP_PROJECT_RULE.into())
}

fn check_wif_provider(s: &str) -> Result<(), String> {
    let p: Vec<&str> = s.split('/').collect();
    let id_ok = |id: &str| (4..=32).contains(&id.len()) && lower_dash(id) && !id.starts_with('-');
    let ok = p.len() == 8
        && p[0] == "projects"
        && !p[1].is_empty()
        && p[1].len() <= 20
        && p[1].chars().all(|c| c.is_ascii_digit())
        && p[2] == "locations"
        && p[3] == "global"
        && p[4] == "workloadIdentityPools"
        && id_ok(p[5])
        && p[6] == "providers"
        && id_ok(p[7]);
    ok.then_some(()).ok_or_else(|| WIF_PROVIDER_RULE.into())
}

fn check_service_account(s: &str) -> Result<(), String> {
    let ok = s.len() <= 100
        && s.split_once('@').is_some_and(|(name, domain)| {
            (6..=30).contains(&name.len())
                && lower_dash(name)
                && domain
                    .strip_suffix(".iam.gserviceaccount.com")
                    .is_some_and(|project| check_project(project).is_ok())
        });
    ok.then_some(()).ok_or_else(|| SERVICE_ACCOUNT_RULE.into())
}

fn check_guid(s: &str) -> Result<(), String> {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()));
    ok.then_some(()).ok_or_else(|| GUID_RULE.into())
}

parsed_string!(GcpProjectId, check_project);
parsed_string!(WorkloadIdentityProvider, check_wif_provider);
parsed_string!(ServiceAccountEmail, check_service_account);
parsed_string!(Guid, check_guid);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_without_provider_is_aws_and_is_stored_as_it_always_was() {
        let t: Target =
            serde_json::from_value(serde_json::json!({"role_arn": "arn:aws:iam::123456789012:role/r"}))
                .unwrap();
        let Target::Aws(a) = &t else { panic!("{t:?}") };
        assert_eq!(a.auth, AwsAuth::AssumeRole);
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            serde_json::json!({"role_arn": "arn:aws:iam::123456789012:role/r"})
        );
        let w: Target = serde_json::from_value(serde_json::json!({"provider": "aws", "role_arn": "arn:aws:iam::123456789012:role/r", "auth": "web_identity"})).unwrap();
        assert_eq!(w.identity_audience().as_deref(), Some("sts.amazonaws.com"));
        assert_eq!(t.identity_audience(), None);
    }

    #[test]
    fn each_clouds_target_round_trips_with_its_provider() {
        let gcp = serde_json::json!({"provider": "gcp", "project_id": "acme-prod-1",
            "workload_identity_provider": "projects/123456789/locations/global/workloadIdentityPools/strato/providers/strato-oidc",
            "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com"});
        let azure = serde_json::json!({"provider": "azure", "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "client_id": "00000000-0000-0000-0000-000000000001", "subscription_id": "a1b2c3d4-0000-0000-0000-00000000abcd"});
        let digitalocean = serde_json::json!({"provider": "digitalocean"});
        let linode =
            serde_json::json!({"provider": "linode", "state_bucket": "tfstate", "state_region": "us-east-1"});
        for v in [gcp, azure, digitalocean, linode] {
            let t: Target = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(t.provider().as_str(), v["provider"]);
            assert_eq!(serde_json::to_value(&t).unwrap(), v);
        }
    }

    #[test]
    fn a_customers_state_is_said_to_be_in_its_storage_with_the_command_that_lists_its_versions() {
        let folder = "tenants/acme/clusters/cl-1";
        let t: Target = serde_json::from_value(serde_json::json!(
            {"provider": "digitalocean", "state_bucket": "acme-tf", "state_region": "ams3"}
        ))
        .unwrap();
        let said = t.customer_state_versions(folder, "fra1").unwrap();
        assert!(
            said.contains("acme-tf at https://ams3.digitaloceanspaces.com"),
            "{said}"
        );
        assert!(said.contains("--prefix tenants/acme/clusters/cl-1/"), "{said}");
        let gcs: Target = serde_json::from_value(serde_json::json!({"provider": "gcp",
            "project_id": "acme-prod-1",
            "workload_identity_provider": "projects/1/locations/global/workloadIdentityPools/strato/providers/oidc",
            "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com", "state_bucket": "acme-gcs"}))
        .unwrap();
        assert!(
            gcs.customer_state_versions(folder, "us-central1")
                .unwrap()
                .contains("gs://acme-gcs/tenants/acme/clusters/cl-1/")
        );
        // Strato's bucket: nothing to say.
        let plain: Target = serde_json::from_value(serde_json::json!({"provider": "linode"})).unwrap();
        assert_eq!(plain.customer_state_versions(folder, "us-east"), None);
        let aws: Target =
            serde_json::from_value(serde_json::json!({"role_arn": "arn:aws:iam::1:role/x"})).unwrap();
        assert_eq!(aws.customer_state_versions(folder, "us-east-1"), None);
    }

    #[test]
    fn cloud_identifiers_parse_only_when_well_formed() {
        assert!("acme-prod-1".parse::<GcpProjectId>().is_ok());
        for bad in ["Acme", "ab", "1acme-prod", "acme-prod-"] {
            assert!(bad.parse::<GcpProjectId>().is_err(), "{bad}");
        }
        assert!(
            "projects/1/locations/global/workloadIdentityPools/pool/providers/prov"
                .parse::<WorkloadIdentityProvider>()
                .is_ok()
        );
        for bad in [
            "projects/acme/locations/global/workloadIdentityPools/pool/providers/prov",
            "projects/1/locations/us/workloadIdentityPools/pool/providers/prov",
            "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/prov",
            "projects/1/locations/global/workloadIdentityPools/pool",
        ] {
            assert!(bad.parse::<WorkloadIdentityProvider>().is_err(), "{bad}");
        }
        assert!(
            "terraform@acme-prod-1.iam.gserviceaccount.com"
                .parse::<ServiceAccountEmail>()
                .is_ok()
        );
        assert!("terraform@gmail.com".parse::<ServiceAccountEmail>().is_err());
        assert!("72f988bf-86f1-41af-91ab-2d7cd011db47".parse::<Guid>().is_ok());
        for bad in [
            "72f988bf86f141af91ab2d7cd011db47",
            "72f988bf-86f1-41af-91ab-2d7cd011db4",
            "zzzzzzzz-86f1-41af-91ab-2d7cd011db47",
        ] {
            assert!(bad.parse::<Guid>().is_err(), "{bad}");
        }
        // A stored target with a malformed id does not load as a target.
        let bad = serde_json::json!({"provider": "azure", "tenant_id": "x", "client_id": "x", "subscription_id": "x"});
        assert!(serde_json::from_value::<Target>(bad).is_err());
    }
}
