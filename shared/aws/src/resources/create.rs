//! Creating the resources [`super`] defines (moto, devstack, the runner's customer state bucket; in AWS
//! `infra/` creates them).

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_s3::types::{
    BucketVersioningStatus, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule, VersioningConfiguration,
};
use aws_sdk_sqs::types::QueueAttributeName;

use super::{BUCKETS, Names, QUEUES, QueueDef, TABLES, TableDef};
use crate::aws::AwsClients;
use crate::error::Error;

fn attr(name: &str) -> Result<AttributeDefinition, Error> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(|e| Error::aws("CreateTable", e))
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, Error> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(|e| Error::aws("CreateTable", e))
}

fn keys(pk: &str, sk: Option<&str>) -> Result<Vec<KeySchemaElement>, Error> {
    let mut out = vec![key(pk, KeyType::Hash)?];
    if let Some(sk) = sk {
        out.push(key(sk, KeyType::Range)?);
    }
    Ok(out)
}

/// Creates every table, queue (with its DLQ and redrive policy) and bucket. Safe to call again: existing
/// resources are kept.
pub async fn create_all(aws: &AwsClients, names: &Names) -> Result<(), Error> {
    for t in TABLES {
        create_table(aws, names, t).await?;
    }
    for q in QUEUES {
        create_queue(aws, names, q).await?;
    }
    for b in BUCKETS {
        create_bucket(aws, &names.bucket(b.logical), b.versioned).await?;
    }
    create_kms_key(aws, names).await?;
    Ok(())
}

/// Creates Strato's KMS key under [`Names::kms_alias`] unless the alias exists (moto, devstack; in AWS it is
/// `infra/modules/data`'s).
pub async fn create_kms_key(aws: &AwsClients, names: &Names) -> Result<(), Error> {
    let key = aws
        .kms
        .create_key()
        .description(format!("{} data key", names.prefix()));
    create_aliased_key(aws, &names.kms_alias(), key).await
}

/// Creates the token-signing key under [`Names::oidc_key_alias`] unless the alias exists (moto, devstack;
/// in AWS it is `infra/modules/issuer`'s). Not part of [`create_all`]: an RSA key costs the emulator a key
/// generation, and only what mints or publishes tokens needs it.
pub async fn create_signing_key(aws: &AwsClients, names: &Names) -> Result<(), Error> {
    use aws_sdk_kms::types::{KeySpec, KeyUsageType};
    let key = aws
        .kms
        .create_key()
        .description(format!("{} OIDC token signing key", names.prefix()))
        .key_usage(KeyUsageType::SignVerify)
        .key_spec(KeySpec::Rsa2048);
    create_aliased_key(aws, &names.oidc_key_alias(), key).await
}

/// Sends `key` (a CreateKey request) and points `alias` at the new key, unless `alias` already names one.
async fn create_aliased_key(
    aws: &AwsClients,
    alias: &str,
    key: aws_sdk_kms::operation::create_key::builders::CreateKeyFluentBuilder,
) -> Result<(), Error> {
    if aws.kms.describe_key().key_id(alias).send().await.is_ok() {
        return Ok(());
    }
    let key = key.send().await.map_err(|e| Error::aws("CreateKey", e))?;
    let id = key
        .key_metadata()
        .map(|m| m.key_id().to_owned())
        .unwrap_or_default();
    aws.kms
        .create_alias()
        .alias_name(alias)
        .target_key_id(id)
        .send()
        .await
        .map_err(|e| Error::aws("CreateAlias", e))?;
    Ok(())
}

async fn create_table(aws: &AwsClients, names: &Names, t: &TableDef) -> Result<(), Error> {
    let name = names.table(t.logical);
    let mut attrs: Vec<&str> = vec![t.pk];
    attrs.extend(t.sk);
    for i in t.indexes {
        attrs.push(i.pk);
        attrs.extend(i.sk);
    }
    attrs.sort_unstable();
    attrs.dedup();
    let mut req = aws
        .dynamodb
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(keys(t.pk, t.sk)?));
    for a in attrs {
        req = req.attribute_definitions(attr(a)?);
    }
    for i in t.indexes {
        let gsi = GlobalSecondaryIndex::builder()
            .index_name(i.name)
            .set_key_schema(Some(keys(i.pk, i.sk)?))
            .projection(Projection::builder().projection_type(ProjectionType::All).build())
            .build()
            .map_err(|e| Error::aws("CreateTable", e))?;
        req = req.global_secondary_indexes(gsi);
    }
    match req.send().await {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            return Ok(());
        }
        Err(e) => return Err(Error::aws("CreateTable", e)),
    }
    if let Some(ttl) = t.ttl {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(ttl)
            .enabled(true)
            .build()
            .map_err(|e| Error::aws("UpdateTimeToLive", e))?;
        aws.dynamodb
            .update_time_to_live()
            .table_name(&name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| Error::aws("UpdateTimeToLive", e))?;
    }
    Ok(())
}

async fn create_queue(aws: &AwsClients, names: &Names, q: &QueueDef) -> Result<(), Error> {
    let fifo_attrs = |mut req: aws_sdk_sqs::operation::create_queue::builders::CreateQueueFluentBuilder| {
        if q.fifo {
            req = req.attributes(QueueAttributeName::FifoQueue, "true");
        }
        req
    };
    let dlq = fifo_attrs(aws.sqs.create_queue().queue_name(names.dlq(q.logical)))
        .attributes(QueueAttributeName::MessageRetentionPeriod, "1209600")
        .send()
        .await
        .map_err(|e| Error::aws("CreateQueue", e))?;
    let dlq_url = dlq.queue_url().unwrap_or_default();
    let arn = aws
        .sqs
        .get_queue_attributes()
        .queue_url(dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| Error::aws("GetQueueAttributes", e))?
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap_or_default();
    let redrive =
        serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": q.max_receive_count }).to_string();
    let mut req = fifo_attrs(aws.sqs.create_queue().queue_name(names.queue(q.logical)))
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            q.visibility_timeout_secs.to_string(),
        )
        .attributes(QueueAttributeName::RedrivePolicy, redrive);
    if q.high_throughput {
        req = req
            .attributes(QueueAttributeName::DeduplicationScope, "messageGroup")
            .attributes(QueueAttributeName::FifoThroughputLimit, "perMessageGroupId");
    }
    req.send().await.map_err(|e| Error::aws("CreateQueue", e))?;
    Ok(())
}

/// Creates a bucket with default encryption (and versioning when asked); also used by the runner for a
/// customer's own state bucket.
pub async fn create_bucket(aws: &AwsClients, name: &str, versioned: bool) -> Result<(), Error> {
    match aws.s3.create_bucket().bucket(name).send().await {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()) => {}
        Err(e) => return Err(Error::aws("CreateBucket", e)),
    }
    if versioned {
        aws.s3
            .put_bucket_versioning()
            .bucket(name)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| Error::aws("PutBucketVersioning", e))?;
    }
    let sse = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(ServerSideEncryption::Aes256)
        .build()
        .map_err(|e| Error::aws("PutBucketEncryption", e))?;
    let cfg = ServerSideEncryptionConfiguration::builder()
        .rules(
            ServerSideEncryptionRule::builder()
                .apply_server_side_encryption_by_default(sse)
                .build(),
        )
        .build()
        .map_err(|e| Error::aws("PutBucketEncryption", e))?;
    aws.s3
        .put_bucket_encryption()
        .bucket(name)
        .server_side_encryption_configuration(cfg)
        .send()
        .await
        .map_err(|e| Error::aws("PutBucketEncryption", e))?;
    Ok(())
}
