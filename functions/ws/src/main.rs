//! Lambda entry point: configuration and clients are built once per process, then every WebSocket event
//! goes to [`strato_ws::handle`].

use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_aws::aws::AwsClients;
use strato_ws::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG); JSON lines carry every span's fields.
    strato_aws::telemetry::init_lambda_subscriber();
    let aws = AwsClients::from_env().await;
    // Secrets come by reference (`NAME_ARN`), read once here; see strato_aws::secret_env.
    let env = strato_aws::secret_env::environment(&aws.config).await?;
    let config = Config::from_lookup(|k| env.get(k).cloned())?;
    let ctx = Ctx::new(config, &aws);
    let ctx = &ctx;
    run(service_fn(
        move |event: LambdaEvent<ApiGatewayWebsocketProxyRequest>| async move {
            Ok::<_, Error>(handle(ctx, event.payload).await)
        },
    ))
    .await
}
