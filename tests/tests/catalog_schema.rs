//! The catalog's manifests agree with their modules' variables.tf/outputs.tf, every module is complete
//! (validations, outputs, README, example), and disagreement is caught.

use std::path::{Path, PathBuf};

use strato_domain::model::CloudProvider;
use strato_domain::template::{CatalogRef, Template};
use strato_terraform::catalog_check::{check_catalog, check_template, read_interfaces, schema_problems};
use strato_terraform::modules::ModuleInterface;
use strato_terraform::provider_schema::{ProviderFacts, check_module, check_source};

fn templates_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates")
}

fn manifest_text(name: &str) -> String {
    std::fs::read_to_string(templates_root().join("catalog").join(name).join("template.toml")).unwrap()
}

#[test]
fn every_template_schema_matches_its_modules() {
    let templates = check_catalog(&templates_root()).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = templates.iter().map(Template::name).collect();
    assert_eq!(
        names,
        [
            "aws-eks-advanced",
            "aws-eks-basic",
            "aws-eks-basic",
            "azure-aks-basic",
            "do-doks-basic",
            "gcp-gke-basic",
            "linode-lke-basic"
        ]
    );

    let basic = &templates[1];
    assert!(basic.manifest.verified_offline);
    let basic_modules: Vec<&str> = basic
        .manifest
        .stages
        .iter()
        .flat_map(|s| s.modules.iter().map(String::as_str))
        .collect();
    assert_eq!(basic_modules, ["network", "k8s"]);
    assert!(
        !basic_modules.contains(&"essentials"),
        "helm cannot be installed offline: essentials stays out of the basic template"
    );

    // 1.2.0 beside 1.1.0: the same network and cluster, plus what the runner needs to install the agent.
    let with_agent = &templates[2];
    assert_eq!((basic.version(), with_agent.version()), ("1.1.0", "1.2.0"));
    assert!(basic.manifest.agent.is_none(), "1.1.0's clusters run no agent");
    let agent = with_agent.manifest.agent.as_ref().expect("1.2.0 has an [agent]");
    assert_eq!(agent.install, strato_domain::template::AgentInstall::Runner);
    assert_eq!(
        (
            agent.endpoint_output.as_deref(),
            agent.ca_output.as_deref(),
            agent.name_output.as_deref(),
            agent.ready_nodes_variable.as_str()
        ),
        (
            Some("cluster_endpoint"),
            Some("cluster_ca_certificate"),
            Some("eks_cluster_name"),
            "node_count"
        )
    );
    let with_agent_modules: Vec<&str> = with_agent
        .manifest
        .stages
        .iter()
        .flat_map(|s| s.modules.iter().map(String::as_str))
        .collect();
    assert_eq!(with_agent_modules, ["network", "k8s", "eks-agent"]);
    assert!(with_agent.manifest.verified_offline);

    let adv = &templates[0];
    assert!(
        !adv.manifest.verified_offline,
        "the addons stage needs the helm provider, which is not installable offline"
    );
    let stages: Vec<(&str, Vec<&str>)> = adv
        .manifest
        .stages
        .iter()
        .map(|s| (s.name.as_str(), s.modules.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        stages,
        [
            ("cluster", vec!["network", "k8s"]),
            ("addons", vec!["essentials"])
        ]
    );
    // The other clouds' templates: their providers cannot be installed here, which the manifest says.
    for (t, provider, modules) in [
        (
            &templates[3],
            CloudProvider::Azure,
            vec!["azure-network", "azure-aks"],
        ),
        (&templates[4], CloudProvider::Digitalocean, vec!["do-doks"]),
        (&templates[5], CloudProvider::Gcp, vec!["gcp-network", "gcp-gke"]),
        (&templates[6], CloudProvider::Linode, vec!["linode-lke"]),
    ] {
        assert_eq!(t.manifest.providers, [provider], "{}", t.name());
        assert!(
            !t.manifest.verified_offline,
            "{} cannot be verified offline",
            t.name()
        );
        let used: Vec<&str> = t
            .manifest
            .stages
            .iter()
            .flat_map(|s| s.modules.iter().map(String::as_str))
            .collect();
        assert_eq!(used, modules, "{}", t.name());
        assert!(
            t.manifest
                .required_outputs
                .contains(&"cluster_endpoint".to_owned()),
            "{}",
            t.name()
        );
    }
    for t in &templates {
        let parts: Vec<u32> = t.version().split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 3, "{} version is semver", t.name());
    }
    assert!(adv.manifest.variables["grafana_admin_password"].sensitive);
    assert!(adv.manifest.variables.contains_key("monitoring_retention_days"));
}

