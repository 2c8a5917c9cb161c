//! Which function serves what: the HTTP API's handler, one handler per queue (SQS event source mappings)
//! and one per schedule (EventBridge rules). Built-in entries are the functions that exist; the others
//! (log-fanout on `logs`, the scheduler's drift-check/sweeper schedules) plug in through [`Plugin`].

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use futures_util::future::BoxFuture;
use lambda_http::{Body, Request, Response};

use crate::error::DevstackError;
use crate::stack::config::StackEnv;

/// The HTTP API's integration: an API Gateway v2 request in, the function's response out.
pub type HttpHandler = Arc<dyn Fn(Request) -> BoxFuture<'static, Response<Body>> + Send + Sync>;
/// An SQS-triggered function. `Err` is a function error: the whole batch comes back after the visibility
/// timeout, as on Lambda.
pub type SqsHandler =
    Arc<dyn Fn(SqsEvent) -> BoxFuture<'static, Result<SqsBatchResponse, String>> + Send + Sync>;
/// A scheduled function; it receives the EventBridge "Scheduled Event" JSON.
pub type ScheduleHandler =
    Arc<dyn Fn(serde_json::Value) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Wraps an async `handle(event) -> Result<SqsBatchResponse, E>` as an [`SqsHandler`].
pub fn sqs_handler<F, Fut, E>(f: F) -> SqsHandler
where
    F: Fn(SqsEvent) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<SqsBatchResponse, E>> + Send + 'static,
    E: Display,
{
    let f = Arc::new(f);
    Arc::new(move |event| {
        let fut = f(event);
        Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
    })
}

/// Wraps an async `handle(event) -> Result<(), E>` as a [`ScheduleHandler`].
pub fn schedule_handler<F, Fut, E>(f: F) -> ScheduleHandler
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Display,
{
    let f = Arc::new(f);
    Arc::new(move |event| {
        let fut = f(event);
        Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
    })
}

/// One SQS event source mapping.
#[derive(Clone)]
pub struct SqsMapping {
    pub handler: SqsHandler,
    /// Records per invocation, 1–10 (Lambda's SQS maximum without a batching window).
    pub batch_size: i32,
    /// Concurrent pollers (each invokes one batch at a time), like Lambda's scaling of SQS pollers.
    pub concurrency: usize,
    /// Faults to inject into this mapping's deliveries (the fault-injection test); `None` in normal use.
    pub chaos: Option<crate::chaos::ChaosState>,
}

/// One EventBridge schedule rule (`rate(...)`).
#[derive(Clone)]
pub struct ScheduleRule {
    pub name: String,
    pub rate: Duration,
    pub handler: ScheduleHandler,
}

/// Everything devstack invokes. Keys of `sqs` are the logical queue names of `strato_aws::resources`
/// (`jobs`, `events`, `logs`, `webhooks`, `rollouts`).
#[derive(Clone, Default)]
pub struct Registry {
    pub http: Option<HttpHandler>,
    pub sqs: BTreeMap<String, SqsMapping>,
    pub schedules: Vec<ScheduleRule>,
}

impl Registry {
    /// Gives every SQS mapping the faults to inject, if any are asked for.
    pub fn inject(&mut self, chaos: Option<crate::chaos::Chaos>) -> Option<crate::chaos::ChaosState> {
        let chaos = crate::chaos::ChaosState::new(chaos?);
        tracing::warn!(?chaos, "injecting faults into every SQS delivery");
        for mapping in self.sqs.values_mut() {
            mapping.chaos = Some(chaos.clone());
        }
        Some(chaos)
    }

    /// Maps `queue` (logical name) to `handler` with batch size 10 and `concurrency` pollers; replaces an
    /// existing mapping.
    pub fn map_queue(&mut self, queue: &str, handler: SqsHandler, concurrency: usize) -> &mut Self {
        self.sqs.insert(
            queue.to_owned(),
            SqsMapping {
                handler,
                batch_size: 10,
                concurrency: concurrency.max(1),
                chaos: None,
            },
        );
        self
    }

    pub fn add_schedule(&mut self, name: &str, rate: Duration, handler: ScheduleHandler) -> &mut Self {
        self.schedules.retain(|s| s.name != name);
        self.schedules.push(ScheduleRule {
            name: name.to_owned(),
            rate,
            handler,
        });
        self
    }

