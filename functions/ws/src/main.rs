//! Lambda entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then every WebSocket API event goes to [`strato_ws::handle`].

use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_runtime::Error;
use strato_aws::boot::Boot;
use strato_ws::{Config, Ctx, handle};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let ctx = Ctx::new(config, &boot.aws);
    boot.serve(|event: ApiGatewayWebsocketProxyRequest| async { Ok::<_, Error>(handle(&ctx, event).await) })
        .await
}
