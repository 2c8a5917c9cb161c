//! The `target` member of a create or estimate: a customer's account on its cloud, each cloud's fields.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Field;

/// Where a cluster is provisioned: a customer's account on its cloud. `provider` says which (absent: aws);
/// each cloud takes its own fields, the others' are refused.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = TargetRequest)]
pub(crate) struct TargetBody {
    /// `aws` (default), `gcp`, `azure`, `digitalocean` or `linode`: the cluster's provider.
    #[serde(default)]
    #[schema(value_type = Option<crate::schema::CloudProvider>)]
    pub provider: Field<String>,
    /// aws (required): `arn:aws:iam::<account>:role/<name>`, the role the runner assumes.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub role_arn: Field<String>,
    /// aws: `assume_role` (default: with your external id) or `web_identity` (with the run's Strato identity
    /// token; the role trusts Strato's OIDC provider, see `GET /v1/tenant/target-access`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub auth: Field<String>,
    /// aws, gcp, digitalocean, linode: the customer's own state bucket (S3, GCS, Spaces, Object Storage).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub state_bucket: Field<String>,
    /// aws: the state lock table (with `state_bucket`; default `<state_bucket>-locks`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub lock_table: Field<String>,
    /// aws: the region of the role session, state bucket and lock table.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region: Field<String>,
    /// gcp (required): the project id.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Field<String>,
    /// gcp (required): `projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub workload_identity_provider: Field<String>,
    /// gcp (required): the service account the federated identity impersonates (its email).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub service_account: Field<String>,
    /// azure (required): the Entra tenant (directory) id, a GUID.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub tenant_id: Field<String>,
    /// azure (required): the client id of the app registration or managed identity with the federated
    /// credential, a GUID.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub client_id: Field<String>,
    /// azure (required): the subscription, a GUID.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub subscription_id: Field<String>,
    /// azure: the customer's storage account for the state (with `state_container`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub state_storage_account: Field<String>,
    /// azure: the blob container for the state.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub state_container: Field<String>,
    /// azure: the storage account's resource group.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub state_resource_group: Field<String>,
    /// digitalocean, linode: the region of the state bucket.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub state_region: Field<String>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}
