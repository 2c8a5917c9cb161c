//! Lambda entry point: configuration and clients are built once per process, then every SQS batch of the
//! `logs` queue goes to [`strato_log_fanout::handle`].

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use strato_log_fanout::{Config, Ctx, handle};
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
    let ctx = Ctx::new(config, &aws);
    let ctx = &ctx;
    run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        Ok::<_, Error>(handle(ctx, event.payload).await)
    }))
    .await
}
