//! Lambda entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then every schedule tick (`{"task": "drift"}` or
//! `{"task": "sweep"}`, the rules' constant input) goes to [`strato_scheduler::handle`].

use lambda_runtime::Error;
use strato_aws::boot::Boot;
use strato_scheduler::{Config, Ctx, Tick, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let ecs = aws_sdk_ecs::Client::new(&boot.aws.config);
    let ctx = Ctx::new(config, &boot.aws, ecs).await?;
    let ctx = &ctx;
    boot.serve(|tick: Tick| async move { handle(ctx, &tick, strato_domain::ts::now()).await })
        .await
}
