//! Terraform's S3-backend lock table, where Strato writes only state digests (the locks themselves are
//! `crate::state_lock`'s).

use super::{Store, s};
use crate::error::Error;

impl Store {
    /// Records `md5_hex` as the expected digest of the state object `bucket/key`, as Terraform's S3 backend
    /// does after each write. Terraform refuses to read a state whose md5 differs from this record, so a
    /// state version put back by hand must come with its digest.
    pub async fn set_state_digest(&self, bucket: &str, key: &str, md5_hex: &str) -> Result<(), Error> {
        self.ddb
            .put_item()
            .table_name(&self.tf_locks)
            .item(
                "LockID",
                s(format!("{}-md5", crate::state_lock::lock_id(bucket, key))),
            )
            .item("Digest", s(md5_hex))
            .send()
            .await
            .map_err(|e| Error::aws("PutItem", e))?;
        Ok(())
    }
}
