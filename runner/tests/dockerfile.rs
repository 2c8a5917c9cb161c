//! runner/Dockerfile checked without a container engine (none runs on the development machines, so the image
//! is never built here): the Rust image is the workspace's `rust-version`, the image builds for arm64 and
//! amd64, and each architecture's OpenTofu zip is pinned to its published SHA256.

use std::collections::BTreeMap;
use std::path::Path;

/// The published `tofu_<version>_SHA256SUMS` entries for the Linux zips the image may download, as
/// (version, arch) → sha256. Taken from the release's SHA256SUMS as repeated by package managers pinning the same
/// release (Homebrew, AUR, Hermit agree). A version bump in the Dockerfile must add its entries here.
const PUBLISHED: &[(&str, &str, &str)] = &[
    (
        "1.12.6",
        "amd64",
        "5dc43da4f750f33873dc25e94587128709e819e544b7be9016b255316153c3a8",
    ),
    (
        "1.12.6",
        "arm64",
        "e573979ba68a17fe7b881752051a694a7efcd970e39521f6a25775197861ed4d",
    ),
];

const ARCHES: [&str; 2] = ["amd64", "arm64"];

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn dockerfile() -> String {
    let path = root().join("runner/Dockerfile");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn rust_version() -> String {
    let path = root().join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
    manifest["workspace"]["package"]["rust-version"]
        .as_str()
        .expect("workspace.package.rust-version is a string")
        .to_owned()
}

/// Instructions with their continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

/// `FROM` lines grouped with the instructions of their stage.
fn stages(text: &str) -> Vec<(String, Vec<String>)> {
    let mut stages: Vec<(String, Vec<String>)> = Vec::new();
    for ins in instructions(text) {
        if ins.starts_with("FROM ") {
            stages.push((ins, Vec::new()));
        } else if let Some((_, body)) = stages.last_mut() {
            body.push(ins);
        }
    }
    stages
}

/// `ARG NAME=value` defaults of one stage.
fn args(body: &[String]) -> BTreeMap<String, String> {
    body.iter()
        .filter_map(|i| i.strip_prefix("ARG "))
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None => (a.trim().to_owned(), String::new()),
        })
        .collect()
}

#[test]
fn the_rust_image_is_the_workspace_rust_version() {
    let want = rust_version();
    let text = dockerfile();
    let rust_froms: Vec<String> = stages(&text)
        .into_iter()
        .map(|(from, _)| from)
        .filter(|from| from.contains(" rust:"))
        .collect();
    assert!(
        !rust_froms.is_empty(),
        "runner/Dockerfile has no `FROM rust:<tag>` build stage"
    );
    for from in rust_froms {
        let tag = from
            .split_whitespace()
            .find_map(|w| w.strip_prefix("rust:"))
            .expect("a rust:<tag> image");
        let version = tag.split('-').next().unwrap_or(tag);
        assert_eq!(
            version, want,
            "`{from}` builds with Rust {version}, but Cargo.toml's workspace rust-version is {want}: \
             the locked dependencies need it. Fix: use `rust:{want}-bookworm` (bump both together)"
        );
    }
}

#[test]
fn opentofu_is_pinned_and_checksummed_for_both_architectures() {
    let text = dockerfile();
    let stages = stages(&text);
    let (from, body) = stages
        .iter()
        .find(|(_, body)| {
            body.iter()
                .any(|i| i.contains("opentofu/opentofu/releases/download"))
        })
        .expect("a stage that downloads the OpenTofu release zip");
    let args = args(body);
    assert!(
        args.contains_key("TARGETARCH"),
        "the OpenTofu stage (`{from}`) must declare `ARG TARGETARCH` to download the target architecture's zip"
    );
    assert!(
        from.contains("--platform=$BUILDPLATFORM"),
        "`{from}`: the download stage should run on $BUILDPLATFORM (only the zip is per-architecture)"
    );

    let version = &args["TOFU_VERSION"];
    let parts: Vec<&str> = version.split('.').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()) && parts[0] == "1",
        "TOFU_VERSION `{version}` must be an exact 1.x.y release"
    );
    let run = body
        .iter()
        .find(|i| i.contains("releases/download"))
        .expect("the download RUN");
    assert!(
        run.contains("tofu_${TOFU_VERSION}_linux_${TARGETARCH}.zip"),
        "the download must name the zip by TARGETARCH, not one fixed architecture: {run}"
    );
    assert!(
        run.contains("sha256sum -c"),
        "the zip must be verified with sha256sum -c: {run}"
    );

    for arch in ARCHES {
        let arg = format!("TOFU_SHA256_{}", arch.to_uppercase());
        let pinned = args
            .get(&arg)
            .unwrap_or_else(|| panic!("no `ARG {arg}=<sha256>` for linux_{arch}"));
        let published = PUBLISHED
            .iter()
            .find(|(v, a, _)| v == version && *a == arch)
            .map(|(_, _, sum)| *sum)
            .unwrap_or_else(|| {
                panic!(
                    "no published SHA256SUMS entry recorded for tofu_{version}_linux_{arch}.zip in this test"
                )
            });
        assert_eq!(
            pinned, published,
            "{arg} is not the published SHA256 of tofu_{version}_linux_{arch}.zip"
        );
        assert!(
            run.contains(&format!("{arch}) sum=\"${{{arg}}}\"")),
            "the download must check the {arch} zip against {arg}: {run}"
        );
    }
}

#[test]
fn the_final_image_runs_as_a_non_root_user() {
    let text = dockerfile();
    let stages = stages(&text);
    let (from, body) = stages.last().expect("at least one stage");
    assert!(
        !from.contains(":latest"),
        "`{from}`: pin the base image, not :latest"
    );
    let user = body
        .iter()
        .rev()
        .find_map(|i| i.strip_prefix("USER "))
        .unwrap_or_else(|| panic!("the final stage (`{from}`) sets no USER: it would run as root"));
    let name = user.split(':').next().unwrap_or(user).trim();
    assert!(
        name != "root" && name != "0",
        "the final stage runs as `{user}`: use a non-root user (distroless `nonroot`)"
    );
}
