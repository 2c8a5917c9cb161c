//! The api Lambda's entry point: configuration and clients are built once per process, then the axum
//! router ([`strato_api::service`]) serves every invocation.

use lambda_http::Error;
use strato_api::{Config, Ctx, service};
use strato_aws::aws::AwsClients;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG); JSON lines carry every span's fields.
    strato_aws::telemetry::init_lambda_subscriber();
    // Metrics (an operation cancelled while queued ends here) leave as EMF lines on stdout, flushed after
    // each request (docs/metrics.md).
    let emf = strato_aws::emf::Emf::install();
    let aws = AwsClients::from_env().await;
    // Secrets come by reference (`NAME_ARN`), read once here; see strato_aws::secret_env.
    let env = strato_aws::secret_env::environment(&aws.config).await?;
    let config = Config::from_lookup(|k| env.get(k).cloned())?;
    let api = service(Ctx::new(&aws, config).await?);
    lambda_http::run(tower::ServiceExt::map_future(api, move |fut| emf.flushing(fut))).await
}
