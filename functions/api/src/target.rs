//! The optional `target` of a create: the customer's account the runner provisions into, per cloud
//! (`provider`, absent: aws; it must be the cluster's provider). AWS: a role it assumes with the external id
//! Strato issued the tenant (or with the run's identity token, `auth: web_identity`), and optionally the
//! customer's own state bucket and lock table; the other clouds in [`clouds`]. Checked here, field by field,
//! before anything is written. A caller-chosen `external_id` is refused: the id is issued by Strato
//! (`GET /v1/tenant/target-access`), so one tenant cannot try another tenant's role with a guessed id (the
//! confused deputy).

use strato_domain::catalog::Catalogs;
use strato_domain::model::{AwsAuth, CloudProvider, Target, TargetAccount};
use strato_domain::validate::FieldError;

use crate::error::ApiError;
use crate::requests::{Field, TargetBody, unknown};

mod clouds;

const FIELDS: &str = "role_arn, auth, state_bucket, lock_table, region";
const AUTH_RULE: &str =
    "assume_role (default: with your external id) or web_identity (with the run's identity token)";
/// What a request that names an external id is told.
pub(crate) const EXTERNAL_ID_ISSUED: &str = "leave it out: Strato issues your external id and uses it for \
     every target; GET /v1/tenant/target-access shows it and the trust policy your role needs";
const ARN_RULE: &str = "arn:aws:iam::<12-digit account id>:role/<role name>, the role name (optionally after a \
                        path) 1-64 characters of letters, digits and +=,.@_-";
const BUCKET_RULE: &str = "an S3 bucket name: 3-63 characters of a-z, 0-9, '.' and '-', starting and ending \
                           with a letter or digit, not an IP address";
const TABLE_RULE: &str = "a DynamoDB table name: 3-255 characters of letters, digits, '_', '-' and '.'";

/// Reads `target` (absent or null: none). Problems go to `errors` with paths such as `target.role_arn`.
pub(crate) fn parse(
    v: Field<TargetBody>,
    provider: Option<CloudProvider>,
    errors: &mut Vec<FieldError>,
) -> Option<Target> {
    let mut t = match v {
        // Strato's own account is an AWS account: a cluster on another cloud runs in the tenant's.
        Field::Missing | Field::Null => {
            if let Some(p) = provider.filter(|p| *p != CloudProvider::Aws) {
                errors.push(ApiError::field(
                    "target",
                    format!("is required for a {p} cluster: it runs in your own {p} account"),
                    format!(
                        "\"target\": {{\"provider\": \"{p}\", {}}} (GET /v1/tenant/target-access shows what to set up)",
                        clouds::fields_of(p)
                    ),
                ));
            }
            return None;
        }
        Field::Ok(t) => t,
        Field::Bad(_) => {
            errors.push(ApiError::field(
                "target",
                "must be an object",
                "{\"provider\"?: …, and that cloud's fields: see TargetRequest}",
            ));
            return None;
        }
    };
    let absent = matches!(t.provider, Field::Missing | Field::Null);
    let cloud = clouds::provider(std::mem::take(&mut t.provider), errors)?;
    if let Some(p) = provider.filter(|p| *p != cloud) {
        let absent = if absent { " (no provider means aws)" } else { "" };
        errors.push(ApiError::field(
            "target.provider",
            format!("is {cloud}{absent}, but the cluster's provider is {p}"),
            format!(
                "\"provider\": \"{p}\" with {p}'s target fields ({})",
                clouds::fields_of(p)
            ),
        ));
        return None;
    }
    let before = errors.len();
    clouds::refuse_foreign_fields(&t, cloud, errors);
    if cloud != CloudProvider::Aws {
        let parsed = clouds::parse(t, cloud, errors);
        return parsed.filter(|_| errors.len() == before);
    }
    parse_aws(t, errors, before).map(Target::Aws)
}

