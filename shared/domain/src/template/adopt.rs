//! Adoption after a false failure. A cloud API may create a resource and still report a failure (a lost
//! response, a timeout, a 5xx after the write): the engine then has no record of it, and the retried apply
//! fails with "already exists". A template names the resources for which that can happen and how the cloud
//! identifies them (`[[adopt]]`: an address and an import id made of the stage's variables); the runner then
//! imports such a resource into the stage's state and plans again, instead of failing or cleaning up blindly.
//!
//! Only an id built from the cluster's own values (its managed `cluster_name` carries the cluster id) can
//! name a resource: a template cannot make the runner adopt something that belongs to another cluster.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One adoptable resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdoptRule {
    /// The resource's address in the stage's root, e.g. `module.k8s.aws_iam_role.cluster`.
    pub address: String,
    /// The import id, with `${variable}` placeholders for the stage's variables, e.g.
    /// `${cluster_name}-cluster`.
    pub id: String,
}

impl AdoptRule {
    /// Why the rule is malformed, if it is: the address must be a managed resource's address (modules,
    /// type, name, an optional numeric or string index), and every placeholder a declared variable — one of
    /// them Strato's managed `cluster_name`, so the id is this cluster's own.
    pub fn problem(&self, declared: &BTreeMap<String, bool>) -> Option<String> {
        if !is_address(&self.address) {
            return Some(format!(
                "adopt address '{}' is not a resource address (module.<name>.<type>.<name>)",
                self.address
            ));
        }
        let names = match placeholders(&self.id) {
            Ok(n) => n,
            Err(e) => return Some(format!("adopt id '{}': {e}", self.id)),
        };
        if let Some(n) = names.iter().find(|n| !declared.contains_key(*n)) {
            return Some(format!(
                "adopt id '{}' names '{n}', which is not a variable",
                self.id
            ));
        }
        let own = names.iter().any(|n| n == "cluster_name" && declared[n]);
        if !own {
            return Some(format!(
                "adopt id '{}' must contain ${{cluster_name}} (Strato's managed name carries the cluster id, \
                 so only this cluster's resources can be adopted)",
                self.id
            ));
        }
        None
    }

    /// The import id with the stage's values in place; `None` when a placeholder has no scalar value.
    pub fn render_id(&self, vars: &serde_json::Map<String, Value>) -> Option<String> {
        let mut out = String::new();
        let mut rest = self.id.as_str();
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find('}')? + start;
            let value = match vars.get(&rest[start + 2..end])? {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            out.push_str(&value);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        Some(out)
    }
}

fn placeholders(id: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = id;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            return Err("a placeholder is not closed".into());
        };
        names.push(rest[start + 2..start + len].to_owned());
        rest = &rest[start + len + 1..];
    }
    if id.trim().is_empty() || id.len() > 256 {
        return Err("must be 1 to 256 characters".into());
    }
    Ok(names)
}

/// `module.a.module.b.type.name` or `type.name`, with an optional `[0]` / `["key"]` index on the resource.
fn is_address(a: &str) -> bool {
    let (path, index) = match a.split_once('[') {
        Some((p, i)) => (p, Some(i)),
        None => (a, None),
    };
    let index_ok = index.is_none_or(|i| {
        i.strip_suffix(']').is_some_and(|i| {
            i.chars().all(|c| c.is_ascii_digit()) && !i.is_empty()
                || i.len() >= 2 && i.starts_with('"') && i.ends_with('"') && !i[1..i.len() - 1].contains('"')
        })
    });
    let parts: Vec<&str> = path.split('.').collect();
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let modules_ok = parts.len() >= 2
        && parts.len().is_multiple_of(2)
        && parts[..parts.len() - 2]
            .chunks(2)
            .all(|m| m[0] == "module" && ident(m[1]));
    // A resource type is `<provider>_<kind>`: `var.x`, `local.y` and `data.z` are not resources.
    let ty = parts[parts.len().saturating_sub(2)];
    index_ok && modules_ok && parts.iter().all(|p| ident(p)) && ty.contains('_')
}

