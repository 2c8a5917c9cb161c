//! Targets on GCP, Azure, DigitalOcean and Linode, and what every cloud's target has in common: its
//! `provider` and the fields that belong to it (another cloud's field is refused, naming the right ones).

use strato_domain::model::{
    AzureTarget, CloudProvider, GCP_PROJECT_RULE, GUID_RULE, GcpProjectId, GcpTarget, Guid,
    SERVICE_ACCOUNT_RULE, ServiceAccountEmail, Target, TokenTarget, WIF_PROVIDER_RULE,
    WorkloadIdentityProvider,
};
use strato_domain::validate::FieldError;

use super::{BUCKET_RULE, bucket_ok, check, optional, required, shown};
use crate::error::ApiError;
use crate::requests::{Field, TargetBody, unknown};

const PROVIDERS: &str = "aws, gcp, azure, digitalocean, linode";
const STORAGE_ACCOUNT_RULE: &str = "an Azure storage account name: 3-24 characters of a-z and 0-9";
const CONTAINER_RULE: &str =
    "an Azure blob container name: 3-63 characters of a-z, 0-9 and '-', starting with a letter or digit";
const RESOURCE_GROUP_RULE: &str =
    "an Azure resource group name: 1-90 characters of letters, digits, '_', '-', '.' and '()'";
const REGION_RULE: &str = "the object storage region, e.g. nyc3 (Spaces) or us-east-1 (Linode): 2-32 characters of a-z, 0-9 and '-'";
const GCS_RULE: &str = "a GCS bucket name: 3-63 characters of a-z, 0-9, '-' and '_', starting and ending with a \
                        letter or digit";

/// The target's cloud: `provider` (absent or null: aws).
pub(super) fn provider(v: Field<String>, errors: &mut Vec<FieldError>) -> Option<CloudProvider> {
    match v {
        Field::Missing | Field::Null => Some(CloudProvider::Aws),
        Field::Ok(p) => match p.parse() {
            Ok(p) => Some(p),
            Err(_) => {
                let problem = format!("'{}' is not a provider", shown(&p));
                errors.push(ApiError::field("target.provider", problem, PROVIDERS));
                None
            }
        },
        Field::Bad(_) => {
            errors.push(ApiError::field("target.provider", "must be a string", PROVIDERS));
            None
        }
    }
}

/// The fields a target of `p` takes, as a 422's fix lists them.
pub(super) fn fields_of(p: CloudProvider) -> &'static str {
    match p {
        CloudProvider::Aws => super::FIELDS,
        CloudProvider::Gcp => "project_id, workload_identity_provider, service_account, state_bucket",
        CloudProvider::Azure => {
            "tenant_id, client_id, subscription_id, state_storage_account, state_container, state_resource_group"
        }
        CloudProvider::Digitalocean | CloudProvider::Linode => "state_bucket, state_region",
    }
}

/// Every cloud-specific member that is present, with the clouds it belongs to.
fn present(t: &TargetBody) -> Vec<(&'static str, &'static [CloudProvider])> {
    use CloudProvider::*;
    let given = |f: &Field<String>| !matches!(f, Field::Missing);
    let all: [(&'static str, bool, &'static [CloudProvider]); 15] = [
        ("role_arn", given(&t.role_arn), &[Aws]),
        ("auth", given(&t.auth), &[Aws]),
        (
            "state_bucket",
            given(&t.state_bucket),
            &[Aws, Gcp, Digitalocean, Linode],
        ),
        ("lock_table", given(&t.lock_table), &[Aws]),
        ("region", given(&t.region), &[Aws]),
        ("project_id", given(&t.project_id), &[Gcp]),
        (
            "workload_identity_provider",
            given(&t.workload_identity_provider),
            &[Gcp],
        ),
        ("service_account", given(&t.service_account), &[Gcp]),
        ("tenant_id", given(&t.tenant_id), &[Azure]),
        ("client_id", given(&t.client_id), &[Azure]),
        ("subscription_id", given(&t.subscription_id), &[Azure]),
        ("state_storage_account", given(&t.state_storage_account), &[Azure]),
        ("state_container", given(&t.state_container), &[Azure]),
        ("state_resource_group", given(&t.state_resource_group), &[Azure]),
        ("state_region", given(&t.state_region), &[Digitalocean, Linode]),
    ];
    all.into_iter()
        .filter(|(_, given, _)| *given)
        .map(|(k, _, clouds)| (k, clouds))
        .collect()
}

