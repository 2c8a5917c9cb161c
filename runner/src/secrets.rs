//! Sensitive outputs: one Secrets Manager secret per cluster (a JSON object of output name → value). They
//! never go to logs, events or DynamoDB.

use aws_sdk_secretsmanager::Client;
use serde_json::{Map, Value};
use strato_aws::resources::Names;
use strato_domain::ids::ClusterId;

pub fn secret_name(names: &Names, cluster: &ClusterId) -> String {
    format!("strato/{}/clusters/{cluster}/outputs", names.prefix())
}

/// Creates the cluster's secret or stores a new version of it.
pub async fn store_outputs(
    client: &Client,
    name: &str,
    values: &Map<String, Value>,
) -> Result<(), strato_aws::Error> {
    let body = Value::Object(values.clone()).to_string();
    match client
        .create_secret()
        .name(name)
        .description("Strato: sensitive Terraform outputs of one cluster")
        .secret_string(body.clone())
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_exists_exception()) =>
        {
            client
                .put_secret_value()
                .secret_id(name)
                .secret_string(body)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| strato_aws::Error::aws("PutSecretValue", e))
        }
        Err(e) => Err(strato_aws::Error::aws("CreateSecret", e)),
    }
}

/// Reads the cluster's sensitive outputs (`None` when it has none).
pub async fn read_outputs(
    client: &Client,
    name: &str,
) -> Result<Option<Map<String, Value>>, strato_aws::Error> {
    match client.get_secret_value().secret_id(name).send().await {
        Ok(out) => Ok(out
            .secret_string()
            .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok())),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_not_found_exception()) =>
        {
            Ok(None)
        }
        Err(e) => Err(strato_aws::Error::aws("GetSecretValue", e)),
    }
}

/// Removes the secret when the cluster is destroyed; absent is fine.
pub async fn delete_outputs(client: &Client, name: &str) -> Result<(), strato_aws::Error> {
    match client
        .delete_secret()
        .secret_id(name)
        .force_delete_without_recovery(true)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_not_found_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(strato_aws::Error::aws("DeleteSecret", e)),
    }
}
