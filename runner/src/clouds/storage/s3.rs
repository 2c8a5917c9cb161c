//! S3 and S3-compatible stores: `ListObjectVersions` and `CopyObject` with `versionId`; on AWS also
//! Terraform's digest item in the lock table.

use md5::{Digest, Md5};
use strato_domain::model::ListedStateVersion;

use super::{PreflightError, S3Access};

pub(super) fn client(base: &aws_config::SdkConfig, a: &S3Access) -> aws_sdk_s3::Client {
    let mut b = aws_sdk_s3::config::Builder::from(base)
        .region(aws_sdk_s3::config::Region::new(a.region.clone()))
        .force_path_style(a.path_style)
        .credentials_provider(a.creds.provider());
    if let Some(ep) = &a.endpoint {
        b = b.endpoint_url(ep);
    }
    aws_sdk_s3::Client::from_conf(b.build())
}

fn failed(call: &str, a: &S3Access, e: impl std::fmt::Display) -> PreflightError {
    PreflightError {
        what: format!("{call} on bucket {} failed: {e}", a.bucket),
        fix: format!(
            "the run's storage credentials must be allowed {call} on bucket {} (and the bucket must be \
             versioned); retry the operation",
            a.bucket
        ),
    }
}

pub(super) async fn list(
    s3: &aws_sdk_s3::Client,
    a: &S3Access,
) -> Result<Vec<ListedStateVersion>, PreflightError> {
    strato_aws::ports::list_state_versions(s3, &a.bucket, &a.prefix)
        .await
        .map_err(|e| failed("ListObjectVersions", a, aws_sdk_s3::error::DisplayErrorContext(e)))
}

/// On AWS the digest goes first (the chosen version's MD5), then the copy; a failed copy puts the current
/// state's digest back, so the state and its digest agree whatever fails.
pub(super) async fn restore(
    base: &aws_config::SdkConfig,
    a: &S3Access,
    key: &str,
    version: &str,
) -> Result<String, PreflightError> {
    let s3 = client(base, a);
    let previous = match &a.lock_table {
        Some(table) => {
            let chosen = read(&s3, a, key, Some(version)).await?;
            let current = read(&s3, a, key, None).await?;
            set_digest(base, a, table, key, &md5_hex(&chosen)).await?;
            Some((table, current))
        }
        None => None,
    };
    let copied = s3
        .copy_object()
        .bucket(&a.bucket)
        .key(key)
        .copy_source(format!("{}/{key}?versionId={version}", a.bucket))
        .send()
        .await;
    match copied {
        Ok(out) => Ok(out.version_id().unwrap_or_default().to_owned()),
        Err(e) => {
            let err = failed("CopyObject", a, aws_sdk_s3::error::DisplayErrorContext(e));
            if let Some((table, current)) = previous
                && let Err(rollback) = set_digest(base, a, table, key, &md5_hex(&current)).await
            {
                return Err(PreflightError {
                    what: format!(
                        "{}; then putting the previous state digest back failed too: {}",
                        err.what, rollback.what
                    ),
                    fix: format!(
                        "restore the version again (the digest in lock table {table} now matches version \
                         {version}, not the current state)"
                    ),
                });
            }
            Err(err)
        }
    }
}

async fn read(
    s3: &aws_sdk_s3::Client,
    a: &S3Access,
    key: &str,
    version: Option<&str>,
) -> Result<Vec<u8>, PreflightError> {
    let out = s3
        .get_object()
        .bucket(&a.bucket)
        .key(key)
        .set_version_id(version.map(str::to_owned))
        .send()
        .await
        .map_err(|e| failed("GetObject", a, aws_sdk_s3::error::DisplayErrorContext(e)))?;
    let bytes = out.body.collect().await.map_err(|e| failed("GetObject", a, e))?;
    Ok(bytes.into_bytes().to_vec())
}

async fn set_digest(
    base: &aws_config::SdkConfig,
    a: &S3Access,
    table: &str,
    key: &str,
    md5_hex: &str,
) -> Result<(), PreflightError> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let mut b = aws_sdk_dynamodb::config::Builder::from(base)
        .region(aws_sdk_dynamodb::config::Region::new(a.region.clone()))
        .credentials_provider(a.creds.provider());
    if let Some(ep) = &a.endpoint {
        b = b.endpoint_url(ep);
    }
    aws_sdk_dynamodb::Client::from_conf(b.build())
        .put_item()
        .table_name(table)
        .item(
            "LockID",
            AttributeValue::S(format!("{}-md5", strato_aws::state_lock::lock_id(&a.bucket, key))),
        )
        .item("Digest", AttributeValue::S(md5_hex.to_owned()))
        .send()
        .await
        .map_err(|e| PreflightError {
            what: format!(
                "recording Terraform's digest of the restored state in lock table {table} failed: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            ),
            fix: format!("the target role must be allowed dynamodb:PutItem on {table}; retry the operation"),
        })?;
    Ok(())
}

fn md5_hex(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}
