//! The api Lambda's entry point: [`strato_aws::boot`] starts the process the way every function does, the
//! configuration and context are built once, then the axum router ([`strato_api::service`]) serves every
//! invocation, its metrics flushed after each request.

use lambda_http::Error;
use strato_api::{Config, Ctx, service};
use strato_aws::boot::Boot;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let boot = Boot::start().await?;
    let config = Config::from_lookup(boot.lookup())?;
    let api = service(Ctx::new(&boot.aws, config).await?);
    let emf = boot.emf;
    lambda_http::run(tower::ServiceExt::map_future(api, move |fut| emf.flushing(fut))).await
}
