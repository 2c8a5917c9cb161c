//! Lambda entry point: configuration and clients are built once per process, then every WebSocket event
//! goes to [`strato_ws::handle`].

use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_shared::aws::AwsClients;
use strato_ws::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_target(false)
        .without_time()
        .init();
    let config = Config::from_env()?;
    let aws = AwsClients::from_env().await;
    let ctx = Ctx::new(config, &aws);
    let ctx = &ctx;
    run(service_fn(
        move |event: LambdaEvent<ApiGatewayWebsocketProxyRequest>| async move {
            Ok::<_, Error>(handle(ctx, event.payload).await)
        },
    ))
    .await
}
