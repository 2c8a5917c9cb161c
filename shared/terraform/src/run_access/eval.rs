//! A small IAM policy evaluator for the session policies' tests: `*`/`?` wildcards in actions (case
//! insensitive) and resources, an explicit Deny wins over any Allow, every operator of a statement's
//! Condition must hold. Condition keys missing from the request follow IAM: a plain operator fails, a negated
//! one (`StringNotLike`…) holds, `ForAllValues:` holds, `ForAnyValue:` fails; `…IfExists` holds. An operator
//! it does not know panics, so a test cannot pass on a condition it never evaluated.

use serde_json::Value;

/// Condition keys of one request: key → values.
pub type Context<'a> = &'a [(&'a str, &'a [&'a str])];

/// `*` any run of characters (`/` and `:` included, as IAM's resource matching), `?` one character.
pub fn glob(pattern: &str, s: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some((b'?', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), s.as_bytes())
}

fn list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().expect("strings").to_owned())
            .collect(),
        Value::Null => Vec::new(),
        other => panic!("not a string or a list: {other}"),
    }
}

fn operator_holds(op: &str, key: &str, wanted: &[String], ctx: Context<'_>) -> bool {
    let (set, op) = match op.split_once(':') {
        Some((set @ ("ForAllValues" | "ForAnyValue"), rest)) => (Some(set), rest),
        _ => (None, op),
    };
    let (op, if_exists) = op.strip_suffix("IfExists").map_or((op, false), |o| (o, true));
    let (negated, matcher): (bool, fn(&str, &str) -> bool) = match op {
        "StringEquals" | "ArnEquals" => (false, |w, v| w == v),
        "StringNotEquals" | "ArnNotEquals" => (true, |w, v| w == v),
        "StringLike" | "ArnLike" => (false, glob),
        "StringNotLike" | "ArnNotLike" => (true, glob),
        other => panic!("condition operator {other} is not implemented by this evaluator"),
    };
    let one = |v: &str| {
        let any = wanted.iter().any(|w| matcher(w, v));
        if negated { !any } else { any }
    };
    match (set, ctx.iter().find(|(k, _)| k.eq_ignore_ascii_case(key))) {
        (Some("ForAllValues"), None) => true,
        (Some("ForAllValues"), Some((_, vs))) => vs.iter().all(|v| one(v)),
        (Some(_), None) => false,
        (Some(_), Some((_, vs))) => vs.iter().any(|v| one(v)),
        (None, None) => if_exists || negated,
        (None, Some((_, vs))) => {
            if negated {
                vs.iter().all(|v| one(v))
            } else {
                vs.iter().any(|v| one(v))
            }
        }
    }
}

fn applies(st: &Value, action: &str, resource: &str, ctx: Context<'_>) -> bool {
    assert!(
        st.get("NotAction").is_none() && st.get("NotResource").is_none(),
        "NotAction/NotResource are not implemented by this evaluator: {st}"
    );
    let action = action.to_ascii_lowercase();
    let conditions = st["Condition"].as_object().cloned().unwrap_or_default();
    list(&st["Action"])
        .iter()
        .any(|a| glob(&a.to_ascii_lowercase(), &action))
        && list(&st["Resource"]).iter().any(|r| glob(r, resource))
        && conditions.iter().all(|(op, keys)| {
            keys.as_object()
                .unwrap_or_else(|| panic!("condition {op}: {keys}"))
                .iter()
                .all(|(key, wanted)| operator_holds(op, key, &list(wanted), ctx))
        })
}

/// Whether `policy` allows `action` on `resource` for a request with condition keys `ctx`.
pub fn allows(policy: &Value, action: &str, resource: &str, ctx: Context<'_>) -> bool {
    let statements = policy["Statement"].as_array().cloned().unwrap_or_default();
    let any = |effect: &str| {
        statements
            .iter()
            .any(|st| st["Effect"] == effect && applies(st, action, resource, ctx))
    };
    !any("Deny") && any("Allow")
}

#[test]
fn the_evaluator_follows_iams_rules_for_what_the_policies_use() {
    let p = serde_json::json!({"Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::x-*"},
        {"Effect": "Deny", "Action": "iam:CreateRole", "Resource": "*",
         "Condition": {"StringNotLike": {"iam:PermissionsBoundary": "arn:aws:iam::*:policy/b"}}},
    ]});
    assert!(allows(&p, "ec2:RunInstances", "*", &[]));
    assert!(!allows(&p, "S3:GetObject", "arn:aws:s3:::x-state/k", &[]));
    assert!(allows(&p, "s3:GetObject", "arn:aws:s3:::y-state/k", &[]));
    assert!(
        !allows(&p, "iam:CreateRole", "arn:aws:iam::1:role/r", &[]),
        "a missing key holds for a negated operator"
    );
    let bounded: Context = &[("iam:PermissionsBoundary", &["arn:aws:iam::1:policy/b"])];
    assert!(allows(&p, "iam:CreateRole", "arn:aws:iam::1:role/r", bounded));
    let other: Context = &[("iam:PermissionsBoundary", &["arn:aws:iam::1:policy/c"])];
    assert!(!allows(&p, "iam:CreateRole", "arn:aws:iam::1:role/r", other));
}
