//! Authorization from Role/ClusterRole rules and their bindings, as the real RBAC authorizer decides for
//! resource requests (no aggregation, no non-resource URLs, no groups other than service accounts').

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;

use crate::KubeFakeError;

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub api_groups: Vec<String>,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
}

/// One rule an identity holds, in a namespace or (none) cluster-wide.
#[derive(Debug, Clone)]
struct Grant {
    identity: String,
    namespace: Option<String>,
    rule: PolicyRule,
}

/// What the fake authorizes. Superusers may do anything (the runner's or a test's admin token); every
/// other identity only what its bindings grant.
#[derive(Debug, Clone, Default)]
pub struct Rbac {
    grants: Vec<Grant>,
    superusers: BTreeSet<String>,
}

/// One request, as the authorizer sees it.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

fn covers(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == "*" || x == item)
}

impl Rbac {
    /// The grants of the Roles, ClusterRoles and bindings in a multi-document YAML manifest (other documents
    /// are skipped). A service account subject is the identity `system:serviceaccount:<ns>:<name>`.
    pub fn from_manifests(yaml: &str) -> Result<Self, KubeFakeError> {
        let mut docs = Vec::new();
        for doc in serde_norway::Deserializer::from_str(yaml) {
            let v = Value::deserialize(doc).map_err(|e| KubeFakeError::Manifest(e.to_string()))?;
            if !v.is_null() {
                docs.push(v);
            }
        }
        let rules_of = |kind: &str, name: &str, ns: Option<&str>| -> Result<Vec<PolicyRule>, KubeFakeError> {
            let role = docs.iter().find(|d| {
                d["kind"] == kind
                    && d["metadata"]["name"] == name
                    && (kind == "ClusterRole" || d["metadata"]["namespace"].as_str() == ns)
            });
            let Some(role) = role else { return Ok(Vec::new()) };
            serde_json::from_value(role["rules"].clone()).map_err(|e| KubeFakeError::Manifest(e.to_string()))
        };
        let mut rbac = Rbac::default();
        for b in docs
            .iter()
            .filter(|d| d["kind"] == "RoleBinding" || d["kind"] == "ClusterRoleBinding")
        {
            let binding_ns = (b["kind"] == "RoleBinding")
                .then(|| b["metadata"]["namespace"].as_str())
                .flatten();
            let role_kind = b["roleRef"]["kind"].as_str().unwrap_or_default();
            let role_name = b["roleRef"]["name"].as_str().unwrap_or_default();
            let rules = rules_of(role_kind, role_name, binding_ns)?;
            for s in b["subjects"].as_array().into_iter().flatten() {
                let identity = match s["kind"].as_str() {
                    Some("ServiceAccount") => format!(
                        "system:serviceaccount:{}:{}",
                        s["namespace"].as_str().or(binding_ns).unwrap_or_default(),
                        s["name"].as_str().unwrap_or_default()
                    ),
                    _ => s["name"].as_str().unwrap_or_default().to_string(),
                };
                for rule in &rules {
                    rbac.grants.push(Grant {
                        identity: identity.clone(),
                        namespace: binding_ns.map(str::to_string),
                        rule: rule.clone(),
                    });
                }
            }
        }
        Ok(rbac)
    }

    pub fn superuser(mut self, identity: &str) -> Self {
        self.superusers.insert(identity.to_string());
        self
    }

    pub fn allows(&self, identity: &str, req: &Attributes<'_>) -> bool {
        if self.superusers.contains(identity) {
            return true;
        }
        self.grants.iter().filter(|g| g.identity == identity).any(|g| {
            let in_scope = g.namespace.is_none() || g.namespace.as_deref() == req.namespace;
            let named = g.rule.resource_names.is_empty()
                || req
                    .name
                    .is_some_and(|n| g.rule.resource_names.iter().any(|r| r == n));
            in_scope
                && named
                && covers(&g.rule.verbs, req.verb)
                && covers(&g.rule.api_groups, req.group)
                && covers(&g.rule.resources, req.resource)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: ns1}
rules:
  - apiGroups: [""]
    resources: ["secrets"]
    resourceNames: ["mine"]
    verbs: ["get", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: r, namespace: ns1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: ServiceAccount, name: sa, namespace: ns1}]
"#;

    fn req<'a>(verb: &'a str, ns: Option<&'a str>, name: Option<&'a str>) -> Attributes<'a> {
        Attributes {
            verb,
            group: "",
            resource: "secrets",
            namespace: ns,
            name,
        }
    }

    #[test]
    fn a_role_grants_only_its_verbs_names_and_namespace() {
        let rbac = Rbac::from_manifests(MANIFEST).unwrap().superuser("admin");
        let sa = "system:serviceaccount:ns1:sa";
        assert!(rbac.allows(sa, &req("get", Some("ns1"), Some("mine"))));
        assert!(rbac.allows(sa, &req("patch", Some("ns1"), Some("mine"))));
        assert!(
            !rbac.allows(sa, &req("get", Some("ns1"), Some("other"))),
            "resourceNames"
        );
        assert!(
            !rbac.allows(sa, &req("list", Some("ns1"), None)),
            "a list names no object"
        );
        assert!(
            !rbac.allows(sa, &req("get", Some("ns2"), Some("mine"))),
            "another namespace"
        );
        assert!(!rbac.allows("someone", &req("get", Some("ns1"), Some("mine"))));
        assert!(rbac.allows("admin", &req("delete", Some("ns2"), None)));
    }
}
