//! The command line: one verb per API action (clap derive).

use clap::{Args, Parser, Subcommand};

use crate::render::Format;

mod admin;
mod clusters;
mod rollouts;
mod target;
pub use admin::{Admin, AdminClusters, AdminOperations, AdminTemplates, AdminTenants, TenantSettings};
pub use clusters::Clusters;
pub use rollouts::{RolloutCommand, Rollouts, Selection, StopFlags};
pub use target::{CloudTokens, TargetArgs};

const AFTER_HELP: &str = "\
Getting started:
  strato login --endpoint https://api.example.com --ws-endpoint wss://ws.example.com/live   (token on stdin)
  strato templates show aws-eks-basic
  strato clusters create demo --template aws-eks-basic --var node_count=2 --wait
  strato logs <operation-id> -f
Against devstack (`cargo run -p strato-devstack -- up` writes a profile named after its prefix): strato --profile strato-dev …

Exit codes: 0 ok · 1 other · 2 usage (bad flags, no endpoint) · 3 auth (401/403) · 4 not found ·
5 conflict (busy, wrong state, changed) · 6 validation (each field's problem is printed) ·
7 server or network (5xx, 429, unreachable) · 8 the operation ended failed or cancelled · 9 it awaits approval ·
10 not confirmed (a delete declined, or no terminal to ask and no --yes).";

#[derive(Debug, Parser)]
#[command(name = "strato", version, about = "Strato from a terminal: clusters from templates, live logs, drift, state", after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags of every command. Where Strato is and who you are come from the flag, else its environment
/// variable, else the profile: optional on the command line, each shown with its `[env: …]`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// Profile to use (default: the config file's default, else `default`).
    #[arg(long, short = 'p', env = "STRATO_PROFILE", global = true)]
    pub profile: Option<String>,
    /// The HTTP API's URL, overriding the profile's.
    #[arg(long, env = "STRATO_ENDPOINT", global = true)]
    pub endpoint: Option<String>,
    /// The WebSocket API's URL (live logs), overriding the profile's.
    #[arg(long, env = "STRATO_WS_ENDPOINT", global = true)]
    pub ws_endpoint: Option<String>,
    /// Bearer token, overriding the profile's (prefer STRATO_TOKEN: flags show up in `ps`).
    #[arg(long, env = "STRATO_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// Output: a table for people, the API's JSON or YAML for scripts.
    #[arg(long, short = 'o', value_enum, default_value = "table", global = true)]
    pub output: Format,
    /// No colour (also when NO_COLOR is set or stdout is not a terminal).
    #[arg(long, global = true)]
    pub no_color: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Save an endpoint and token as a profile (token from --token, STRATO_TOKEN or stdin).
    Login(Login),
    /// The saved profiles.
    Profiles,
    /// The template catalog.
    #[command(subcommand)]
    Templates(Templates),
    /// Create, inspect, change and delete clusters.
    #[command(subcommand, alias = "cluster")]
    Clusters(Clusters),
    /// Operations: what a create, update, delete, drift check or estimate is doing.
    #[command(subcommand, alias = "operation", alias = "ops")]
    Operations(Operations),
    /// An operation's log: the archive, then live with -f (never a missing or repeated line).
    Logs(Logs),
    /// Follow a cluster or an operation: state changes and the live log, to the end.
    Watch(Watch),
    /// Price a create without applying it (a plan-only run).
    Estimate(Estimate),
    /// Versions of a cluster's Terraform state, and restoring one.
    #[command(subcommand, name = "state-versions")]
    StateVersions(StateVersions),
    /// Your tenant's webhook for lifecycle events.
    #[command(subcommand)]
    Webhook(Webhook),
    /// Your tenant's policies (Rego), checked on requests and plans; the platform's are listed too (admin).
    #[command(subcommand, alias = "policy")]
    Policies(Policies),
    /// What each cloud needs to trust Strato's runs in your account: AWS's external id and trust policy,
    /// GCP's and Azure's federation settings, DigitalOcean's and Linode's API token.
    TargetAccess {
        /// Only this cloud's section (aws, gcp, azure, digitalocean, linode).
        #[arg(long)]
        provider: Option<String>,
    },
    /// The API tokens Strato uses on clouds without federation (DigitalOcean, Linode): set, list, delete.
    #[command(subcommand, name = "cloud-tokens", alias = "cloud-token")]
    CloudTokens(CloudTokens),
    /// Your tenant's audit log, newest first: who did what, to which cluster, and how it ended (admin).
    Audit(Audit),
    /// The platform operator's commands: tenants and every tenant's clusters (an operator token).
    #[command(subcommand)]
    Admin(Admin),
    /// Fleet rollouts of a template version: preview, start in waves, get, list, pause, resume, abort.
    #[command(alias = "rollout")]
    Rollouts(Rollouts),
    /// Shell completions: `strato completions bash > /etc/bash_completion.d/strato`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The endpoints come from the global `--endpoint` (required here) and `--ws-endpoint`.
#[derive(Debug, Args)]
pub struct Login {
    /// Save without checking the token against the API.
    #[arg(long)]
    pub no_verify: bool,
}

#[derive(Debug, Subcommand)]
pub enum Templates {
    /// Every published template at its latest version.
    List,
    /// A template's variables: type, default, limits, what is required.
    Show {
        /// The template's name (`strato templates list`).
        name: String,
        /// A published version (default: the latest).
        #[arg(long)]
        version: Option<String>,
    },
}

/// How a command that starts an operation ends.
#[derive(Debug, Args, Clone)]
pub struct WaitArgs {
    /// Stream the live log and state changes to the end; exit 0 only on success.
    #[arg(long, short = 'w')]
    pub wait: bool,
    /// With --wait: give up after this many minutes.
    #[arg(long, default_value_t = 120)]
    pub timeout_minutes: u64,
    /// With --wait: state changes and the summary only, no log lines.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args, Clone)]
pub struct VarArgs {
    /// A variable, typed by the template's schema: NAME=VALUE (lists `a,b` or JSON, maps `k=v,k2=v2` or
    /// JSON). Repeatable; wins over --var-file.
    #[arg(long = "var", alias = "set", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Variables from a JSON object (`.tfvars.json` too); `-` reads stdin. Repeatable.
    #[arg(long = "var-file", value_name = "FILE")]
    pub var_files: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub struct SpecArgs {
    /// The template, `NAME` (latest version) or `NAME@VERSION`.
    #[arg(long, short = 't')]
    pub template: String,
    /// Cloud provider (default: the template's only provider).
    #[arg(long)]
    pub provider: Option<String>,
    /// Region (default: the template's default region for the provider).
    #[arg(long)]
    pub region: Option<String>,
    #[command(flatten)]
    pub vars: VarArgs,
    // Boxed: eleven optional strings would make every command that embeds a spec a large enum variant.
    #[command(flatten)]
    pub target: Box<TargetArgs>,
}

#[derive(Debug, Subcommand)]
pub enum Operations {
    /// One operation: status, steps, error with its fix, notes, estimate.
    Get {
        /// The operation's id (`op-…`).
        id: String,
    },
    /// A cluster's operations, newest first (one page unless --all).
    List {
        /// The cluster's id (`cl-…`) or name.
        cluster: String,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
    },
    /// Cancel a queued operation, or ask a running one to stop.
    Cancel {
        /// The operation's id (`op-…`).
        id: String,
    },
    /// Approve the plan an operation waits with (needs `operations:approve`); a new run applies exactly it.
    /// Shows the plan it approves and names it (checksum, round, stage): if another one is pending by the
    /// time the approval arrives, nothing is approved (exit 5) and the pending one is named.
    Approve {
        /// The operation's id (`op-…`), awaiting approval.
        id: String,
        /// Why, for the record.
        #[arg(long)]
        comment: Option<String>,
        /// Approve only the plan with this SHA-256 (the `plan sha256` shown by `operations get`), not
        /// whatever is pending now.
        #[arg(long, value_name = "SHA256")]
        plan_sha256: Option<String>,
    },
    /// Reject the plan an operation waits with: it ends cancelled, nothing of it applied. Names the plan
    /// shown, like `approve`.
    Reject {
        /// The operation's id (`op-…`), awaiting approval.
        id: String,
        /// Why, for the record.
        #[arg(long)]
        comment: Option<String>,
        /// Reject only the plan with this SHA-256.
        #[arg(long, value_name = "SHA256")]
        plan_sha256: Option<String>,
    },
    /// The operation's life as ordered moments.
    Timeline {
        /// The operation's id (`op-…`).
        id: String,
    },
}

#[derive(Debug, Args)]
pub struct Logs {
    /// The operation's id (`op-…`).
    pub operation: String,
    /// Keep following until the operation ends.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Start at this line.
    #[arg(long, default_value_t = 1)]
    pub from_seq: u64,
}

#[derive(Debug, Args)]
pub struct Watch {
    /// A cluster (`cl-…` or its name: its pending or latest operation) or an operation (`op-…`).
    pub id: String,
    /// State changes and the summary only, no log lines.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct Audit {
    /// Only entries about this cluster (its id).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Only entries since an RFC 3339 time or a duration back from now (15m, 24h, 7d).
    #[arg(long)]
    pub since: Option<String>,
    /// Only entries of this principal (a token's sub, or strato:<function>).
    #[arg(long)]
    pub actor: Option<String>,
    /// At most this many entries.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}

#[derive(Debug, Args)]
pub struct Estimate {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Wait for the price (default); --no-wait prints the operation only.
    #[arg(long)]
    pub no_wait: bool,
}

#[derive(Debug, Subcommand)]
pub enum StateVersions {
    /// The versions of each stage's state, newest first, and the restores done.
    List {
        /// The cluster's id (`cl-…`) or name.
        cluster: String,
    },
    /// Make an earlier version current again (the replaced one is kept). In your own storage (GCS, Azure
    /// Blob, Spaces, Linode, an AWS target's bucket) a restore-state operation is queued: --wait follows it.
    Restore {
        /// The cluster's id (`cl-…`) or name.
        cluster: String,
        /// The version id (`strato state-versions list`).
        version: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
}

/// When the scheduler deletes the cluster on its own.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LifecycleArgs {
    /// An RFC 3339 time (e.g. 2026-12-01T18:00:00Z); on update, `never` clears it.
    #[arg(long, conflicts_with = "ttl_hours")]
    pub expires_at: Option<String>,
    /// Hours from now.
    #[arg(long)]
    pub ttl_hours: Option<u64>,
    /// `required`: creates and updates wait after their plan for an approver; `auto`: applied at once;
    /// `default`: the template's or tenant's default.
    #[arg(long, value_parser = ["auto", "required", "default"])]
    pub approval: Option<String>,
}

impl LifecycleArgs {
    /// The request members these flags ask for (`never` is `"expires_at": null`).
    pub fn members(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut out = Vec::new();
        if let Some(at) = &self.expires_at {
            let v = if at.eq_ignore_ascii_case("never") {
                serde_json::Value::Null
            } else {
                serde_json::Value::String(at.clone())
            };
            out.push(("expires_at", v));
        }
        if let Some(h) = self.ttl_hours {
            out.push(("ttl_hours", serde_json::json!(h)));
        }
        match self.approval.as_deref() {
            Some("default") => out.push(("approval", serde_json::Value::Null)),
            Some(mode) => out.push(("approval", serde_json::json!(mode))),
            None => {}
        }
        out
    }
}

#[derive(Debug, Subcommand)]
pub enum Webhook {
    /// Set the webhook: an https URL; the signing secret from --secret-file or stdin (never a flag).
    /// Signed as Standard Webhooks: a plain secret's key is its bytes (`whsec_` + base64 of it for a library).
    Set {
        /// Where events are POSTed: an https URL.
        url: String,
        /// A file holding the signing secret (else stdin).
        #[arg(long, value_name = "FILE")]
        secret_file: Option<String>,
        /// Only these event types, comma-separated (default: all), e.g.
        /// operation.failed,cluster.expiring.
        #[arg(long, value_delimiter = ',')]
        events: Vec<String>,
    },
    /// The webhook: URL, events, secret (masked).
    Get,
    /// Remove the webhook: no more deliveries.
    Delete,
}

#[derive(Debug, Subcommand)]
pub enum Policies {
    /// Every policy checked on your requests and plans, and the set's version.
    List,
    /// One of your policies' Rego source.
    Get {
        /// The policy's name (`[a-z0-9-]`).
        name: String,
    },
    /// Create or replace a policy from a .rego file (compile-checked by the API).
    Put {
        /// The policy's name (`[a-z0-9-]`).
        name: String,
        /// The .rego file.
        #[arg(long, value_name = "FILE")]
        file: String,
    },
    /// Delete one of your policies.
    Delete {
        /// The policy's name (`[a-z0-9-]`).
        name: String,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }

    /// Every subcommand, its path (`strato clusters update`) first, with the global flags propagated.
    fn every_command() -> Vec<(String, clap::Command)> {
        use clap::CommandFactory;
        let mut root = super::Cli::command();
        root.build();
        let mut out = Vec::new();
        let mut todo = vec![("strato".to_owned(), root)];
        while let Some((path, cmd)) = todo.pop() {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                todo.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
            out.push((path, cmd));
        }
        out
    }

    #[test]
    fn every_argument_and_flag_of_every_command_has_help() {
        let mut missing = Vec::new();
        for (path, cmd) in every_command() {
            if cmd.get_about().is_none_or(|a| a.to_string().trim().is_empty()) {
                missing.push(format!("{path}: no description"));
            }
            for arg in cmd.get_arguments() {
                let help = arg.get_help().or(arg.get_long_help());
                if help.is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path}: {}", arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "without help:\n{}", missing.join("\n"));
    }

    #[test]
    fn flags_the_environment_or_a_profile_provides_are_optional_and_name_their_variable() {
        for (path, mut cmd) in every_command() {
            let usage = cmd.render_usage().to_string();
            let help = cmd.render_help().to_string();
            for arg in cmd.get_arguments() {
                let Some(env) = arg.get_env() else { continue };
                let env = env.to_string_lossy();
                let flag = format!("--{}", arg.get_long().unwrap_or_default());
                assert!(!arg.is_required_set(), "{path}: {flag} is required");
                // Shown in the usage line only as one of [OPTIONS], never as a required flag.
                assert!(
                    !usage.contains(&flag),
                    "{path}: {flag} in the usage line: {usage}"
                );
                assert!(
                    help.contains(&format!("[env: {env}")),
                    "{path}: {flag} without [env: {env}]:\n{help}"
                );
            }
        }
    }

    #[test]
    fn expiry_flags_become_request_members() {
        use clap::Parser;
        use serde_json::json;
        let never = super::LifecycleArgs {
            expires_at: Some("never".into()),
            ttl_hours: None,
            approval: None,
        };
        assert_eq!(never.members(), vec![("expires_at", serde_json::Value::Null)]);
        let ttl = super::LifecycleArgs {
            expires_at: None,
            ttl_hours: Some(4),
            approval: None,
        };
        assert_eq!(ttl.members(), vec![("ttl_hours", json!(4))]);
        let modes = |m: &str| {
            super::LifecycleArgs {
                expires_at: None,
                ttl_hours: None,
                approval: Some(m.into()),
            }
            .members()
        };
        assert_eq!(modes("required"), vec![("approval", json!("required"))]);
        assert_eq!(modes("default"), vec![("approval", serde_json::Value::Null)]);
        let bad = ["strato", "clusters", "update", "cl-1", "--approval", "sometimes"];
        assert!(
            super::Cli::try_parse_from(bad).is_err(),
            "only auto, required or default"
        );
        let both = [
            "strato",
            "clusters",
            "update",
            "cl-1",
            "--expires-at",
            "2026-12-01T00:00:00Z",
            "--ttl-hours",
            "2",
        ];
        assert!(super::Cli::try_parse_from(both).is_err(), "one or the other");
        let events = [
            "strato",
            "webhook",
            "set",
            "https://h.example.com",
            "--events",
            "operation.failed,cluster.expiring",
        ];
        match super::Cli::try_parse_from(events).unwrap().command {
            super::Command::Webhook(super::Webhook::Set { events, .. }) => {
                assert_eq!(events, ["operation.failed", "cluster.expiring"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
