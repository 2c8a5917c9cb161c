//! Lambda entry point: configuration and clients are built once per process, then every schedule tick
//! (`{"task": "drift"}` or `{"task": "sweep"}`, the rules' constant input) goes to [`strato_scheduler::handle`].

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_aws::aws::AwsClients;
use strato_scheduler::{Config, Ctx, Tick, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG); JSON lines carry every span's fields.
    strato_aws::telemetry::init_lambda_subscriber();
    // Metrics leave as EMF lines on stdout, flushed after each invocation (docs/metrics.md).
    let emf = strato_aws::emf::Emf::install();
    let config = Config::from_env()?;
    let aws = AwsClients::from_env().await;
    let ecs = aws_sdk_ecs::Client::new(&aws.config);
    let ctx = Ctx::new(config, &aws, ecs).await?;
    let ctx = &ctx;
    run(service_fn(move |event: LambdaEvent<Tick>| async move {
        emf.flushing(async {
            handle(ctx, &event.payload, strato_domain::ts::now())
                .await
                .map_err(Error::from)
        })
        .await
    }))
    .await
}
