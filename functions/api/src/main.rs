//! The api Lambda's entry point: configuration and clients are built once per process, then every
//! invocation is handled by [`strato_api::handle`].

use lambda_http::{Error, Request, service_fn};
use strato_api::{Config, Ctx, handle};
use strato_aws::aws::AwsClients;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The runtime's subscriber follows Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG).
    lambda_http::tracing::init_default_subscriber();
    let config = Config::from_env()?;
    let aws = AwsClients::from_env().await;
    let ctx = Ctx::new(&aws, config).await?;
    let ctx = &ctx;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(handle(ctx, req).await)
    }))
    .await
}
