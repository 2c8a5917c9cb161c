//! agent/Dockerfile checked without a container engine (none runs on the development machines).

fn read(rel: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[test]
fn the_image_builds_with_the_workspace_rust_runs_as_65532_and_starts_the_agent() {
    let dockerfile = read("Dockerfile");
    let workspace = read("../Cargo.toml");
    let rust_version = workspace
        .lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = "))
        .expect("the workspace has a rust-version")
        .trim_matches('"');
    let lines: Vec<&str> = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .collect();
    assert!(
        lines.contains(&format!("FROM rust:{rust_version}-bookworm AS build").as_str()),
        "{dockerfile}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("FROM gcr.io/distroless/cc-debian12:nonroot"))
    );
    assert!(lines.contains(&"USER 65532:65532"));
    assert!(lines.contains(&"COPY --from=build /out/strato-agent /strato-agent"));
    assert!(lines.contains(&r#"ENTRYPOINT ["/strato-agent"]"#));
    assert!(lines.contains(&r#"CMD ["run"]"#));
    assert!(dockerfile.contains("linux/arm64") && dockerfile.contains("linux/amd64"));
    // The manifest's liveness probe runs the same binary.
    assert!(read("deploy/agent.yaml").contains(r#"command: ["/strato-agent", "probe"]"#));
}
