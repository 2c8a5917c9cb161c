//! Lambda entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then every SQS batch of the `events` queue goes to [`strato_status::handle`].

use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::Error;
use strato_aws::boot::Boot;
use strato_status::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let ctx = Ctx::new(config, &boot.aws).await?;
    boot.serve(|batch: SqsEvent| handle(&ctx, batch)).await
}