    /// The functions that exist today, in-process: api (HTTP API and `rollouts`), dispatcher (`jobs`), status (`events`),
    /// webhooks (`webhooks`), scheduler (the drift-check and sweeper schedules).
    pub async fn builtin(env: &StackEnv) -> Result<Self, DevstackError> {
        let mut reg = Self::default();
        let prefix = env.names.prefix().to_owned();
        let tenant_claim = env.auth.tenant_claim().to_owned();
        let agent_secret = env.agent_token_secret.clone();
        // Tickets are signed with what the ws function checks: devstack's token secret.
        let ws_secret = String::from_utf8_lossy(env.auth.secret()).into_owned();
        let oidc_issuer = env.oidc_issuer.clone();
        let agent_heartbeat = env.agent_heartbeat;
        let api_config = strato_api::Config::from_lookup(env.lookup_for("api", |k| match k {
            "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
            "STRATO_TENANT_CLAIM" => Some(tenant_claim.clone()),
            "STRATO_AGENT_TOKEN_SECRET" => Some(agent_secret.clone()),
            "STRATO_JWT_SECRET" => Some(ws_secret.clone()),
            "STRATO_OIDC_ISSUER" => oidc_issuer.clone(),
            "STRATO_AGENT_HEARTBEAT_SECS" => agent_heartbeat.map(|d| d.as_secs().max(1).to_string()),
            "STRATO_OPERATOR_AUDIENCE" => Some(crate::auth::OPERATOR_AUDIENCE.into()),
            // devstack's receivers are local (http://127.0.0.1); nothing but devstack sets these.
            strato_domain::webhook::ALLOW_HTTP_ENV | strato_domain::webhook::ALLOW_LOOPBACK_ENV => {
                Some("1".into())
            }
            _ => None,
        }))
        .map_err(|e| DevstackError::step("configuring the api function", e))?;
        // The router is built once, as the Lambda runtime does; each request clones its handle.
        let api = strato_api::service(
            strato_api::Ctx::new(&env.aws_for("api"), api_config)
                .await
                .map_err(|e| DevstackError::step("starting the api function", e))?,
        );
        let drainer = api.clone();
        reg.http = Some(Arc::new(move |req| {
            let api = api.clone();
            Box::pin(async move { api.handle(req).await })
        }));
        // The api function also drains the rollouts queue (as infra/ maps it).
        reg.map_queue(
            "rollouts",
            sqs_handler(move |event| {
                let api = drainer.clone();
                async move { Ok::<_, std::convert::Infallible>(api.drain(event).await) }
            }),
            env.sqs_concurrency,
        );

        // On a deployment each function is configured from the environment it gave that Lambda.
        let from_deployment = env.applied.is_some();
        let dispatcher_config = if from_deployment {
            strato_dispatcher::Config::from_lookup(env.lookup_for("dispatcher", |_| None))
                .map_err(|e| DevstackError::step("configuring the dispatcher function", e))?
        } else {
            strato_dispatcher::Config {
                names: env.names.clone(),
                runner: env.runner_settings.clone(),
                run_proofs: env.run_proofs.clone(),
                audit_retention_days: strato_aws::ports::AUDIT_RETENTION_DAYS,
                operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
                // Without an issuer, no run gets identity tokens (federated targets fail their preflight).
                oidc_issuer: env.oidc_issuer.as_deref().map(str::parse).transpose().map_err(
                    |reason: String| DevstackError::Config {
                        field: "oidc_issuer (STRATO_OIDC_ISSUER)",
                        reason,
                    },
                )?,
                oidc_signing_key: env.names.oidc_key_alias(),
            }
        };
        let dispatcher = Arc::new(
            strato_dispatcher::Ctx::new(
                dispatcher_config,
                &env.aws_for("dispatcher"),
                env.ecs_for("dispatcher"),
            )
            .await
            .map_err(|e| DevstackError::step("starting the dispatcher function", e))?,
        );
        reg.map_queue(
            "jobs",
            sqs_handler(move |event| {
                let d = dispatcher.clone();
                async move { strato_dispatcher::handle(&d, event).await }
            }),
            env.sqs_concurrency,
        );
        // As infra/ maps it: one job per invocation, so a job's deliveries are its own attempts.
        if let Some(m) = reg.sqs.get_mut("jobs") {
            m.batch_size = strato_dispatcher::BATCH_SIZE;
        }

        let status_config = if from_deployment {
            strato_status::Config::from_lookup(env.lookup_for("status", |_| None))
                .map_err(|e| DevstackError::step("configuring the status function", e))?
        } else {
            strato_status::Config {
                names: env.names.clone(),
                run_proofs: env.run_proofs.clone(),
                audit_retention_days: strato_aws::ports::AUDIT_RETENTION_DAYS,
                operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
                approval_ttl: strato_domain::approval::DEFAULT_APPROVAL_TTL,
            }
        };
        let webhooks_config = if from_deployment {
            strato_webhooks::Config::from_lookup(env.lookup_for("webhooks", |_| None))
                .map_err(|e| DevstackError::step("configuring the webhooks function", e))?
        } else {
            strato_webhooks::Config {
                names: env.names.clone(),
                // devstack's receivers are local (http://127.0.0.1): its switches, never infra/'s.
                egress: strato_domain::webhook::Egress::DEVSTACK,
                operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
            }
        };
        let status = Arc::new(
            strato_status::Ctx::new(status_config, &env.aws_for("status"))
                .await
                .map_err(|e| DevstackError::step("starting the status function", e))?,
        );
        reg.map_queue(
            "events",
            sqs_handler(move |event| {
                let s = status.clone();
                async move { strato_status::handle(&s, event).await }
            }),
            env.sqs_concurrency,
        );

        let webhooks = Arc::new(
            strato_webhooks::Ctx::new(webhooks_config, &env.aws_for("webhooks"))
                .await
                .map_err(|e| DevstackError::step("starting the webhooks function", e))?,
        );
        reg.map_queue(
            "webhooks",
            sqs_handler(move |event| {
                let w = webhooks.clone();
                async move { strato_webhooks::handle(&w, event).await }
            }),
            env.sqs_concurrency,
        );
        // As infra/ maps it: a batch of hanging receivers must end within the consumer's timeout.
        if let Some(m) = reg.sqs.get_mut("webhooks") {
            m.batch_size = strato_webhooks::BATCH_SIZE;
        }

        // Two EventBridge rules with constant inputs, as infra/ defines them.
        let scheduler_config =
            strato_scheduler::Config::from_lookup(env.lookup_for("scheduler", |k| match k {
                "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
                "STRATO_RUNNER_CLUSTER" => Some(env.runner_settings.cluster.clone()),
                "STRATO_SWEEP_GRACE_SECS" => Some(env.sweep_grace.as_secs().max(1).to_string()),
                "STRATO_AGENT_STALE_SECS" => env.agent_stale.map(|d| d.as_secs().max(1).to_string()),
                _ => None,
            }))
            .map_err(|e| DevstackError::step("configuring the scheduler function", e))?;
        let scheduler = Arc::new(
            strato_scheduler::Ctx::new(
                scheduler_config,
                &env.aws_for("scheduler"),
                env.ecs_for("scheduler"),
            )
            .await
            .map_err(|e| DevstackError::step("starting the scheduler function", e))?,
        );
        for (name, rate, task) in [
            ("drift-check", env.drift_rate, strato_scheduler::Task::Drift),
            ("sweeper", env.sweep_rate, strato_scheduler::Task::Sweep),
        ] {
            let sch = scheduler.clone();
            reg.add_schedule(
                name,
                rate,
                schedule_handler(move |_event| {
                    let sch = sch.clone();
                    async move {
                        strato_scheduler::handle(
                            &sch,
                            &strato_scheduler::Tick { task },
                            strato_domain::ts::now(),
                        )
                        .await
                        .map(|_| ())
                    }
                }),
            );
        }
        Ok(reg)
    }
}

/// Adds functions built elsewhere (log-fanout, scheduler, ws…) once the stack's resources exist.
pub trait Plugin: Send {
    fn install<'a>(
        self: Box<Self>,
        env: &'a StackEnv,
        registry: &'a mut Registry,
    ) -> BoxFuture<'a, Result<(), DevstackError>>;
}