#[test]
fn every_module_is_documented_validated_and_has_an_example() {
    for module in MODULES {
        let dir = templates_root().join("modules").join(module);
        let iface = ModuleInterface::read_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(!iface.outputs.is_empty(), "{module} has outputs");
        for (name, var) in &iface.variables {
            assert!(var.type_expr.is_some(), "{module}.{name} has a type");
            assert!(var.description.is_some(), "{module}.{name} has a description");
            // Free-form values are validated; bools and all-defaulted maps need no rule.
            let needs_rule = !matches!(var.type_expr.as_deref(), Some("bool"));
            if needs_rule && !["public_subnet_ids"].contains(&name.as_str()) {
                assert!(var.validations > 0, "{module}.{name} has a validation block");
            }
        }
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        for name in iface.variables.keys().chain(iface.outputs.keys()) {
            assert!(
                readme.contains(&format!("`{name}`")),
                "{module} README documents {name}"
            );
        }
        let example = std::fs::read_to_string(dir.join("examples/main.tf")).unwrap();
        assert!(
            example.contains(&format!("module \"{module}\"")),
            "{module} example uses the module"
        );
    }
}

/// Every module of `templates/modules`: AWS's four, then the other clouds'.
const MODULES: [&str; 10] = [
    "network",
    "k8s",
    "eks-agent",
    "essentials",
    "gcp-network",
    "gcp-gke",
    "azure-network",
    "azure-aks",
    "do-doks",
    "linode-lke",
];

