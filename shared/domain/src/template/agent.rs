//! The manifest's `[agent]` section: the template's clusters run Strato's cluster agent, and the cluster is
//! ACTIVE only once it registers and reports enough Ready nodes. Who installs it (`install`): the template's
//! own Terraform (`"template"`, the default), or the runner (`"runner"`), which applies the agent's
//! manifests to the new cluster's API by server-side apply after the stage that outputs the API's endpoint,
//! authenticating with a short-lived token: one it signs for EKS (from `name_output`), or the bearer token
//! a sensitive output holds (`token_output`, for clouds whose provider gives one: DigitalOcean, Linode).

use serde::{Deserialize, Serialize};

use super::{Manifest, VarType, is_identifier};
use crate::model::CloudProvider;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// How long after apply the agent has to register before the cluster is FAILED.
    #[serde(default = "default_agent_deadline")]
    pub deadline_secs: u64,
    /// The integer variable holding the node count the agent must report Ready.
    #[serde(default = "default_ready_nodes_variable")]
    pub ready_nodes_variable: String,
    /// Who installs the agent. Left out of the stored manifest at its default, so a function of the release
    /// before (whose `AgentSpec` refuses unknown fields) still reads it; so are the fields below when unset.
    #[serde(default, skip_serializing_if = "AgentInstall::is_template")]
    pub install: AgentInstall,
    /// With `install = "runner"`: the output holding the cluster API's URL (`https://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_output: Option<String>,
    /// With `install = "runner"`: the output holding the API's certificate authority, base64 of its PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_output: Option<String>,
    /// With `install = "runner"` on AWS: the output holding the EKS cluster's name, which the runner's token
    /// is signed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_output: Option<String>,
    /// With `install = "runner"`: a sensitive output holding a bearer token for the cluster's API (clouds
    /// whose provider gives one). On AWS it is used when the output is not null, else an EKS token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_output: Option<String>,
    /// With `install = "runner"`: the agent's image, instead of the runner's `STRATO_AGENT_IMAGE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Who installs the cluster agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentInstall {
    /// The template's Terraform installs it (given the managed `agent_token` and `control_plane_url`).
    #[default]
    Template,
    /// The runner applies `agent/deploy/agent.yaml` to the cluster after the endpoint's stage applied.
    Runner,
}

impl AgentInstall {
    pub fn is_template(&self) -> bool {
        *self == AgentInstall::Template
    }
}

fn default_agent_deadline() -> u64 {
    900
}

fn default_ready_nodes_variable() -> String {
    "node_count".into()
}

/// At most this long, an image reference (registry/repository:tag or @digest).
const MAX_IMAGE_LEN: usize = 256;

impl AgentSpec {
    /// The outputs the runner reads to install the agent (`install = "runner"`), each with its key: every
    /// one must be an output of the template's modules (checked where the modules are, at publish).
    pub fn runner_outputs(&self) -> Vec<(&'static str, &str)> {
        if self.install != AgentInstall::Runner {
            return Vec::new();
        }
        [
            ("endpoint_output", &self.endpoint_output),
            ("ca_output", &self.ca_output),
            ("name_output", &self.name_output),
            ("token_output", &self.token_output),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }

    /// What is wrong with this section of `manifest`, as a sentence naming the field and the fix.
    pub(super) fn problem(&self, manifest: &Manifest) -> Option<String> {
        match manifest.variables.get(&self.ready_nodes_variable) {
            Some(d) if d.ty == VarType::Integer => {}
            _ => {
                return Some(format!(
                    "agent.ready_nodes_variable '{}' is not an integer variable",
                    self.ready_nodes_variable
                ));
            }
        }
        for managed in ["agent_token", "control_plane_url"] {
            if !manifest.variables.get(managed).is_some_and(|d| d.managed) {
                return Some(format!(
                    "a template with an agent declares managed variable '{managed}'"
                ));
            }
        }
        if self.install == AgentInstall::Template {
            let set = [
                ("endpoint_output", self.endpoint_output.is_some()),
                ("ca_output", self.ca_output.is_some()),
                ("name_output", self.name_output.is_some()),
                ("token_output", self.token_output.is_some()),
                ("image", self.image.is_some()),
            ];
            return set.iter().find(|(_, s)| *s).map(|(k, _)| {
                format!(
                    "agent.{k} applies only to install = \"runner\"; set install = \"runner\" or remove it"
                )
            });
        }
        self.runner_problem(&manifest.providers)
    }

    fn runner_problem(&self, providers: &[CloudProvider]) -> Option<String> {
        for (key, value) in [
            ("endpoint_output", &self.endpoint_output),
            ("ca_output", &self.ca_output),
        ] {
            if value.is_none() {
                return Some(format!(
                    "agent.{key} is required with install = \"runner\": name the output the runner reads"
                ));
            }
        }
        for (key, output) in self.runner_outputs() {
            if !is_identifier(output) {
                return Some(format!(
                    "agent.{key} '{output}' must name an output (a lowercase identifier)"
                ));
            }
        }
        if let Some(image) = &self.image
            && (image.is_empty()
                || image.len() > MAX_IMAGE_LEN
                || !image
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "./:-_@".contains(c)))
        {
            return Some(format!(
                "agent.image '{image}' is not an image reference: 1-{MAX_IMAGE_LEN} letters, digits and ./:-_@"
            ));
        }
        // Each cloud the template may run on needs a way to a bearer token for the new cluster's API.
        if self.token_output.is_some() {
            return None;
        }
        providers.iter().find_map(|p| match p {
            CloudProvider::Aws if self.name_output.is_none() => Some(
                "agent.name_output is required with install = \"runner\" on aws: the runner signs an EKS token \
                 for the cluster it names"
                    .to_owned(),
            ),
            CloudProvider::Aws => None,
            CloudProvider::Digitalocean | CloudProvider::Linode => Some(format!(
                "agent.token_output is required with install = \"runner\" on {p}: name the sensitive output \
                 holding the cluster's bearer token (its kubeconfig's token)"
            )),
            CloudProvider::Gcp | CloudProvider::Azure => Some(format!(
                "install = \"runner\" cannot reach a {p} cluster yet without agent.token_output (no token is \
                 minted for it): name a sensitive output holding a bearer token, or install the agent in the \
                 template (install = \"template\")"
            )),
        })
    }
}
