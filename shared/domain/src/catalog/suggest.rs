//! What to tell someone whose region, size, zone or Kubernetes version is not in the requested cloud's
//! catalog: which cloud it belongs to (a size copied from another cloud's console is the common mistake) and the
//! nearest value the requested cloud does offer.
//!
//! Sizes are compared by what they are (vCPU, then memory, then family), not by name: `e2-standard-4` and
//! `Standard_D4s_v5` share no letters but are the same machine. Regions, zones and versions are compared by name
//! (versions numerically), since there is nothing else to compare them by.

use super::{Catalogs, InstanceType, ProviderCatalog};
use crate::model::CloudProvider;

/// The kind of catalog entry a value should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Region,
    Zone,
    InstanceType,
    KubernetesVersion,
}

impl Kind {
    /// What each cloud calls the thing (so the message uses the words of that cloud's console).
    pub fn noun(self, provider: CloudProvider) -> &'static str {
        match (self, provider) {
            (Kind::Region, _) => "region",
            (Kind::Zone, _) => "zone",
            (Kind::KubernetesVersion, _) => "Kubernetes version",
            (Kind::InstanceType, CloudProvider::Aws) => "instance type",
            (Kind::InstanceType, CloudProvider::Gcp) => "machine type",
            (Kind::InstanceType, CloudProvider::Azure | CloudProvider::Digitalocean) => "size",
            (Kind::InstanceType, CloudProvider::Linode) => "plan",
        }
    }

    /// Every value of this kind the cloud's catalog has, in catalog order.
    pub fn values(self, cat: &ProviderCatalog) -> Vec<&str> {
        match self {
            Kind::Region => cat.regions.iter().map(|r| r.id.as_str()).collect(),
            Kind::Zone => cat
                .regions
                .iter()
                .flat_map(|r| r.zones.iter().map(String::as_str))
                .collect(),
            Kind::InstanceType => cat.instance_types.iter().map(|i| i.name.as_str()).collect(),
            Kind::KubernetesVersion => cat.kubernetes_versions.iter().map(String::as_str).collect(),
        }
    }
}

/// Why `value` is not a `kind` of `requested` and what to use instead, as one sentence for a problem text:
/// `'e2-standard-4' is a gcp machine type; nearest azure size: Standard_D4s_v5 (4 vCPU, 16 GiB)`.
/// `None` when the value is in the requested cloud's catalog after all (nothing to explain).
pub fn explain(catalogs: &Catalogs, requested: CloudProvider, kind: Kind, value: &str) -> Option<String> {
    let cat = catalogs.get(requested);
    if kind.values(cat).contains(&value) {
        return None;
    }
    let shown = short(value);
    let noun = kind.noun(requested);
    // Zones are bare numbers on Azure ("1"), so "which cloud" would be a guess: only the others are attributed.
    let owners: Vec<&ProviderCatalog> = catalogs
        .all()
        .filter(|c| c.provider != requested && kind != Kind::Zone && kind.values(c).contains(&value))
        .collect();
    let head = match owners.as_slice() {
        [] => format!("'{shown}' is not a {requested} {noun} Strato offers"),
        [one] => format!(
            "'{shown}' is {} {} {}, not {} {requested} {noun}",
            article(one.provider.as_str()),
            one.provider,
            kind.noun(one.provider),
            article(requested.as_str())
        ),
        many => {
            let names: Vec<&str> = many.iter().map(|c| c.provider.as_str()).collect();
            format!(
                "'{shown}' is a {} of {}, not {} {requested} {noun}",
                kind.noun(many[0].provider),
                names.join(", "),
                article(requested.as_str())
            )
        }
    };
    let nearest = match kind {
        Kind::InstanceType => {
            let like = owners.iter().find_map(|c| c.instance_type(value));
            nearest_size(cat, like, value)
                .map(|i| format!("{} ({} vCPU, {} GiB)", i.name, i.vcpu, trim_float(i.memory_gib)))
        }
        Kind::KubernetesVersion => nearest_version(&kind.values(cat), value).map(str::to_owned),
        Kind::Region => nearest_region(cat, owners.first().copied(), value).map(str::to_owned),
        Kind::Zone => nearest_name(&kind.values(cat), value).map(str::to_owned),
    };
    Some(match nearest {
        Some(n) => format!("{head}; nearest {requested} {noun}: {n}"),
        None => head,
    })
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn short(s: &str) -> String {
    if s.chars().count() <= 64 {
        s.to_owned()
    } else {
        s.chars().take(64).collect::<String>() + "…"
    }
}

fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// The size of `cat` closest to `like` by vCPU, then memory, then same family; by name when `like` is unknown.
fn nearest_size<'a>(
    cat: &'a ProviderCatalog,
    like: Option<&InstanceType>,
    value: &str,
) -> Option<&'a InstanceType> {
    match like {
        Some(like) => cat.instance_types.iter().min_by(|a, b| {
            let key = |i: &InstanceType| {
                (
                    i.vcpu.abs_diff(like.vcpu),
                    // Memory in MiB so the comparison is total (no NaN in catalog data, but f64 is not Ord).
                    ((i.memory_gib - like.memory_gib).abs() * 1024.0).round() as u64,
                    i.family != like.family,
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
        }),
        None => {
            let names: Vec<&str> = cat.instance_types.iter().map(|i| i.name.as_str()).collect();
            let n = nearest_name(&names, value)?;
            cat.instance_type(n)
        }
    }
}

/// A region of another cloud is matched by the words of its place name first ("East US" ~ "US East (N.
/// Virginia)"), then by id spelling; an unknown one by id spelling only.
fn nearest_region<'a>(
    cat: &'a ProviderCatalog,
    owner: Option<&ProviderCatalog>,
    value: &str,
) -> Option<&'a str> {
    let place = owner.and_then(|o| o.region(value)).map(|r| words(&r.name));
    cat.regions
        .iter()
        .min_by_key(|r| {
            let shared = place
                .as_ref()
                .map_or(0, |p| words(&r.name).iter().filter(|w| p.contains(w)).count());
            (usize::MAX - shared, edit_distance(&r.id, value), r.id.clone())
        })
        .map(|r| r.id.as_str())
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The numerically closest "major.minor" (ties go to the newer); by spelling when the value is not a version.
fn nearest_version<'a>(known: &[&'a str], value: &str) -> Option<&'a str> {
    let parse = |v: &str| -> Option<(i64, i64)> {
        let mut it = v.trim_start_matches('v').split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some((major, minor))
    };
    match parse(value) {
        Some((ma, mi)) => known
            .iter()
            .filter_map(|k| parse(k).map(|p| (k, p)))
            .min_by_key(|(_, (kma, kmi))| ((kma - ma).abs() * 1000 + (kmi - mi).abs(), -kmi))
            .map(|(k, _)| *k),
        None => nearest_name(known, value),
    }
}