#[test]
fn every_module_directory_is_listed() {
    let mut found: Vec<String> = std::fs::read_dir(templates_root().join("modules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut listed: Vec<&str> = MODULES.to_vec();
    listed.sort();
    assert_eq!(
        found, listed,
        "a new module is checked by the tests above only once it is listed"
    );
}

/// The request shape is the same on every cloud: a form or CLI that knows one template knows them all.
#[test]
fn every_cluster_template_has_the_same_request_shape() {
    let templates = check_catalog(&templates_root()).unwrap_or_else(|e| panic!("{e}"));
    for t in templates.iter().filter(|t| t.name().ends_with("-basic")) {
        let vars = &t.manifest.variables;
        for (name, section, label) in [
            ("node_instance_type", "Nodes", "Node size"),
            ("node_count", "Nodes", "Number of nodes"),
            ("min_nodes", "Nodes", "Minimum nodes"),
            ("max_nodes", "Nodes", "Maximum nodes"),
            ("kubernetes_version", "Kubernetes", "Kubernetes version"),
            ("tags", "Tags", "Resource tags"),
        ] {
            let def = vars
                .get(name)
                .unwrap_or_else(|| panic!("{} has no {name}", t.name()));
            assert_eq!(def.section.as_deref(), Some(section), "{}.{name}", t.name());
            assert_eq!(def.label.as_deref(), Some(label), "{}.{name}", t.name());
        }
        assert_eq!(
            vars["node_instance_type"].catalog,
            Some(CatalogRef::InstanceType),
            "{}",
            t.name()
        );
        assert!(
            vars["cluster_name"].managed && vars["region"].managed,
            "{}",
            t.name()
        );
        if t.manifest.providers != [CloudProvider::Aws] {
            assert_eq!(
                vars["kubernetes_version"].catalog,
                Some(CatalogRef::KubernetesVersion),
                "{}",
                t.name()
            );
        }
    }
}

/// A fixture whose manifest disagrees with its modules in every way the check knows.
#[test]
fn a_broken_fixture_is_refused_with_every_problem_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/catalog-broken");
    let err = check_catalog(&root).unwrap_err().to_string();
    for expected in [
        "variable 'node_count' is string in the manifest but `number` in module 'app'",
        "variable 'password' is not sensitive in the manifest but sensitive in module 'app'",
        "variable 'ghost' is in the manifest but no module of the template declares it",
        "module 'app' needs variable 'token' (no default), but the manifest lets it be unset",
        "module 'app' in stage 'main' needs variable 'vpc_id' (no default) and nothing feeds it",
        "output 'name' is declared by modules 'app' and 'net'",
        "required output 'endpoint' is not an output of any module",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
}

/// Mutations of the real templates: each one alone makes the check fail.
#[test]
fn mutating_a_real_template_breaks_the_check() {
    let modules = templates_root().join("modules");
    let problems = |text: &str| {
        let t = Template::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
        let ifaces = read_interfaces(&t, &modules).unwrap();
        schema_problems(&t, &ifaces)
    };
    let basic = manifest_text("aws-eks-basic");
    assert!(problems(&basic).is_empty());

    // Each mutation of the basic template, and what the check must say of it.
    for (what, from, to, says) in [
        (
            "wrong type",
            "[variables.cluster_name]\ntype = \"string\"",
            "[variables.cluster_name]\ntype = \"integer\"",
            "'cluster_name' is integer in the manifest but `string` in module",
        ),
        (
            "stage order reversed: k8s would run before the network module that feeds it",
            "modules = [\"network\", \"k8s\"]",
            "modules = [\"k8s\", \"network\"]",
            "needs variable 'vpc_id'",
        ),
        (
            "a kubeconfig made of an output no module declares",
            "certificate_authority = \"cluster_ca_certificate\"",
            "certificate_authority = \"cluster_ca\"",
            "connect names output 'cluster_ca', which no module",
        ),
        (
            "a sensitive flag the module does not share",
            "[variables.vpc_cidr]\ntype = \"string\"",
            "[variables.vpc_cidr]\ntype = \"string\"\nsensitive = true",
            "'vpc_cidr' is sensitive in the manifest",
        ),
    ] {
        let p = problems(&basic.replacen(from, to, 1));
        assert!(p.iter().any(|p| p.contains(says)), "{what}: {p:?}");
    }

    // Splitting network and k8s into two stages is fine: earlier-stage outputs feed later stages.
    let p = problems(&basic.replacen(
        "stages = [{ name = \"cluster\", modules = [\"network\", \"k8s\"] }]",
        "stages = [{ name = \"network\", modules = [\"network\"] }, { name = \"cluster\", modules = [\"k8s\"] }]",
        1,
    ));
    assert!(p.is_empty(), "{p:?}");

    // The advanced template's password must stay required: the module has no default.
    let adv = manifest_text("aws-eks-advanced");
    assert!(problems(&adv).is_empty());
    let p = problems(&adv.replacen("sensitive = true\nrequired = true", "sensitive = true", 1));
    assert!(
        p.iter()
            .any(|p| p.contains("needs variable 'grafana_admin_password'")),
        "{p:?}"
    );

    // The runner installs the agent from outputs the modules must declare (the managed agent variables no
    // module takes are another problem, left out here).
    let with_agent = |agent: &str| {
        let text = format!(
            "{basic}\n[variables.agent_token]\ntype = \"string\"\nmanaged = true\nsensitive = true\n\
             [variables.control_plane_url]\ntype = \"string\"\nmanaged = true\n[agent]\ninstall = \"runner\"\n{agent}\n"
        );
        problems(&text)
            .into_iter()
            .filter(|p| p.contains("agent."))
            .collect::<Vec<_>>()
    };
    let declared = "endpoint_output = \"cluster_endpoint\"\nca_output = \"cluster_ca_certificate\"\n\
                    name_output = \"cluster_arn\"";
    assert!(with_agent(declared).is_empty(), "{:?}", with_agent(declared));
    let p = with_agent(&declared.replace("cluster_ca_certificate", "cluster_ca"));
    assert!(
        p.iter()
            .any(|p| p.contains("agent.ca_output names output 'cluster_ca', which no module")),
        "{p:?}"
    );
    // A bearer token in a plain output would travel in events and logs.
    let p = with_agent(&format!("{declared}\ntoken_output = \"node_role_arn\""));
    assert!(
        p.iter()
            .any(|p| p.contains("agent.token_output names output 'node_role_arn', which is not sensitive")),
        "{p:?}"
    );

    // check_template reports through the error type publish uses.
    let t = Template::from_toml(&basic.replacen("[variables.tags]", "[variables.tagz]", 1)).unwrap();
    let err = check_template(&t, &modules).unwrap_err().to_string();
    assert!(err.contains("'tagz'") && err.contains("aws-eks-basic"), "{err}");
}

/// The schema facts of the providers the other clouds' modules use (tests/fixtures/provider-schemas).
fn provider_facts() -> Vec<ProviderFacts> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/provider-schemas");
    ["google", "azurerm", "digitalocean", "linode"]
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(dir.join(format!("{p}.json"))).unwrap();
            ProviderFacts::from_json(&text).unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .collect()
}

/// No engine can validate the other clouds' modules here (their providers are not installable): every
/// resource type, argument and block they use is checked against the provider's published schema at the
/// version the module pins instead, and every required argument is there.
#[test]
fn the_other_clouds_modules_match_their_providers_schemas() {
    let facts = provider_facts();
    for (p, version) in facts.iter().zip(["7.45.0", "5.2.0", "2.99.1", "3.13.0"]) {
        assert_eq!(p.version, version, "{}", p.provider);
        assert!(p.tag.ends_with(version) && p.repository.starts_with("https://github.com/"));
    }
    // The other clouds' modules: every one but AWS's four.
    for module in &MODULES[4..] {
        let dir = templates_root().join("modules").join(module);
        let problems = check_module(&dir, &facts).unwrap_or_else(|e| panic!("{e}"));
        assert!(problems.is_empty(), "{module}:\n{}", problems.join("\n"));
        // Not vacuous: the module has resources, and each is one the facts know.
        let main = std::fs::read_to_string(dir.join("main.tf")).unwrap();
        assert!(main.contains("resource \""), "{module} declares resources");
    }
}

/// Mutations of the real modules: each one alone makes the schema check fail, naming what to fix.
#[test]
fn mutating_a_cloud_module_breaks_the_schema_check() {
    let facts = provider_facts();
    let check = |module: &str, from: &str, to: &str| {
        let dir = templates_root().join("modules").join(module);
        let text = std::fs::read_to_string(dir.join("main.tf")).unwrap();
        assert!(text.contains(from), "{module} has {from:?}");
        check_source("main.tf", &text.replacen(from, to, 1), &facts).unwrap()
    };
    let has = |p: Vec<String>, needle: &str| {
        assert!(
            p.iter().any(|x| x.contains(needle)),
            "missing {needle:?} in {p:#?}"
        );
    };
    // A misspelt argument (azurerm 4.0 renamed enable_auto_scaling; 5.x has only the new name).
    has(
        check("azure-aks", "auto_scaling_enabled", "enable_auto_scaling"),
        "argument 'enable_auto_scaling' is not in the schema of version 5.2.0",
    );
    // A required argument left out.
    has(
        check("gcp-gke", "  cluster  = google_container_cluster.this.id\n", ""),
        "resource \"google_container_node_pool\" \"nodes\": required argument 'cluster' is missing",
    );
    // A block that does not exist, inside a dynamic block.
    has(
        check(
            "do-doks",
            "dynamic \"control_plane_firewall\"",
            "dynamic \"control_plane_firewal\"",
        ),
        "block 'control_plane_firewal' is not in the schema of version 2.99.1",
    );
    // A resource type the provider does not have.
    has(
        check(
            "linode-lke",
            "resource \"linode_firewall\"",
            "resource \"linode_cloud_firewall\"",
        ),
        "no schema facts for resource type 'linode_cloud_firewall'",
    );
    // A computed attribute set as an argument.
    has(
        check(
            "gcp-network",
            "  routing_mode            = \"REGIONAL\"\n",
            "  self_link = \"x\"\n",
        ),
        "argument 'self_link' is not in the schema of version 7.45.0 (it is computed",
    );
    // A provider not pinned to the version the facts came from.
    let dir = templates_root().join("modules/gcp-gke");
    let text = std::fs::read_to_string(dir.join("versions.tf")).unwrap();
    let p = check_source("versions.tf", &text.replace("\"7.45.0\"", "\">= 6.0\""), &facts).unwrap();
    has(
        p,
        "provider hashicorp/google must be pinned to version = \"7.45.0\"",
    );
}

/// A module's own check of `kubernetes_version` lists exactly the versions its cloud's catalog offers, so a
/// request the API accepts is never refused by the engine (and the catalog cannot grow past the module).
#[test]
fn the_modules_kubernetes_versions_are_the_catalogs() {
    let cats = strato_domain::catalog::Catalogs::builtin();
    for (module, provider) in [
        ("gcp-gke", CloudProvider::Gcp),
        ("azure-aks", CloudProvider::Azure),
        ("do-doks", CloudProvider::Digitalocean),
        ("linode-lke", CloudProvider::Linode),
    ] {
        let text =
            std::fs::read_to_string(templates_root().join("modules").join(module).join("variables.tf"))
                .unwrap();
        let listed: Vec<String> = cats
            .get(provider)
            .kubernetes_versions
            .iter()
            .map(|v| format!("\"{v}\""))
            .collect();
        let expected = format!("contains([{}], var.kubernetes_version)", listed.join(", "));
        assert!(text.contains(&expected), "{module}: expected {expected}");
    }
}
