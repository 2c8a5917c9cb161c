//! The cluster agent's manifests (`agent/deploy/agent.yaml`, built into the runner), filled in for one
//! cluster, and each object's API path. Placeholders are replaced in the parsed documents' string values,
//! never in the YAML text: a value cannot change the documents' structure whatever it holds.

use serde::Deserialize;
use serde_json::Value;

use super::FIELD_MANAGER;

/// `agent/deploy/agent.yaml` as this runner was built with it.
pub const AGENT_YAML: &str = include_str!("../../../agent/deploy/agent.yaml");

/// What fills the manifests' placeholders.
#[derive(Debug, Clone)]
pub struct AgentValues<'a> {
    /// `{{image}}`.
    pub image: &'a str,
    /// `{{api_url}}`: the control plane the agent reports to.
    pub api_url: &'a str,
    /// `{{cluster_id}}`.
    pub cluster_id: &'a str,
    /// `{{registration_token}}` (a secret: it is in the Secret document only, never logged).
    pub registration_token: &'a str,
}

/// Why the manifests could not be made: a defect of the manifests built into the runner (the lifecycle
/// reports it as an internal failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    Yaml(String),
    Missing(&'static str),
    UnknownKind(String),
    Unfilled(String),
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestError::Yaml(e) => write!(f, "the agent's manifests do not read as YAML: {e}"),
            ManifestError::Missing(p) => write!(f, "a document of the agent's manifests has no {p}"),
            ManifestError::UnknownKind(k) => write!(f, "the runner does not know the API path of {k}"),
            ManifestError::Unfilled(p) => write!(f, "placeholder {p} of the agent's manifests has no value"),
        }
    }
}

/// `(apiVersion, kind, resource, namespaced)` of every kind the agent's manifests may hold.
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("v1", "Namespace", "namespaces", false),
    ("v1", "ServiceAccount", "serviceaccounts", true),
    ("v1", "Secret", "secrets", true),
    ("v1", "ConfigMap", "configmaps", true),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", true),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    ("apps/v1", "Deployment", "deployments", true),
    ("apps/v1", "DaemonSet", "daemonsets", true),
];

/// One object to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// The server-side apply URL path, query included.
    pub path: String,
    pub body: Value,
}

impl Object {
    /// `Kind namespace/name` (or `Kind name`): what the log says was applied.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// The server-side apply path of `object`: `/api/v1/…` for the core group, `/apis/<group>/<version>/…`
/// otherwise, with `namespaces/<ns>/` for a namespaced kind; the field manager and `force=true` (the
/// runner's fields are the runner's, whoever changed them since).
pub fn object_path(object: &Value) -> Result<Object, ManifestError> {
    let text = |p: &'static str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(ManifestError::Missing(p))
    };
    let (api_version, kind, name) = (text("/apiVersion")?, text("/kind")?, text("/metadata/name")?);
    let &(_, _, resource, namespaced) = KINDS
        .iter()
        .find(|(v, k, _, _)| *v == api_version && *k == kind)
        .ok_or_else(|| ManifestError::UnknownKind(format!("{api_version} {kind}")))?;
    let namespace = if namespaced {
        Some(text("/metadata/namespace")?.to_owned())
    } else {
        None
    };
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let scope = namespace
        .as_deref()
        .map(|ns| format!("/namespaces/{ns}"))
        .unwrap_or_default();
    Ok(Object {
        kind: kind.to_owned(),
        path: format!("{base}{scope}/{resource}/{name}?fieldManager={FIELD_MANAGER}&force=true"),
        namespace,
        name: name.to_owned(),
        body: object.clone(),
    })
}

/// The documents of `yaml` (empty ones left out), placeholders filled, in order, each with its path.
pub fn render(yaml: &str, values: &AgentValues<'_>) -> Result<Vec<Object>, ManifestError> {
    let mut out = Vec::new();
    for doc in serde_norway::Deserializer::from_str(yaml) {
        let mut v = Value::deserialize(doc).map_err(|e| ManifestError::Yaml(e.to_string()))?;
        if v.is_null() {
            continue;
        }
        fill(&mut v, values)?;
        out.push(object_path(&v)?);
    }
    Ok(out)
}

