//! `strato admin …`: the platform operator's commands (the API's `/v1/admin` routes; an operator token).

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum Admin {
    /// Tenants: register, list, read, change their quotas, budget and defaults, suspend and resume.
    #[command(subcommand, alias = "tenant")]
    Tenants(AdminTenants),
    /// Clusters of every tenant (read-only), filtered by tenant, state and template.
    Clusters(AdminClusters),
    /// Operations of every tenant (read-only), filtered by tenant, cluster, kind and status.
    Operations(AdminOperations),
    /// The template catalog: every version's standing; publish, deprecate, yank.
    #[command(subcommand, alias = "template")]
    Templates(AdminTemplates),
}

#[derive(Debug, Subcommand)]
pub enum AdminTemplates {
    /// Every template and version with its standing (active, deprecated, yanked), who set it and why.
    List,
    /// Pack a template directory (its template.toml and the modules its stages use) and publish it.
    Publish {
        /// The template's directory (holding template.toml), e.g. templates/catalog/aws-eks-basic.
        dir: std::path::PathBuf,
        /// Where its modules are (default: `<dir>/../../modules`, the repository's layout).
        #[arg(long)]
        modules: Option<std::path::PathBuf>,
    },
    /// Deprecate a version: new clusters cannot use it, clusters on it keep working and may move to it.
    Deprecate {
        /// The template's name, e.g. aws-eks-basic.
        name: String,
        /// The version, e.g. 1.1.0.
        version: String,
        /// Why (shown in the catalog).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Yank a version: no cluster may start on it or move to it; clusters on it keep running. Final.
    Yank {
        /// The template's name, e.g. aws-eks-basic.
        name: String,
        /// The version, e.g. 1.1.0.
        version: String,
        /// Why: tenants with clusters on it read it.
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminTenants {
    /// Every tenant with its quotas, budget and usage.
    List {
        /// At most this many tenants.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
    },
    /// One tenant's settings and usage.
    Get {
        /// The tenant's id.
        tenant: String,
    },
    /// Register a tenant (again: nothing happens but the settings given).
    Create {
        /// The tenant id its users' tokens carry.
        id: String,
        #[command(flatten)]
        settings: TenantSettings,
    },
    /// Change a tenant's settings (those given; `none` puts one back to the platform default).
    Set {
        /// The tenant's id.
        tenant: String,
        #[command(flatten)]
        settings: TenantSettings,
    },
    /// Refuse the tenant's changes (its reads keep working), saying why.
    Suspend {
        /// The tenant's id.
        tenant: String,
        /// Why: the tenant's users see it in every refusal.
        #[arg(long)]
        reason: String,
    },
    /// Let a suspended tenant change things again.
    Resume {
        /// The tenant's id.
        tenant: String,
    },
}

/// A tenant's settings; each left out stays as it is.
#[derive(Debug, Args, Default, Clone)]
pub struct TenantSettings {
    /// Clusters it may have.
    #[arg(long)]
    pub max_clusters: Option<u32>,
    /// Operations it may have queued or running.
    #[arg(long)]
    pub max_open_operations: Option<u32>,
    /// Operations of it that may run at once.
    #[arg(long)]
    pub max_concurrent_operations: Option<u32>,
    /// USD per month (an apply estimated above it stops before apply), or `none`.
    #[arg(long)]
    pub monthly_budget: Option<String>,
    /// The default approval mode of its clusters: auto, required, or none.
    #[arg(long)]
    pub approval: Option<String>,
    /// The longest its clusters may live, in hours, or `none` (the platform default).
    #[arg(long)]
    pub max_ttl_hours: Option<String>,
}

#[derive(Debug, Args)]
pub struct AdminClusters {
    /// Only this tenant's clusters.
    #[arg(long)]
    pub tenant: Option<String>,
    /// Only clusters in this state (active, failed…).
    #[arg(long)]
    pub state: Option<String>,
    /// Only clusters of this template.
    #[arg(long)]
    pub template: Option<String>,
    /// Only clusters pinned to this template version.
    #[arg(long)]
    pub version: Option<String>,
    /// At most this many clusters.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}

#[derive(Debug, Args)]
pub struct AdminOperations {
    /// Only this tenant's operations.
    #[arg(long)]
    pub tenant: Option<String>,
    /// Only this cluster's operations (its id).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Only operations of this kind (create, update, delete, plan, drift-check, restore-state, estimate).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only operations in this status (queued, running, awaiting_approval, failed…).
    #[arg(long)]
    pub status: Option<String>,
    /// At most this many operations.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}
