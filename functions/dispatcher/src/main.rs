//! Lambda entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then every SQS batch of `jobs.fifo` goes to [`strato_dispatcher::handle`].

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::Error;
use strato_aws::boot::Boot;
use strato_dispatcher::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let ecs = aws_sdk_ecs::Client::new(&boot.aws.config);
    let ctx = Ctx::new(config, &boot.aws, ecs).await?;
    boot.serve(|batch: SqsEvent| handle(&ctx, batch)).await
}