/// The resource address a failed apply names (`with module.k8s.aws_iam_role.cluster,` in the engine's
/// diagnostic), if it names one.
pub fn failed_address(stderr: &str) -> Option<&str> {
    stderr.lines().find_map(|l| {
        let rest = l.trim_start_matches(['│', ' ', '\t']).strip_prefix("with ")?;
        let addr = rest.trim_end().strip_suffix(',')?;
        is_address(addr).then_some(addr)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn declared() -> BTreeMap<String, bool> {
        BTreeMap::from([
            ("cluster_name".into(), true),
            ("region".into(), true),
            ("node_count".into(), false),
        ])
    }

    fn rule(address: &str, id: &str) -> AdoptRule {
        AdoptRule {
            address: address.into(),
            id: id.into(),
        }
    }

    #[test]
    fn a_rule_names_a_resource_and_an_id_of_this_clusters_own() {
        assert_eq!(
            rule("module.k8s.aws_iam_role.cluster", "${cluster_name}-cluster").problem(&declared()),
            None
        );
        assert_eq!(
            rule("aws_eks_cluster.this", "${cluster_name}").problem(&declared()),
            None
        );
        assert_eq!(
            rule(
                "module.k8s.aws_eks_node_group.this[0]",
                "${cluster_name}:${cluster_name}-nodes"
            )
            .problem(&declared()),
            None
        );
        for (address, id, says) in [
            ("module.k8s", "${cluster_name}", "not a resource address"),
            (
                "module.k8s.data.aws_iam_role.x",
                "${cluster_name}",
                "not a resource address",
            ),
            (
                "k8s.aws_iam_role.cluster",
                "${cluster_name}",
                "not a resource address",
            ),
            (
                "aws_iam_role.cluster[*]",
                "${cluster_name}",
                "not a resource address",
            ),
            (
                "aws_iam_role.cluster",
                "fixed-name",
                "must contain ${cluster_name}",
            ),
            (
                "aws_iam_role.cluster",
                "${region}-x",
                "must contain ${cluster_name}",
            ),
            (
                "aws_iam_role.cluster",
                "${cluster_name}-${nope}",
                "'nope', which is not a variable",
            ),
            ("aws_iam_role.cluster", "${cluster_name", "not closed"),
        ] {
            let p = rule(address, id).problem(&declared()).unwrap_or_default();
            assert!(p.contains(says), "{address} {id}: {p}");
        }
        // A tenant-set variable cannot stand in for the managed name.
        let mut d = declared();
        d.insert("cluster_name".into(), false);
        assert!(rule("aws_iam_role.c", "${cluster_name}").problem(&d).is_some());
    }

    #[test]
    fn the_id_takes_the_stages_values() {
        let vars = json!({"cluster_name": "shop-1a2b3c4d", "node_count": 3, "tags": {}});
        let vars = vars.as_object().unwrap();
        assert_eq!(
            rule("a.b", "${cluster_name}:${cluster_name}-nodes-${node_count}")
                .render_id(vars)
                .as_deref(),
            Some("shop-1a2b3c4d:shop-1a2b3c4d-nodes-3")
        );
        assert_eq!(rule("a.b", "${tags}").render_id(vars), None, "not a scalar");
        assert_eq!(rule("a.b", "${absent}").render_id(vars), None);
    }

    #[test]
    fn the_failed_address_is_read_from_the_engines_diagnostic() {
        // Terraform 1.11's words (`apply -no-color`) for a resource the cloud already has.
        let stderr = "Error: creating IAM Role (shop-1a2b3c4d-cluster): operation error IAM: CreateRole, \
            https response error StatusCode: 409, EntityAlreadyExists: Role with name shop-1a2b3c4d-cluster \
            already exists.\n\n  with module.k8s.aws_iam_role.cluster,\n  on k8s/main.tf line 12, in resource \
            \"aws_iam_role\" \"cluster\":\n  12: resource \"aws_iam_role\" \"cluster\" {\n";
        assert_eq!(failed_address(stderr), Some("module.k8s.aws_iam_role.cluster"));
        let boxed = "│ Error: x already exists\n│ \n│   with aws_eks_cluster.this,\n";
        assert_eq!(failed_address(boxed), Some("aws_eks_cluster.this"));
        assert_eq!(failed_address("Error: something else\n  with var.x,\n"), None);
    }
}