fn parse_aws(t: TargetBody, errors: &mut Vec<FieldError>, before: usize) -> Option<TargetAccount> {
    let mut other = t.other.clone();
    if other.remove("external_id").is_some() {
        // Its value is never echoed: it may be a secret the caller meant for its trust policy.
        errors.push(ApiError::field(
            "target.external_id",
            "is issued by Strato and cannot be chosen",
            EXTERNAL_ID_ISSUED,
        ));
    }
    unknown(&other, "target.", "is not a field of target", FIELDS, errors);
    let has_bucket = !matches!(t.state_bucket, Field::Missing);
    let auth = match t.auth {
        Field::Missing | Field::Null => AwsAuth::AssumeRole,
        Field::Ok(a) if a == "assume_role" => AwsAuth::AssumeRole,
        Field::Ok(a) if a == "web_identity" => AwsAuth::WebIdentity,
        Field::Ok(a) => {
            errors.push(ApiError::field(
                "target.auth",
                format!("'{}' is not a way to assume the role", shown(&a)),
                AUTH_RULE,
            ));
            AwsAuth::AssumeRole
        }
        Field::Bad(_) => {
            errors.push(ApiError::field("target.auth", "must be a string", AUTH_RULE));
            AwsAuth::AssumeRole
        }
    };
    let role_arn = check(
        required(t.role_arn, "role_arn", ARN_RULE, errors),
        "role_arn",
        role_arn_ok,
        |arn| format!("'{}' is not an IAM role ARN", shown(arn)),
        || ARN_RULE.into(),
        errors,
    );
    let state_bucket = check(
        optional(t.state_bucket, "state_bucket", BUCKET_RULE, errors),
        "state_bucket",
        bucket_ok,
        |b| format!("'{}' is not a valid S3 bucket name", shown(b)),
        || BUCKET_RULE.into(),
        errors,
    );
    let lock_table = check(
        optional(t.lock_table, "lock_table", TABLE_RULE, errors),
        "lock_table",
        table_ok,
        |t| format!("'{}' is not a valid DynamoDB table name", shown(t)),
        || TABLE_RULE.into(),
        errors,
    );
    if lock_table.is_some() && !has_bucket {
        errors.push(ApiError::field(
            "target.lock_table",
            "names the state lock table, but no state_bucket is given",
            "a lock_table together with a state_bucket (it defaults to <state_bucket>-locks)",
        ));
    }
    let aws = Catalogs::builtin().get(CloudProvider::Aws);
    let region = check(
        optional(t.region, "region", "an AWS region", errors),
        "region",
        |r| aws.region(r).is_some(),
        |r| format!("'{}' is not an AWS region Strato offers", shown(r)),
        || {
            aws.regions
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        },
        errors,
    );
    if errors.len() > before {
        return None;
    }
    Some(TargetAccount {
        role_arn: role_arn?,
        auth,
        state_bucket,
        lock_table,
        region,
    })
}

pub(super) fn shown(s: &str) -> String {
    s.chars().take(64).collect()
}

/// Keeps `value` when `ok` accepts it; otherwise records `problem` for `target.<k>` and drops it.
pub(super) fn check(
    value: Option<String>,
    k: &str,
    ok: impl Fn(&str) -> bool,
    problem: impl FnOnce(&str) -> String,
    allowed: impl FnOnce() -> String,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let v = value?;
    if ok(&v) {
        return Some(v);
    }
    errors.push(ApiError::field(&format!("target.{k}"), problem(&v), allowed()));
    None
}

/// A required member: absent or null "is required", anything but a string "must be a string".
pub(super) fn required(
    v: Field<String>,
    k: &str,
    rule: &str,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    match v {
        Field::Ok(s) => Some(s),
        Field::Missing | Field::Null => {
            errors.push(ApiError::field(&format!("target.{k}"), "is required", rule));
            None
        }
        Field::Bad(_) => {
            errors.push(ApiError::field(&format!("target.{k}"), "must be a string", rule));
            None
        }
    }
}

pub(super) fn optional(
    v: Field<String>,
    k: &str,
    rule: &str,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    v.optional(&format!("target.{k}"), "must be a string", rule, errors)
}

/// IAM names (roles, path segments): letters, digits and `+=,.@_-`.
fn iam_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "+=,.@_-".contains(c)
}

/// `arn:<partition>:iam::<12 digits>:role/[<path>/]<name>`.
pub(crate) fn role_arn_ok(arn: &str) -> bool {
    let Some(rest) = ["arn:aws:iam::", "arn:aws-cn:iam::", "arn:aws-us-gov:iam::"]
        .iter()
        .find_map(|p| arn.strip_prefix(p))
    else {
        return false;
    };
    let Some((account, role)) = rest.split_once(":role/") else {
        return false;
    };
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) || arn.len() > 2048 {
        return false;
    }
    let mut parts: Vec<&str> = role.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    (1..=64).contains(&name.len())
        && name.chars().all(iam_name_char)
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(iam_name_char))
}

/// S3 general purpose bucket naming rules.
pub(crate) fn bucket_ok(b: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ip_like = b.split('.').count() == 4 && b.split('.').all(|p| !p.is_empty() && p.parse::<u8>().is_ok());
    (3..=63).contains(&b.len())
        && b.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && edge(b.chars().next())
        && edge(b.chars().last())
        && !b.contains("..")
        && !ip_like
        && !["xn--", "sthree-", "amzn-s3-demo-"]
            .iter()
            .any(|p| b.starts_with(p))
        && !["-s3alias", "--ol-s3", ".mrap", "--x-s3"]
            .iter()
            .any(|s| b.ends_with(s))
}