fn fill(v: &mut Value, values: &AgentValues<'_>) -> Result<(), ManifestError> {
    match v {
        Value::String(s) if s.contains("{{") => {
            let filled = s
                .replace("{{image}}", values.image)
                .replace("{{api_url}}", values.api_url)
                .replace("{{cluster_id}}", values.cluster_id)
                .replace("{{registration_token}}", values.registration_token);
            // A value may itself hold "{{": only the original text's placeholders must all be known.
            let mut rest = s.as_str();
            while let Some(i) = rest.find("{{") {
                let end = rest[i..].find("}}").map_or(rest.len(), |j| i + j + 2);
                let placeholder = &rest[i..end];
                if ![
                    "{{image}}",
                    "{{api_url}}",
                    "{{cluster_id}}",
                    "{{registration_token}}",
                ]
                .contains(&placeholder)
                {
                    return Err(ManifestError::Unfilled(placeholder.to_owned()));
                }
                rest = &rest[end..];
            }
            *s = filled;
        }
        Value::Array(a) => a.iter_mut().try_for_each(|x| fill(x, values))?,
        Value::Object(m) => m.values_mut().try_for_each(|x| fill(x, values))?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: AgentValues<'static> = AgentValues {
        image: "registry.example/strato-agent:1.2.3",
        api_url: "https://api.strato.example",
        cluster_id: "c-123",
        registration_token: "reg\"token: {{x}}\n---\nkind: Evil",
    };

    #[test]
    fn every_document_of_the_agents_manifests_is_filled_and_has_its_path() {
        let objects = render(AGENT_YAML, &VALUES).unwrap();
        let described: Vec<String> = objects.iter().map(Object::describe).collect();
        assert_eq!(
            described,
            [
                "Namespace strato-system",
                "ServiceAccount strato-system/strato-agent",
                "Secret strato-system/strato-agent",
                "ClusterRole strato-agent",
                "ClusterRoleBinding strato-agent",
                "Role kube-system/strato-agent-read",
                "RoleBinding kube-system/strato-agent-read",
                "Role strato-system/strato-agent-credential",
                "RoleBinding strato-system/strato-agent-credential",
                "Deployment strato-system/strato-agent",
            ],
            "the namespace comes first: a namespaced write into a missing namespace is refused"
        );
        let path = |d: &str| {
            objects[described.iter().position(|x| x == d).unwrap()]
                .path
                .clone()
        };
        assert_eq!(
            path("Namespace strato-system"),
            "/api/v1/namespaces/strato-system?fieldManager=strato-runner&force=true"
        );
        assert_eq!(
            path("Secret strato-system/strato-agent"),
            "/api/v1/namespaces/strato-system/secrets/strato-agent?fieldManager=strato-runner&force=true"
        );
        assert_eq!(
            path("ClusterRoleBinding strato-agent"),
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/strato-agent?fieldManager=strato-runner&force=true"
        );
        assert_eq!(
            path("Deployment strato-system/strato-agent"),
            "/apis/apps/v1/namespaces/strato-system/deployments/strato-agent?fieldManager=strato-runner&force=true"
        );
        // Every placeholder is filled, and a value full of YAML stays one string of one document.
        let all = serde_json::to_string(&objects.iter().map(|o| &o.body).collect::<Vec<_>>()).unwrap();
        assert!(
            !all.contains("{{image}}") && !all.contains("{{api_url}}"),
            "{all}"
        );
        let secret = &objects[2].body;
        assert_eq!(
            secret["stringData"]["registration-token"],
            VALUES.registration_token
        );
        let container = &objects[9].body["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], VALUES.image);
        let env: Vec<(&str, &str)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
            .collect();
        assert!(env.contains(&("STRATO_API_URL", VALUES.api_url)), "{env:?}");
        assert!(env.contains(&("STRATO_CLUSTER_ID", VALUES.cluster_id)), "{env:?}");
    }

    #[test]
    fn an_unknown_kind_or_placeholder_is_refused() {
        let e = render(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\n",
            &VALUES,
        )
        .unwrap_err();
        assert_eq!(e, ManifestError::UnknownKind("v1 Pod".into()));
        let e = render(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: \"{{tenant}}\"}\n",
            &VALUES,
        )
        .unwrap_err();
        assert_eq!(e, ManifestError::Unfilled("{{tenant}}".into()));
        let e = render("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", &VALUES).unwrap_err();
        assert_eq!(e, ManifestError::Missing("/metadata/namespace"));
    }
}
