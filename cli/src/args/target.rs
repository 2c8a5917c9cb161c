//! Where a cluster is provisioned when it is your own cloud account (`target`), and the tenant's cloud
//! tokens: the flags of `clusters create`/`estimate` and `strato cloud-tokens`.

use clap::{Args, Subcommand};

/// Your own cloud account as the request's `target`: a file with the whole object (any cloud), or the
/// flags of the cluster's cloud. The API checks it (a 422 names each field).
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArgs {
    /// The request's `target` object from a JSON file (`-`: stdin), for any cloud, e.g.
    /// {"provider":"gcp","project_id":"…","workload_identity_provider":"…","service_account":"…"}; its
    /// `provider` defaults to the cluster's. Not with the other target flags.
    #[arg(long, value_name = "FILE")]
    pub target_file: Option<String>,
    /// AWS: the role Strato assumes in your account (with `strato target-access`'s external id).
    #[arg(long)]
    pub target_role_arn: Option<String>,
    /// The bucket for your cluster's Terraform state in your account: S3 (AWS, with --target-role-arn),
    /// GCS (GCP), Spaces (DigitalOcean) or Object Storage (Linode).
    #[arg(long)]
    pub target_state_bucket: Option<String>,
    /// AWS, with --target-role-arn: the DynamoDB table that locks your state.
    #[arg(long)]
    pub target_lock_table: Option<String>,
    /// The region of your state bucket (AWS: and of the role session; DigitalOcean, Linode: e.g. nyc3).
    #[arg(long)]
    pub target_region: Option<String>,
    /// GCP: the project to provision into.
    #[arg(long, value_name = "PROJECT_ID")]
    pub gcp_project: Option<String>,
    /// GCP: the workload identity pool provider that trusts Strato's tokens
    /// (projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>).
    #[arg(long, value_name = "RESOURCE")]
    pub gcp_provider: Option<String>,
    /// GCP: the service account the federated identity impersonates (name@project.iam.gserviceaccount.com).
    #[arg(long, value_name = "EMAIL")]
    pub gcp_service_account: Option<String>,
    /// Azure: the Entra tenant (directory) id of the app registration or managed identity.
    #[arg(long, value_name = "GUID")]
    pub azure_tenant: Option<String>,
    /// Azure: the client id of the app registration or managed identity with the federated credential.
    #[arg(long, value_name = "GUID")]
    pub azure_client: Option<String>,
    /// Azure: the subscription to provision into.
    #[arg(long, value_name = "GUID")]
    pub azure_subscription: Option<String>,
}

/// `strato cloud-tokens …`: the API tokens of clouds without federation (DigitalOcean, Linode).
#[derive(Debug, Subcommand)]
pub enum CloudTokens {
    /// Which tokens are set, when and by whom (never a value).
    List,
    /// Set or rotate a cloud's API token (admin). The token is read from stdin's first line, or asked for
    /// without echo on a terminal: never a flag (flags show up in `ps` and shell history). A set replaces
    /// the record: give the storage key pair again when rotating.
    Set {
        /// digitalocean or linode.
        provider: String,
        /// The access key id of your Spaces / Object Storage keys, for a target keeping its state there;
        /// its secret is read from stdin's second line, or asked for without echo.
        #[arg(long, value_name = "ID")]
        storage_access_key_id: Option<String>,
    },
    /// Remove a cloud's API token (admin).
    Delete {
        /// digitalocean or linode.
        provider: String,
    },
}
