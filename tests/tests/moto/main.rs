//! The functions together against moto (one server for the binary, each test its own resource prefix),
//! no Terraform: dispatch, status flows and webhooks, the scheduler, the store, live logs, tickets.

#[allow(dead_code)] // the api tests' harness; ws_tickets uses part of it
#[path = "../../../functions/api/tests/moto/common/mod.rs"]
mod common;
#[allow(dead_code)] // each module uses a different part
mod flow_support;
#[allow(dead_code)] // each module uses a different part
mod live_logs_support;

mod dispatch;
mod emulator;
mod live_logs;
mod scheduler;
mod state_restore;
mod status_flows;
mod status_webhook;
mod store;
mod ws_tickets;