/// A member of another cloud's target: 422 naming it and this cloud's fields.
pub(super) fn refuse_foreign_fields(t: &TargetBody, cloud: CloudProvider, errors: &mut Vec<FieldError>) {
    for (k, clouds) in present(t) {
        if !clouds.contains(&cloud) {
            errors.push(ApiError::field(
                &format!("target.{k}"),
                format!("is not a field of a {cloud} target"),
                fields_of(cloud),
            ));
        }
    }
}

/// A required identifier parsed into its newtype, or its problem at `target.<k>` (the value shown cut to
/// 64 characters).
fn parsed<T: std::str::FromStr>(
    v: Field<String>,
    k: &str,
    rule: &str,
    errors: &mut Vec<FieldError>,
) -> Option<T> {
    let v = required(v, k, rule, errors)?;
    match v.parse() {
        Ok(t) => Some(t),
        Err(_) => {
            let problem = format!("'{}' is not valid", shown(&v));
            errors.push(ApiError::field(&format!("target.{k}"), problem, rule));
            None
        }
    }
}

/// One of two members that only go together is missing: 422 naming it.
fn pair(a: (&str, bool), b: (&str, bool), why: &str, errors: &mut Vec<FieldError>) {
    if a.1 != b.1 {
        let missing = if a.1 { b.0 } else { a.0 };
        errors.push(ApiError::field(
            &format!("target.{missing}"),
            format!("is required with the other: {why}"),
            format!("both {} and {}, or neither", a.0, b.0),
        ));
    }
}

/// A target of a cloud other than AWS; `None` with its problems in `errors`.
pub(super) fn parse(t: TargetBody, cloud: CloudProvider, errors: &mut Vec<FieldError>) -> Option<Target> {
    let mut other = t.other.clone();
    if other.remove("external_id").is_some() {
        // Its value is never echoed: it may be a secret the caller meant for a trust policy.
        errors.push(ApiError::field(
            "target.external_id",
            format!("is not a field of a {cloud} target (and never chosen by the caller)"),
            fields_of(cloud),
        ));
    }
    unknown(
        &other,
        "target.",
        "is not a field of target",
        fields_of(cloud),
        errors,
    );
    match cloud {
        CloudProvider::Gcp => gcp(t, errors),
        CloudProvider::Azure => azure(t, errors),
        CloudProvider::Digitalocean | CloudProvider::Linode => {
            let state_bucket = check(
                optional(t.state_bucket, "state_bucket", BUCKET_RULE, errors),
                "state_bucket",
                bucket_ok,
                |b| format!("'{}' is not a valid bucket name", shown(b)),
                || BUCKET_RULE.into(),
                errors,
            );
            let state_region = check(
                optional(t.state_region, "state_region", REGION_RULE, errors),
                "state_region",
                |r| {
                    (2..=32).contains(&r.len())
                        && r.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                },
                |r| format!("'{}' is not an object storage region", shown(r)),
                || REGION_RULE.into(),
                errors,
            );
            let why = "a bucket of the cloud's object storage lives in a region";
            pair(
                ("state_bucket", state_bucket.is_some()),
                ("state_region", state_region.is_some()),
                why,
                errors,
            );
            let t = TokenTarget {
                state_bucket,
                state_region,
            };
            Some(if cloud == CloudProvider::Linode {
                Target::Linode(t)
            } else {
                Target::Digitalocean(t)
            })
        }
        CloudProvider::Aws => None,
    }
}

