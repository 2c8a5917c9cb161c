//! moto's own control API and the two EC2 look-ups devstack needs (no EC2 SDK client in the workspace:
//! EC2's query API is a form POST).

use crate::error::DevstackError;

/// moto advances a task's `lastStatus` on every DescribeTasks unless told not to; devstack decides when a
/// task stops (when its runner exits), so progression is manual.
pub async fn ecs_manual_progression(http: &reqwest::Client, endpoint: &str) -> Result<(), DevstackError> {
    let body = serde_json::json!({
        "model_name": "ecs::task",
        "transition": {"progression": "manual", "times": 1_000_000}
    });
    let resp = http
        .post(format!(
            "{}/moto-api/state-manager/set-transition",
            endpoint.trim_end_matches('/')
        ))
        .json(&body)
        .send()
        .await
        .map_err(|e| DevstackError::step("setting moto's ECS task progression to manual", e))?;
    if !resp.status().is_success() {
        return Err(DevstackError::step(
            "setting moto's ECS task progression to manual",
            format!(
                "HTTP {} (is {endpoint} a moto server? devstack's Fargate emulation needs one)",
                resp.status()
            ),
        ));
    }
    Ok(())
}

/// One EC2 query-API call (`Action` plus `params`, form-encoded) against the emulator; the XML answer. Tests
/// use it to change infrastructure behind Terraform's back (a tag, a security-group rule).
pub async fn ec2_call(
    http: &reqwest::Client,
    endpoint: &str,
    region: &str,
    action: &str,
    params: &[(&str, &str)],
) -> Result<String, DevstackError> {
    let step = format!("EC2 {action}");
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential=testing/20260101/{region}/ec2/aws4_request, SignedHeaders=host, Signature=0"
    );
    let mut body = format!("Action={action}&Version=2016-11-15");
    for (k, v) in params {
        body.push_str(&format!("&{}={}", form_encode(k), form_encode(v)));
    }
    let resp = http
        .post(format!("{}/", endpoint.trim_end_matches('/')))
        .header("Authorization", auth)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| DevstackError::step(&step, e))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| DevstackError::step(&step, e))?;
    if !status.is_success() {
        return Err(DevstackError::step(step, format!("HTTP {status}: {text}")));
    }
    Ok(text)
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every `<tag>` value of an XML answer, in order, without repeats in a row.
pub fn xml_values(text: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        if let Some(end) = rest.find('<') {
            out.push(rest[..end].to_owned());
        }
    }
    out.dedup();
    out
}

/// Every `<tag>` value of an EC2 Describe* answer, e.g. the default VPC's subnets (RunTask in moto checks
/// that the subnets and security groups it is given exist).
pub async fn ec2_values(
    http: &reqwest::Client,
    endpoint: &str,
    region: &str,
    action: &str,
    tag: &str,
) -> Result<Vec<String>, DevstackError> {
    let text = ec2_call(http, endpoint, region, action, &[]).await?;
    let out = xml_values(&text, tag);
    if out.is_empty() {
        return Err(DevstackError::step(
            format!("EC2 {action}"),
            format!("no <{tag}> in the answer"),
        ));
    }
    Ok(out)
}
