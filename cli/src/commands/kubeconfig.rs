//! `strato clusters kubeconfig`: the API's kubeconfig for a cluster, printed or merged into the user's
//! kubeconfig file the way `aws eks update-kubeconfig` does (entries of the same name replaced, the new
//! context made current, the file kept private to its owner).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_norway::{Mapping, Value as Yaml};

use super::cluster_id;
use crate::Ctx;
use crate::api::seg;
use crate::error::CliError;

/// The query the command passes on.
pub(crate) struct Asked {
    pub role_arn: Option<String>,
    pub aws_profile: Option<String>,
    pub context: Option<String>,
}

/// `file`: `None` prints the kubeconfig; `Some(path)` merges it into `path` (or the default file).
pub(crate) async fn run(
    ctx: &Ctx,
    given: &str,
    asked: &Asked,
    file: Option<Option<PathBuf>>,
) -> Result<(), CliError> {
    let id = cluster_id(&ctx.api, given).await?;
    let query: Vec<String> = [
        ("role_arn", &asked.role_arn),
        ("aws_profile", &asked.aws_profile),
        ("context", &asked.context),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", seg(v))))
    .collect();
    let mut path = format!("/v1/clusters/{}/kubeconfig", seg(&id));
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let v = ctx.api.get(&path).await?;
    let text = v["kubeconfig"].as_str().unwrap_or_default();
    let context = v["context"].as_str().unwrap_or_default();
    let Some(file) = file else {
        if !ctx.out.raw(&v)? {
            print!("{text}");
            if let Some(note) = v["note"].as_str() {
                eprintln!("note: {note}");
            }
        }
        return Ok(());
    };
    let target = match file {
        Some(p) => p,
        None => default_file()?,
    };
    let existing = match std::fs::read_to_string(&target) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(io(&target, source)),
    };
    let merged = merge(existing.as_deref(), text)
        .map_err(|e| CliError::Usage(format!("{}: {e}", target.display())))?;
    write_private(&target, &merged)?;
    if !ctx.out.raw(&v)? {
        eprintln!(
            "Context {context} is in {} and is the current context. Try: kubectl get nodes",
            target.display()
        );
        if let Some(note) = v["note"].as_str() {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}

/// Where kubectl reads its configuration first: the first file of `$KUBECONFIG`, else `~/.kube/config`.
fn default_file() -> Result<PathBuf, CliError> {
    if let Some(first) = std::env::var_os("KUBECONFIG")
        .and_then(|v| std::env::split_paths(&v).find(|p| !p.as_os_str().is_empty()))
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME")
        .ok_or_else(|| CliError::Usage("HOME is not set: name the file with --kubeconfig PATH".into()))?;
    Ok(PathBuf::from(home).join(".kube").join("config"))
}

fn io(path: &Path, source: std::io::Error) -> CliError {
    CliError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes through a temporary file beside the target and a rename, so a kubeconfig is never half-written;
/// owner-only (0600), as kubectl keeps it: it may hold other clusters' credentials.
fn write_private(target: &Path, text: &str) -> Result<(), CliError> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let tmp = dir.join(format!(
        ".{}.strato-{}",
        target
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let written = opts.open(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, target)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(target, e));
    }
    Ok(())
}

/// `new` merged into `existing`: its clusters, contexts and users replace entries of the same name (others
/// are kept as they are) and its context becomes the current one.
pub(crate) fn merge(existing: Option<&str>, new: &str) -> Result<String, String> {
    let new: Yaml = serde_norway::from_str(new).map_err(|e| format!("the API's kubeconfig: {e}"))?;
    let mut doc = match existing.map(str::trim) {
        None | Some("") => Yaml::Mapping(Mapping::new()),
        Some(text) => serde_norway::from_str(text).map_err(|e| {
            format!("not a kubeconfig this command can merge into ({e}); use another --kubeconfig")
        })?,
    };
    let Yaml::Mapping(map) = &mut doc else {
        return Err("not a kubeconfig (its top level is not a mapping); use another --kubeconfig".into());
    };
    for (k, v) in [("apiVersion", "v1"), ("kind", "Config")] {
        map.entry(Yaml::from(k)).or_insert_with(|| Yaml::from(v));
    }
    for list in ["clusters", "contexts", "users"] {
        let key = Yaml::from(list);
        let mut entries = match map.remove(&key) {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Sequence(s)) => s,
            Some(_) => return Err(format!("its {list} is not a list; use another --kubeconfig")),
        };
        for item in new[list].as_sequence().into_iter().flatten() {
            let name = &item["name"];
            entries.retain(|e| &e["name"] != name);
            entries.push(item.clone());
        }
        map.insert(key, Yaml::Sequence(entries));
    }
    map.insert(Yaml::from("current-context"), new["current-context"].clone());
    serde_norway::to_string(&doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(name: &str, server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: \"{name}\"\n  cluster:\n    server: \"{server}\"\n\
             contexts:\n- name: \"{name}\"\n  context:\n    cluster: \"{name}\"\n    user: \"{name}\"\n\
             current-context: \"{name}\"\nusers:\n- name: \"{name}\"\n  user:\n    exec:\n      command: aws\n"
        )
    }

    #[test]
    fn merging_replaces_our_entries_keeps_the_others_and_switches_context() {
        let theirs = "apiVersion: v1\nkind: Config\nclusters:\n- name: kind\n  cluster:\n    server: https://127.0.0.1:6443\n\
                      contexts:\n- name: kind\n  context:\n    cluster: kind\n    user: kind\n\
                      current-context: kind\nusers:\n- name: kind\n  user:\n    token: abc\n";
        let once = merge(Some(theirs), &ours("strato-demo", "https://old.example")).unwrap();
        let twice = merge(Some(&once), &ours("strato-demo", "https://new.example")).unwrap();
        let doc: Yaml = serde_norway::from_str(&twice).unwrap();
        assert_eq!(doc["current-context"], Yaml::from("strato-demo"));
        let names = |list: &str| -> Vec<String> {
            doc[list]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_owned())
                .collect()
        };
        for list in ["clusters", "contexts", "users"] {
            assert_eq!(names(list), ["kind", "strato-demo"], "{list}");
        }
        assert_eq!(
            doc["clusters"][1]["cluster"]["server"],
            Yaml::from("https://new.example")
        );
        // Someone else's credentials are carried over untouched.
        assert_eq!(doc["users"][0]["user"]["token"], Yaml::from("abc"));
    }

    #[test]
    fn a_missing_or_empty_file_becomes_ours_and_garbage_is_refused() {
        for existing in [None, Some(""), Some("\n")] {
            let doc: Yaml =
                serde_norway::from_str(&merge(existing, &ours("c", "https://x.example")).unwrap()).unwrap();
            assert_eq!(doc["kind"], Yaml::from("Config"));
            assert_eq!(doc["users"].as_sequence().unwrap().len(), 1);
        }
        assert!(merge(Some("- a list"), &ours("c", "https://x")).is_err());
        assert!(merge(Some("clusters: 3"), &ours("c", "https://x")).is_err());
        assert!(merge(Some("a: [unclosed"), &ours("c", "https://x")).is_err());
    }

    #[test]
    fn the_written_file_is_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("config");
        write_private(&path, "apiVersion: v1\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "apiVersion: v1\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        write_private(&path, "kind: Config\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kind: Config\n");
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }
}
