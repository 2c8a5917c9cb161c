use super::*;
use crate::template::sample::{EKS_MANIFEST, eks};

#[test]
fn parses_the_sample_manifest() {
    let t = eks();
    assert_eq!(t.name(), "aws-eks-basic");
    assert_eq!(t.manifest.stages[0].modules, ["network", "k8s"]);
    assert_eq!(t.manifest.variables["node_count"].ty, VarType::Integer);
    assert_eq!(t.manifest.rules.len(), 2);
    // Provider default overrides the variable's own default.
    assert_eq!(
        t.effective_default(CloudProvider::Aws, "node_instance_type")
            .unwrap(),
        "t3.medium"
    );
    assert_eq!(t.effective_default(CloudProvider::Aws, "node_count").unwrap(), 2);
    assert!(t.effective_default(CloudProvider::Aws, "owner_email").is_none());
}

fn broken(find: &str, replace: &str) -> String {
    assert!(EKS_MANIFEST.contains(find), "{find}");
    Template::from_toml(&EKS_MANIFEST.replacen(find, replace, 1))
        .unwrap_err()
        .to_string()
}

#[test]
fn inconsistent_manifests_are_refused() {
    assert!(broken("version = \"1.2.0\"", "version = \"1.2\"").contains("MAJOR.MINOR.PATCH"));
    assert!(broken("providers = [\"aws\"]", "providers = []").contains("no providers"));
    assert!(broken("modules = [\"network\", \"k8s\"]", "modules = []").contains("at least one module"));
    assert!(broken("required = true\n", "required = true\ndefault = \"a@b\"\n").contains("pick one"));
    assert!(broken("managed = true", "managed = true\ndefault = \"x\"").contains("managed"));
    assert!(
        broken("min = 1\nmax = 50\ndefault = 2", "min = 9\nmax = 5\ndefault = 2").contains("min is greater")
    );
    assert!(broken("type = \"bool\"", "type = \"bool\"\nmin = 1").contains("numeric"));
    assert!(broken("type = \"bool\"", "type = \"bool\"\npattern = 'x'").contains("string variables"));
    assert!(broken("pattern = '10", "pattern = '(10").contains("bad pattern"));
    assert!(broken("right = \"min_nodes\"", "right = \"spot\"").contains("not a numeric variable"));
    assert!(broken("right = \"min_nodes\"", "right = \"ghost\"").contains("not a numeric variable"));
    assert!(broken("default = \"1.30\"", "default = \"1.28\"").contains("violates its schema"));
    assert!(broken("max = 50\ndefault = 2", "max = 50\ndefault = 200").contains("violates its schema"));
    assert!(broken("node_instance_type = \"t3.medium\"", "ghost = 1").contains("unknown variable"));
    assert!(broken("[defaults.aws]", "[defaults.gcp]").contains("does not list"));
    assert!(broken("[variables.spot]", "[variables.Spot]").contains("identifier"));
    assert!(broken("type = \"bool\"", "type = \"boolean\"").contains("unknown variant"));
    assert!(broken("type = \"bool\"", "type = \"bool\"\ncolour = 1").contains("unknown field"));
    assert!(broken("max_length = 64", "max_length = 0").contains("max_length"));
    assert!(
        broken(
            "node_instance_type = \"t3.medium\"",
            "node_instance_type = \"t9.mega\""
        )
        .contains("violates its schema"),
        "provider defaults are checked against the provider catalog"
    );
    assert!(broken("region = \"us-east-1\"", "region = \"mars-1\"").contains("not in the aws catalog"));
}

#[test]
fn agent_templates_declare_their_managed_inputs() {
    let with_agent = format!("{EKS_MANIFEST}\n[agent]\ndeadline_secs = 60\n");
    let err = Template::from_toml(&with_agent).unwrap_err().to_string();
    assert!(err.contains("agent_token"), "{err}");
    let full = format!(
        "{EKS_MANIFEST}\n[variables.agent_token]\ntype = \"string\"\nmanaged = true\nsensitive = true\n\
         [variables.control_plane_url]\ntype = \"string\"\nmanaged = true\n[agent]\ndeadline_secs = 60\n"
    );
    let t = Template::from_toml(&full).unwrap();
    let agent = t.manifest.agent.as_ref().unwrap();
    assert_eq!(
        (agent.deadline_secs, agent.ready_nodes_variable.as_str()),
        (60, "node_count")
    );
    let bad = full.replace(
        "deadline_secs = 60",
        "deadline_secs = 60\nready_nodes_variable = \"spot\"",
    );
    assert!(
        Template::from_toml(&bad)
            .unwrap_err()
            .to_string()
            .contains("not an integer variable")
    );
}

/// The sample EKS manifest with an agent section whose body is `agent`.
fn with_agent(agent: &str) -> String {
    format!(
        "{EKS_MANIFEST}\n[variables.agent_token]\ntype = \"string\"\nmanaged = true\nsensitive = true\n\
         [variables.control_plane_url]\ntype = \"string\"\nmanaged = true\n[agent]\n{agent}\n"
    )
}

