//! The api Lambda's entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then the axum router ([`strato_api::service`]) serves every
//! invocation ([`strato_api::ApiService::invoke_any`]: an HTTP API request, or a batch of the `rollouts`
//! queue), its metrics flushed after each.

use lambda_http::{Error, LambdaEvent, service_fn};
use strato_api::{Config, Ctx, service};
use strato_aws::boot::Boot;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let api = service(Ctx::new(&boot.aws, config).await?);
    let emf = boot.emf;
    let handler = service_fn(move |event: LambdaEvent<Box<serde_json::value::RawValue>>| {
        let api = api.clone();
        emf.flushing(async move { Ok::<_, Error>(api.invoke_any(event).await?) })
    });
    lambda_http::lambda_runtime::run(handler).await
}
