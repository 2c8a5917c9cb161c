//! Publishing template bundles to the catalog (S3 object + templates table entry) and fetching them back.

use std::path::Path;

use strato_domain::template::Template;
use strato_terraform::bundle::{self, Bundle, unpack};
use strato_terraform::catalog_check::{check_template, template_dirs};

use crate::aws::AwsClients;
use crate::error::Error;
use crate::resources::Names;
use crate::store::Store;

/// Uploads the bundle and records the catalog entry. Publishing the same version again with the same
/// content is a no-op; with different content it is refused (`Error::Conflict`) and the catalog is unchanged.
pub async fn publish(aws: &AwsClients, names: &Names, bundle: &Bundle) -> Result<(), Error> {
    let store = Store::new(aws.dynamodb.clone(), names);
    if let Some(existing) = store
        .get_template(bundle.template.name(), bundle.template.version())
        .await?
        && existing.sha256 != bundle.sha256
    {
        return Err(Error::Conflict(format!(
            "{}@{} is already published with different content (sha256 {}); publish a new version",
            bundle.template.name(),
            bundle.template.version(),
            existing.sha256
        )));
    }
    aws.s3
        .put_object()
        .bucket(names.bucket("templates"))
        .key(bundle.key())
        .body(bundle.bytes.clone().into())
        .send()
        .await
        .map_err(|e| Error::aws("PutObject", e))?;
    // Conditional on the hash: a concurrent publish of different content loses here.
    store
        .put_template(&bundle.template.manifest, &bundle.sha256, &bundle.key())
        .await
}

/// Downloads and unpacks a published bundle into `dest`.
pub async fn fetch(
    aws: &AwsClients,
    names: &Names,
    key: &str,
    expected_sha256: &str,
    dest: &Path,
) -> Result<Template, Error> {
    let out = aws
        .s3
        .get_object()
        .bucket(names.bucket("templates"))
        .key(key)
        .send()
        .await
        .map_err(|e| Error::aws("GetObject", e))?;
    let bytes = out
        .body
        .collect()
        .await
        .map_err(|e| Error::aws("GetObject", e))?
        .into_bytes();
    Ok(unpack(&bytes, key, expected_sha256, dest)?)
}

/// What publishing one template recorded in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedTemplate {
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub bundle_key: String,
}

/// Checks, packs and publishes every template under `<templates_root>/catalog` (modules from
/// `<templates_root>/modules`). Republishing unchanged templates is a no-op; a template whose version is
/// already published with different content fails with `Error::Conflict` (templates before it in name order
/// are published, the catalog entry of the conflicting one is unchanged).
pub async fn publish_catalog(
    aws: &AwsClients,
    names: &Names,
    templates_root: &Path,
) -> Result<Vec<PublishedTemplate>, Error> {
    let modules_dir = templates_root.join("modules");
    let mut out = Vec::new();
    for dir in template_dirs(templates_root)? {
        let bundle = bundle::pack(&dir, &modules_dir)?;
        check_template(&bundle.template, &modules_dir)?;
        publish(aws, names, &bundle).await?;
        out.push(PublishedTemplate {
            name: bundle.template.name().into(),
            version: bundle.template.version().into(),
            sha256: bundle.sha256.clone(),
            bundle_key: bundle.key(),
        });
    }
    Ok(out)
}

/// Checks an uploaded bundle (`bytes`, unpacked into the empty directory `dest`) as publishing checks a
/// directory: see [`strato_terraform::bundle_check`].
pub fn check_upload(bytes: &[u8], dest: &Path) -> Result<Bundle, Error> {
    Ok(strato_terraform::bundle_check::inspect(bytes, dest)?)
}
