//! The resources the fake serves and how a request path names one.

/// A kind of object the fake stores: its API group and version, its plural name in paths, and its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceType {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn rt(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> ResourceType {
    ResourceType {
        group,
        version,
        resource,
        kind,
        namespaced,
    }
}

/// Every resource the fake knows. A path naming another one is answered 404, as a server without that API.
pub const RESOURCES: &[ResourceType] = &[
    rt("", "v1", "namespaces", "Namespace", false),
    rt("", "v1", "nodes", "Node", false),
    rt("", "v1", "pods", "Pod", true),
    rt("", "v1", "secrets", "Secret", true),
    rt("", "v1", "configmaps", "ConfigMap", true),
    rt("", "v1", "serviceaccounts", "ServiceAccount", true),
    rt("", "v1", "services", "Service", true),
    rt("", "v1", "events", "Event", true),
    rt("apps", "v1", "deployments", "Deployment", true),
    rt("apps", "v1", "daemonsets", "DaemonSet", true),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    rt("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
];

pub fn by_path(group: &str, version: &str, resource: &str) -> Option<ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.resource == resource)
        .copied()
}

/// The resource of an object's `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.api_version() == api_version && r.kind == kind)
        .copied()
}

/// What a resource path names: a collection (`name` none) or one object, in a namespace or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub rt: ResourceType,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// Why a path names no resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// Not a resource path at all, or a resource this fake does not serve.
    NotFound,
}

/// Reads `/api/v1/…` and `/apis/<group>/<version>/…`, with or without `namespaces/<ns>/`.
pub fn parse(path: &str) -> Result<Target, PathError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(PathError::NotFound),
    };
    let (namespace, resource, name) = match rest {
        ["namespaces", ns, res, tail @ ..] => (Some(ns.to_string()), *res, tail),
        [res, tail @ ..] => (None, *res, tail),
        [] => return Err(PathError::NotFound),
    };
    // Subresources (`/status`, `/log`, …) are not served.
    let name = match name {
        [] => None,
        [n] => Some(n.to_string()),
        _ => return Err(PathError::NotFound),
    };
    let rt = by_path(group, version, resource).ok_or(PathError::NotFound)?;
    if namespace.is_some() && !rt.namespaced {
        return Err(PathError::NotFound);
    }
    // A namespaced resource named without a namespace is only a cluster-wide list or watch.
    if rt.namespaced && namespace.is_none() && name.is_some() {
        return Err(PathError::NotFound);
    }
    Ok(Target { rt, namespace, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_collections_and_objects_in_both_groups_and_scopes() {
        let t = parse("/api/v1/nodes").unwrap();
        assert_eq!((t.rt.kind, t.namespace, t.name), ("Node", None, None));
        let t = parse("/api/v1/namespaces/strato-system").unwrap();
        assert_eq!(
            (t.rt.kind, t.name.as_deref()),
            ("Namespace", Some("strato-system"))
        );
        let t = parse("/api/v1/namespaces/kube-system/secrets/x").unwrap();
        assert_eq!(
            (t.rt.kind, t.namespace.as_deref(), t.name.as_deref()),
            ("Secret", Some("kube-system"), Some("x"))
        );
        let t = parse("/apis/apps/v1/namespaces/kube-system/daemonsets").unwrap();
        assert_eq!(t.rt.kind, "DaemonSet");
        let t = parse("/apis/rbac.authorization.k8s.io/v1/clusterroles/strato-agent").unwrap();
        assert_eq!(t.rt.kind, "ClusterRole");
        assert_eq!(
            parse("/apis/apps/v1/namespaces/x/nodes"),
            Err(PathError::NotFound)
        );
        assert_eq!(parse("/api/v1/namespaces/x/pods/p/log"), Err(PathError::NotFound));
        assert_eq!(parse("/apis/batch/v1/jobs"), Err(PathError::NotFound));
    }
}
