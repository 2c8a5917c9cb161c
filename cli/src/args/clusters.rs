//! `strato clusters …`: the cluster verbs' arguments.

use clap::Subcommand;

use super::{LifecycleArgs, SpecArgs, VarArgs, WaitArgs};

#[derive(Debug, Subcommand)]
pub enum Clusters {
    /// Your clusters, newest first.
    List {
        /// Only clusters in this state (e.g. ACTIVE, FAILED; any case). DELETED lists deleted ones.
        #[arg(long)]
        state: Option<String>,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
        /// Deleted clusters too (left out by default).
        #[arg(long)]
        include_deleted: bool,
    },
    /// One cluster: state, template, variables (sensitive ones masked), outputs, drift, last error.
    Get {
        /// The cluster's id (`cl-…`) or name.
        id: String,
    },
    /// Create a cluster from a template.
    Create {
        /// 3-40 characters of a-z, 0-9 and '-'.
        name: String,
        #[command(flatten)]
        spec: SpecArgs,
        /// Drift policy: notify or reconcile.
        #[arg(long)]
        drift_policy: Option<String>,
        /// Hours between drift checks (1-168).
        #[arg(long)]
        drift_interval_hours: Option<u64>,
        #[command(flatten)]
        expiry: LifecycleArgs,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Change variables, move to another template version, or change the cluster's expiry.
    Update {
        /// The cluster's id (`cl-…`) or name.
        id: String,
        #[command(flatten)]
        vars: VarArgs,
        /// Move to this published version of the cluster's template (`strato templates show NAME` lists
        /// them); default: stay on the current one.
        #[arg(long, value_name = "VERSION")]
        template_version: Option<String>,
        /// Preview only: plan the change (variables, --template-version) against the cluster's current
        /// state, wait for it, and show the changes by address, the policy results and the monthly cost
        /// difference. Nothing is applied; the cluster does not change.
        #[arg(long)]
        plan_only: bool,
        #[command(flatten)]
        expiry: LifecycleArgs,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Destroy a cluster's resources and delete it. Asks "Delete cluster NAME (ID)? [y/N]" on a terminal;
    /// without one, --yes is required (else exit 10).
    Delete {
        /// The cluster's id (`cl-…`) or name.
        id: String,
        /// Delete without asking (needed when stdin is not a terminal: scripts, CI).
        #[arg(long, short = 'y')]
        yes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Create a FAILED cluster again.
    Retry {
        /// The FAILED cluster's id (`cl-…`) or name.
        id: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Queue a read-only drift check now.
    DriftCheck {
        /// The ACTIVE cluster's id (`cl-…`) or name.
        id: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Show or change drift settings (no operation is started).
    Drift {
        /// The cluster's id (`cl-…`) or name.
        id: String,
        /// notify or reconcile.
        #[arg(long)]
        policy: Option<String>,
        /// Hours between checks (1-168).
        #[arg(long)]
        interval_hours: Option<u64>,
    },
    /// A kubeconfig for the cluster's Kubernetes API: printed, or merged into your kubeconfig file with
    /// --merge. No credential is in it: kubectl runs `aws eks get-token`, which signs a short-lived token
    /// with your AWS identity (or the role given) each time.
    Kubeconfig {
        /// The cluster's id (`cl-…`) or name.
        id: String,
        /// Merge it into the kubeconfig file (--kubeconfig, else the first file of $KUBECONFIG, else
        /// ~/.kube/config) as the current context, replacing entries of the same name.
        #[arg(long)]
        merge: bool,
        /// The kubeconfig file --merge writes.
        #[arg(long, value_name = "PATH", requires = "merge")]
        kubeconfig: Option<std::path::PathBuf>,
        /// The role `aws eks get-token` assumes to sign tokens; `none`: your own AWS identity. Default: the
        /// cluster's target role, if it has one.
        #[arg(long, value_name = "ARN")]
        role_arn: Option<String>,
        /// The AWS CLI profile kubectl runs `aws` with.
        #[arg(long, value_name = "PROFILE")]
        aws_profile: Option<String>,
        /// The context's name (default `strato-<cluster name>`).
        #[arg(long, value_name = "NAME")]
        context: Option<String>,
    },
}
