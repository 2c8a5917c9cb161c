//! `strato admin …`: the platform operator's commands (the API's `/v1/admin` routes; an operator token).

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum Admin {
    /// Tenants: register, list, read, change their quotas, budget and defaults, suspend and resume.
    #[command(subcommand, alias = "tenant")]
    Tenants(AdminTenants),
    /// Clusters of every tenant (read-only), filtered by tenant, state and template.
    Clusters(AdminClusters),
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
