//! Lambda entry point: configuration and clients are built once per process, then every schedule tick
//! (`{"task": "drift"}` or `{"task": "sweep"}`, the rules' constant input) goes to [`strato_scheduler::handle`].

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_scheduler::{Config, Ctx, Tick, handle};
use strato_shared::aws::AwsClients;

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
    let ecs = aws_sdk_ecs::Client::new(&aws.config);
    let ctx = Ctx::new(config, &aws, ecs).await?;
    let ctx = &ctx;
    run(service_fn(move |event: LambdaEvent<Tick>| async move {
        handle(ctx, &event.payload, strato_shared::ts::now())
            .await
            .map_err(Error::from)
    }))
    .await
}