fn gcp(t: TargetBody, errors: &mut Vec<FieldError>) -> Option<Target> {
    let project_id: Option<GcpProjectId> = parsed(t.project_id, "project_id", GCP_PROJECT_RULE, errors);
    let provider: Option<WorkloadIdentityProvider> = parsed(
        t.workload_identity_provider,
        "workload_identity_provider",
        WIF_PROVIDER_RULE,
        errors,
    );
    let account: Option<ServiceAccountEmail> =
        parsed(t.service_account, "service_account", SERVICE_ACCOUNT_RULE, errors);
    let state_bucket = check(
        optional(t.state_bucket, "state_bucket", GCS_RULE, errors),
        "state_bucket",
        |b| {
            let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            (3..=63).contains(&b.len())
                && b.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                && edge(b.chars().next())
                && edge(b.chars().last())
                && !b.starts_with("goog")
        },
        |b| format!("'{}' is not a valid GCS bucket name", shown(b)),
        || GCS_RULE.into(),
        errors,
    );
    Some(Target::Gcp(GcpTarget {
        project_id: project_id?,
        workload_identity_provider: provider?,
        service_account: account?,
        state_bucket,
    }))
}

fn azure(t: TargetBody, errors: &mut Vec<FieldError>) -> Option<Target> {
    let tenant_id: Option<Guid> = parsed(t.tenant_id, "tenant_id", GUID_RULE, errors);
    let client_id: Option<Guid> = parsed(t.client_id, "client_id", GUID_RULE, errors);
    let subscription_id: Option<Guid> = parsed(t.subscription_id, "subscription_id", GUID_RULE, errors);
    let account = check(
        optional(
            t.state_storage_account,
            "state_storage_account",
            STORAGE_ACCOUNT_RULE,
            errors,
        ),
        "state_storage_account",
        |a| (3..=24).contains(&a.len()) && a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
        |a| format!("'{}' is not a valid storage account name", shown(a)),
        || STORAGE_ACCOUNT_RULE.into(),
        errors,
    );
    let container = check(
        optional(t.state_container, "state_container", CONTAINER_RULE, errors),
        "state_container",
        |c| {
            (3..=63).contains(&c.len())
                && c.chars()
                    .all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '-')
                && !c.starts_with('-')
                && !c.ends_with('-')
                && !c.contains("--")
        },
        |c| format!("'{}' is not a valid blob container name", shown(c)),
        || CONTAINER_RULE.into(),
        errors,
    );
    let group = check(
        optional(
            t.state_resource_group,
            "state_resource_group",
            RESOURCE_GROUP_RULE,
            errors,
        ),
        "state_resource_group",
        |g| {
            (1..=90).contains(&g.len())
                && g.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.()".contains(c))
                && !g.ends_with('.')
        },
        |g| format!("'{}' is not a valid resource group name", shown(g)),
        || RESOURCE_GROUP_RULE.into(),
        errors,
    );
    pair(
        ("state_storage_account", account.is_some()),
        ("state_container", container.is_some()),
        "the state lives in a container of a storage account",
        errors,
    );
    Some(Target::Azure(AzureTarget {
        tenant_id: tenant_id?,
        client_id: client_id?,
        subscription_id: subscription_id?,
        state_storage_account: account,
        state_container: container,
        state_resource_group: group,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::parse;
    use super::*;

    fn run(v: Value, provider: CloudProvider) -> (Option<Target>, Vec<FieldError>) {
        let mut errors = Vec::new();
        let t = parse(serde_json::from_value(v).unwrap(), Some(provider), &mut errors);
        (t, errors)
    }

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        let mut f: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        f.sort();
        f
    }

    const WIP: &str =
        "projects/123456789/locations/global/workloadIdentityPools/strato/providers/strato-oidc";

    #[test]
    fn each_clouds_target_parses_with_its_own_fields() {
        let (t, e) = run(
            json!({"provider": "gcp", "project_id": "acme-prod-1", "workload_identity_provider": WIP,
                   "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com", "state_bucket": "acme-tfstate"}),
            CloudProvider::Gcp,
        );
        assert!(e.is_empty(), "{e:?}");
        assert!(matches!(t, Some(Target::Gcp(_))));
        let (t, e) = run(
            json!({"provider": "azure", "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
                   "client_id": "00000000-0000-0000-0000-000000000001",
                   "subscription_id": "a1b2c3d4-0000-0000-0000-00000000abcd",
                   "state_storage_account": "acmetfstate", "state_container": "tfstate"}),
            CloudProvider::Azure,
        );
        assert!(e.is_empty(), "{e:?}");
        assert!(matches!(t, Some(Target::Azure(_))));
        let (t, e) = run(json!({"provider": "digitalocean"}), CloudProvider::Digitalocean);
        assert!(e.is_empty(), "{e:?}");
        assert!(matches!(t, Some(Target::Digitalocean(_))));
        let (t, e) = run(
            json!({"provider": "linode", "state_bucket": "acme-tfstate", "state_region": "us-east-1"}),
            CloudProvider::Linode,
        );
        assert!(e.is_empty(), "{e:?}");
        assert!(matches!(t, Some(Target::Linode(_))));
        let (t, e) = run(
            json!({"role_arn": "arn:aws:iam::123456789012:role/strato", "auth": "web_identity"}),
            CloudProvider::Aws,
        );
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(
            t.unwrap().identity_audience().as_deref(),
            Some("sts.amazonaws.com")
        );
    }

    #[test]
    fn every_bad_field_is_named_with_its_fix() {
        let (t, e) = run(
            json!({"provider": "gcp", "project_id": "Acme", "workload_identity_provider": "pool/prov",
                   "role_arn": "arn:aws:iam::123456789012:role/strato", "extra": 1}),
            CloudProvider::Gcp,
        );
        assert!(t.is_none());
        assert_eq!(
            fields(&e),
            [
                "target.extra",
                "target.project_id",
                "target.role_arn",
                "target.service_account",
                "target.workload_identity_provider"
            ]
        );
        let wip = e
            .iter()
            .find(|e| e.field == "target.workload_identity_provider")
            .unwrap();
        assert!(wip.allowed.contains("workloadIdentityPools"), "{wip:?}");
        let role = e.iter().find(|e| e.field == "target.role_arn").unwrap();
        assert!(role.problem.contains("not a field of a gcp target"), "{role:?}");
        assert!(role.allowed.contains("service_account"), "{role:?}");

        let (t, e) = run(
            json!({"provider": "azure", "tenant_id": "nope", "client_id": "00000000-0000-0000-0000-000000000001",
                   "state_storage_account": "acmetfstate"}),
            CloudProvider::Azure,
        );
        assert!(t.is_none());
        assert_eq!(
            fields(&e),
            [
                "target.state_container",
                "target.subscription_id",
                "target.tenant_id"
            ]
        );
        assert!(e.iter().any(|e| e.allowed.contains("8-4-4-4-12")), "{e:?}");

        let (_, e) = run(
            json!({"provider": "linode", "state_bucket": "acme-tfstate"}),
            CloudProvider::Linode,
        );
        assert_eq!(fields(&e), ["target.state_region"]);
        let (_, e) = run(json!({"provider": "moon"}), CloudProvider::Linode);
        assert_eq!(fields(&e), ["target.provider"]);
        let (_, e) = run(
            json!({"provider": "aws", "role_arn": "arn:aws:iam::123456789012:role/strato", "auth": "magic"}),
            CloudProvider::Aws,
        );
        assert_eq!(fields(&e), ["target.auth"]);
    }

    #[test]
    fn a_target_of_another_cloud_than_the_clusters_is_refused() {
        let (t, e) = run(json!({"provider": "azure"}), CloudProvider::Gcp);
        assert!(t.is_none());
        assert_eq!(fields(&e), ["target.provider"]);
        assert!(
            e[0].problem.contains("is azure") && e[0].problem.contains("provider is gcp"),
            "{e:?}"
        );
        assert!(e[0].allowed.contains("\"provider\": \"gcp\""), "{e:?}");
    }
}
