//! The api Lambda's entry point: configuration and clients are built once per process, then every
//! invocation is handled by [`strato_api::handle`].

use lambda_http::{Error, Request, service_fn};
use strato_api::{Config, Ctx, handle};
use strato_shared::aws::AwsClients;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_current_span(false)
        .without_time() // CloudWatch stamps every line itself.
        .init();
    let config = Config::from_env()?;
    let aws = AwsClients::from_env().await;
    let ctx = Ctx::new(&aws, config).await?;
    let ctx = &ctx;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(handle(ctx, req).await)
    }))
    .await
}