fn nearest_name<'a>(known: &[&'a str], value: &str) -> Option<&'a str> {
    known
        .iter()
        .min_by_key(|k| (edit_distance(k, value), **k))
        .copied()
}

/// Levenshtein distance over characters, case-insensitive (cloud ids are lower case; people type otherwise).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().take(256).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use CloudProvider::*;

    fn say(p: CloudProvider, kind: Kind, v: &str) -> String {
        explain(Catalogs::builtin(), p, kind, v).expect("not in the catalog")
    }

    #[test]
    fn a_size_of_another_cloud_names_it_and_the_nearest_by_vcpu_then_memory() {
        assert_eq!(
            say(Azure, Kind::InstanceType, "e2-standard-4"),
            "'e2-standard-4' is a gcp machine type, not an azure size; nearest azure size: Standard_D4s_v5 (4 \
             vCPU, 16 GiB)"
        );
        let s = say(Gcp, Kind::InstanceType, "t3.medium");
        assert!(s.starts_with("'t3.medium' is an aws instance type"), "{s}");
        assert!(
            s.contains("nearest gcp machine type: e2-medium (2 vCPU, 4 GiB)"),
            "{s}"
        );
        let s = say(Linode, Kind::InstanceType, "s-4vcpu-8gb");
        assert!(
            s.contains("is a digitalocean size")
                && s.contains("nearest linode plan: g6-standard-4 (4 vCPU, 8 GiB)"),
            "{s}"
        );
    }

    #[test]
    fn a_size_of_no_cloud_gets_the_nearest_by_name() {
        let s = say(Aws, Kind::InstanceType, "t3.mediun");
        assert_eq!(
            s,
            "'t3.mediun' is not a aws instance type Strato offers; nearest aws instance type: t3.medium (2 vCPU, 4 GiB)"
        );
    }

    #[test]
    fn a_region_of_another_cloud_names_it_and_the_nearest_place() {
        let s = say(Gcp, Kind::Region, "us-east-1");
        // N. Virginia is Ashburn, Virginia: the place, not the spelling (us-east1 is South Carolina).
        assert_eq!(
            s,
            "'us-east-1' is an aws region, not a gcp region; nearest gcp region: us-east4"
        );
        let s = say(Aws, Kind::Region, "eastus");
        assert!(
            s.contains("is an azure region") && s.ends_with("nearest aws region: us-east-1"),
            "{s}"
        );
        let s = say(Azure, Kind::Region, "mars-1");
        assert!(
            s.starts_with("'mars-1' is not a azure region Strato offers; nearest azure region: "),
            "{s}"
        );
    }

    #[test]
    fn a_version_of_another_cloud_names_every_cloud_that_has_it_and_the_nearest() {
        let s = say(Linode, Kind::KubernetesVersion, "1.29");
        assert_eq!(
            s,
            "'1.29' is a Kubernetes version of aws, azure, not a linode Kubernetes version; nearest linode \
             Kubernetes version: 1.31"
        );
        let s = say(Gcp, Kind::KubernetesVersion, "1.20");
        assert!(s.ends_with("nearest gcp Kubernetes version: 1.30"), "{s}");
        let s = say(Azure, Kind::KubernetesVersion, "latest");
        assert!(
            s.starts_with("'latest' is not a azure Kubernetes version Strato offers"),
            "{s}"
        );
    }

    #[test]
    fn a_value_in_the_catalog_needs_no_explanation() {
        assert!(explain(Catalogs::builtin(), Gcp, Kind::InstanceType, "e2-standard-4").is_none());
        assert!(explain(Catalogs::builtin(), Linode, Kind::KubernetesVersion, "1.31").is_none());
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("us-east1", "us-east-1"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