#[test]
fn the_runner_installs_the_agent_only_when_told_how_to_reach_the_cluster() {
    let runner = "install = \"runner\"\nendpoint_output = \"cluster_endpoint\"\nca_output = \"cluster_ca\"\n\
                  name_output = \"cluster_name\"";
    let t = Template::from_toml(&with_agent(runner)).unwrap();
    let agent = t.manifest.agent.as_ref().unwrap();
    assert_eq!(agent.install, AgentInstall::Runner);
    assert_eq!(
        agent.runner_outputs(),
        [
            ("endpoint_output", "cluster_endpoint"),
            ("ca_output", "cluster_ca"),
            ("name_output", "cluster_name")
        ]
    );
    // The default is today's: the template installs it, and the stored manifest does not mention `install`
    // (a function of the release before refuses unknown fields).
    let t = Template::from_toml(&with_agent("deadline_secs = 60")).unwrap();
    let agent = t.manifest.agent.as_ref().unwrap();
    assert_eq!(agent.install, AgentInstall::Template);
    assert!(agent.runner_outputs().is_empty());
    let stored = serde_json::to_value(agent).unwrap();
    assert_eq!(
        stored,
        serde_json::json!({"deadline_secs": 60, "ready_nodes_variable": "node_count"})
    );

    let refused = |agent: &str| Template::from_toml(&with_agent(agent)).unwrap_err().to_string();
    let e = refused("install = \"runner\"\nca_output = \"cluster_ca\"\nname_output = \"cluster_name\"");
    assert!(e.contains("agent.endpoint_output is required"), "{e}");
    let e = refused("install = \"runner\"\nendpoint_output = \"cluster_endpoint\"\nname_output = \"n\"");
    assert!(e.contains("agent.ca_output is required"), "{e}");
    // On AWS the runner signs an EKS token for the cluster's name: without it there is no token.
    let e = refused("install = \"runner\"\nendpoint_output = \"e\"\nca_output = \"c\"");
    assert!(
        e.contains("agent.name_output is required") && e.contains("aws"),
        "{e}"
    );
    let e = refused(&format!("{runner}\nendpoint_output_x = 1"));
    assert!(e.contains("unknown field"), "{e}");
    let e = refused(&runner.replace("\"cluster_ca\"", "\"Cluster-CA\""));
    assert!(
        e.contains("agent.ca_output 'Cluster-CA' must name an output"),
        "{e}"
    );
    let e = refused(&format!("{runner}\nimage = \"ghcr.io/x/agent:1 ; rm\""));
    assert!(e.contains("agent.image"), "{e}");
    let e = refused("install = \"cluster\"");
    assert!(e.contains("unknown variant"), "{e}");
    // The outputs and the image mean nothing to a template that installs the agent itself.
    let e = refused("endpoint_output = \"cluster_endpoint\"");
    assert!(
        e.contains("agent.endpoint_output applies only to install = \"runner\""),
        "{e}"
    );
    let t = Template::from_toml(&with_agent(&format!(
        "{runner}\nimage = \"registry.example/strato-agent:9.9.9\""
    )))
    .unwrap();
    assert_eq!(
        t.manifest.agent.unwrap().image.as_deref(),
        Some("registry.example/strato-agent:9.9.9")
    );
}

#[test]
fn clouds_without_a_minted_token_need_a_token_output() {
    let runner = "install = \"runner\"\nendpoint_output = \"e\"\nca_output = \"c\"";
    let on = |provider: &str, agent: &str| {
        Template::from_toml(&with_agent(agent).replacen(
            "providers = [\"aws\"]",
            &format!("providers = [\"aws\", \"{provider}\"]"),
            1,
        ))
    };
    for provider in ["digitalocean", "linode"] {
        let e = on(provider, &format!("{runner}\nname_output = \"n\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("agent.token_output is required") && e.contains(provider),
            "{e}"
        );
        // With it, the agent section passes (the sample's AWS instance-type defaults are another matter).
        if let Err(e) = on(provider, &format!("{runner}\ntoken_output = \"t\"")) {
            assert!(!e.to_string().contains("agent"), "{e}");
        }
    }
    // GKE and AKS: no token is minted for them yet, which the refusal says.
    for provider in ["gcp", "azure"] {
        let e = on(provider, &format!("{runner}\nname_output = \"n\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("yet") && e.contains(provider) && e.contains("install = \"template\""),
            "{e}"
        );
    }
}

#[test]
fn a_variable_may_name_its_form_section_and_label_and_they_stay_out_of_manifests_without_them() {
    let with = Template::from_toml(&EKS_MANIFEST.replacen(
        "[variables.node_count]\ntype = \"integer\"\n",
        "[variables.node_count]\ntype = \"integer\"\nsection = \"Nodes\"\nlabel = \"Number of nodes\"\n",
        1,
    ))
    .unwrap();
    let d = &with.manifest.variables["node_count"];
    assert_eq!(d.section.as_deref(), Some("Nodes"));
    assert_eq!(d.label.as_deref(), Some("Number of nodes"));
    // Unset, they are not written (a runner of the release before denies unknown fields).
    let plain = serde_json::to_value(&eks().manifest.variables["node_count"]).unwrap();
    assert!(
        plain.get("section").is_none() && plain.get("label").is_none(),
        "{plain}"
    );
    let written = serde_json::to_value(d).unwrap();
    assert_eq!(written["section"], "Nodes");
}
