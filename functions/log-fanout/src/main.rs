//! Lambda entry point: configuration and clients are built once per process, then every SQS batch of the
//! `logs` queue goes to [`strato_log_fanout::handle`].

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_aws::aws::AwsClients;
use strato_log_fanout::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    // Lambda's log controls (AWS_LAMBDA_LOG_FORMAT/LEVEL, else RUST_LOG); JSON lines carry every span's fields.
    strato_aws::telemetry::init_lambda_subscriber();
    // Metrics leave as EMF lines on stdout, flushed after each invocation (docs/metrics.md).
    let emf = strato_aws::emf::Emf::install();
    let config = Config::from_env()?;
    let aws = AwsClients::from_env().await;
    let ctx = Ctx::new(config, &aws);
    let ctx = &ctx;
    run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        emf.flushing(async { Ok::<_, Error>(handle(ctx, event.payload).await) })
            .await
    }))
    .await
}