/// DynamoDB table names: 3-255 characters of `[A-Za-z0-9_.-]`.
pub(crate) fn table_ok(t: &str) -> bool {
    (3..=255).contains(&t.len()) && t.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn field(v: &Value) -> Field<TargetBody> {
        serde_json::from_value(v.clone()).unwrap()
    }

    #[test]
    fn a_cluster_on_another_cloud_needs_a_target_and_an_aws_one_does_not() {
        for p in [
            CloudProvider::Gcp,
            CloudProvider::Azure,
            CloudProvider::Digitalocean,
            CloudProvider::Linode,
        ] {
            let mut errors = Vec::new();
            assert!(parse(Field::Missing, Some(p), &mut errors).is_none());
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert_eq!(errors[0].field, "target");
            assert!(
                errors[0].problem.contains(&format!("required for a {p} cluster")),
                "{errors:?}"
            );
            assert!(
                errors[0].allowed.contains(&format!("\"provider\": \"{p}\"")),
                "{errors:?}"
            );
        }
        for absent in [Field::Missing, Field::Null] {
            let mut errors = Vec::new();
            assert!(parse(absent, Some(CloudProvider::Aws), &mut errors).is_none());
            assert!(errors.is_empty(), "{errors:?}");
        }
        // An unknown provider is reported as such, not as a missing target too.
        let mut errors = Vec::new();
        parse(Field::Missing, None, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn role_arns() {
        for ok in [
            "arn:aws:iam::123456789012:role/strato",
            "arn:aws:iam::123456789012:role/platform/strato-deployer",
            "arn:aws-us-gov:iam::123456789012:role/a+b=c,d.e@f_g-h",
        ] {
            assert!(role_arn_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "arn:aws:iam::12345678901:role/strato",
            "arn:aws:iam::1234567890123:role/strato",
            "arn:aws:iam::12345678901a:role/strato",
            "arn:aws:iam::123456789012:user/strato",
            "arn:aws:iam::123456789012:role/",
            "arn:aws:iam::123456789012:role//strato",
            "arn:aws:iam::123456789012:role/has space",
            "arn:aws:s3:::bucket",
            "arn:aws:iam:us-east-1:123456789012:role/strato",
        ] {
            assert!(!role_arn_ok(bad), "{bad}");
        }
        assert!(!role_arn_ok(&format!(
            "arn:aws:iam::123456789012:role/{}",
            "a".repeat(65)
        )));
    }

    #[test]
    fn bucket_and_table_names() {
        for ok in ["acme-tf-state", "a.b.c", "abc", "state-2026"] {
            assert!(bucket_ok(ok), "{ok}");
        }
        for bad in [
            "ab",
            "Acme",
            "-acme",
            "acme-",
            "a..b",
            "192.168.1.1",
            "xn--acme",
            "acme-s3alias",
            "acme_state",
            &"a".repeat(64),
        ] {
            assert!(!bucket_ok(bad), "{bad}");
        }
        assert!(table_ok("acme-tf-locks"));
        assert!(table_ok("Acme_Locks.v2"));
        assert!(!table_ok("ab"));
        assert!(!table_ok("has space"));
        assert!(!table_ok(&"t".repeat(256)));
    }

    #[test]
    fn parse_reports_every_field_and_never_echoes_the_external_id() {
        let v = json!({"role_arn": "arn:aws:iam::1:role/x", "external_id": "bad id!", "state_bucket": "Bad",
            "lock_table": "x", "region": "mars-1", "extra": 1});
        let mut errors = Vec::new();
        assert!(parse(field(&v), Some(CloudProvider::Aws), &mut errors).is_none());
        let mut fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "target.external_id",
                "target.extra",
                "target.lock_table",
                "target.region",
                "target.role_arn",
                "target.state_bucket"
            ]
        );
        assert!(errors.iter().all(|e| !e.problem.contains("bad id!")));

        // The external id is Strato's to issue: naming one is refused, saying where the issued one is shown.
        let v = json!({"role_arn": "arn:aws:iam::123456789012:role/strato", "external_id": "ext-1"});
        let mut errors = Vec::new();
        assert!(parse(field(&v), Some(CloudProvider::Aws), &mut errors).is_none());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "target.external_id");
        assert!(errors[0].problem.contains("issued by Strato"), "{errors:?}");
        assert!(
            errors[0].allowed.contains("GET /v1/tenant/target-access"),
            "{errors:?}"
        );
        assert!(!format!("{errors:?}").contains("ext-1"));

        let v = json!({"role_arn": "arn:aws:iam::123456789012:role/strato"});
        let mut errors = Vec::new();
        let t = parse(field(&v), Some(CloudProvider::Aws), &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(t.aws().unwrap().role_arn, "arn:aws:iam::123456789012:role/strato");

        let mut errors = Vec::new();
        assert!(parse(field(&v), Some(CloudProvider::Gcp), &mut errors).is_none());
        assert_eq!(errors[0].field, "target.provider");
        assert!(errors[0].problem.contains("no provider means aws"), "{errors:?}");
        let mut errors = Vec::new();
        let only_table = json!({"role_arn": "arn:aws:iam::123456789012:role/strato", "lock_table": "locks"});
        assert!(parse(field(&only_table), None, &mut errors).is_none());
        assert_eq!(errors[0].field, "target.lock_table");
        let mut errors = Vec::new();
        assert!(parse(field(&Value::Null), None, &mut errors).is_none());
        assert!(errors.is_empty());
    }
}
