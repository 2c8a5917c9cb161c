//! The api Lambda's entry point: configuration and clients are built once per process, then the axum
//! router ([`strato_api::service`]) serves every invocation.

use lambda_http::Error;
use strato_api::{Config, Ctx, service};
use strato_aws::aws::AwsClients;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG); JSON lines carry every span's fields.
    strato_aws::telemetry::init_lambda_subscriber();
    let aws = AwsClients::from_env().await;
    // Secrets come by reference (`NAME_ARN`), read once here; see strato_aws::secret_env.
    let env = strato_aws::secret_env::environment(&aws.config).await?;
    let config = Config::from_lookup(|k| env.get(k).cloned())?;
    lambda_http::run(service(Ctx::new(&aws, config).await?)).await
}
