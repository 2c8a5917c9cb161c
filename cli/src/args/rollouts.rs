//! `strato rollouts …`: a template version taken to a fleet (the API's `/v1/rollouts`; with `--admin`, the
//! platform operator's `/v1/admin/rollouts` across tenants).

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct Rollouts {
    /// As the platform operator, across tenants (an operator token).
    #[arg(long, global = true)]
    pub admin: bool,
    #[command(subcommand)]
    pub command: RolloutCommand,
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Plan every selected cluster on the new version; nothing is applied.
    Preview {
        #[command(flatten)]
        selection: Selection,
        /// The stop rules of the apply you have in mind: the report counts the clusters they would hold.
        #[command(flatten)]
        stop: StopFlags,
    },
    /// Upgrade the selected clusters in waves that pause themselves.
    Start {
        #[command(flatten)]
        selection: Selection,
        /// Waves, e.g. `1,25%,100%` (a number of clusters, or the share of the fleet upgraded by its end).
        #[arg(long, default_value = "100%")]
        waves: String,
        /// Seconds to wait between waves.
        #[arg(long)]
        soak_seconds: Option<u64>,
        #[command(flatten)]
        stop: StopFlags,
    },
    /// A rollout: its phase, the fleet summary and each cluster's plan.
    Get {
        /// The rollout's id.
        id: String,
    },
    /// Your rollouts, newest first.
    List,
    /// Start nothing new.
    Pause {
        /// The rollout's id.
        id: String,
    },
    /// Go on (the wave's failed clusters are planned again, or left out with --skip-failed).
    Resume {
        /// The rollout's id.
        id: String,
        /// Leave the wave's failed and held clusters out.
        #[arg(long)]
        skip_failed: bool,
    },
    /// End it: upgraded clusters stay upgraded, the rest untouched.
    Abort {
        /// The rollout's id.
        id: String,
    },
}

/// What a rollout takes.
#[derive(Debug, Args, Clone)]
pub struct Selection {
    /// The template's name.
    pub template: String,
    /// The version to go to.
    pub to_version: String,
    /// Only clusters on this version (repeat for more).
    #[arg(long = "from-version")]
    pub from_versions: Vec<String>,
    /// Only this cluster, by id or name (repeat for more).
    #[arg(long = "cluster")]
    pub clusters: Vec<String>,
    /// Only clusters in this state (repeat for more).
    #[arg(long = "state")]
    pub states: Vec<String>,
    /// Only this tenant's clusters (operator only; repeat for more).
    #[arg(long = "tenant")]
    pub tenants: Vec<String>,
}

/// What may pass without pausing an apply (the API's `stop`); in a preview, what the report counts as held.
#[derive(Debug, Args, Clone, Default)]
pub struct StopFlags {
    /// A resource address whose replacement is expected (repeat for more).
    #[arg(long)]
    pub allow_replace: Vec<String>,
    /// Let plans destroy resources.
    #[arg(long)]
    pub allow_destroy: bool,
    /// The most a cluster's monthly cost may rise (USD).
    #[arg(long)]
    pub max_monthly_delta: Option<f64>,
}
