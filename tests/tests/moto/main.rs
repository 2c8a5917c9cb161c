//! The functions together against moto (one server for the run, each test its own resource prefix),
//! no Terraform: dispatch, status flows and webhooks, the scheduler, the store, live logs, tickets.

#[path = "../../../functions/api/tests/moto/common/mod.rs"]
mod common;
mod flow_support;
mod live_logs_support;

mod customer_state;
mod dispatch;
mod emulator;
mod identity;
mod live_logs;
mod scheduler;
mod state_restore;
mod status_flows;
mod status_webhook;
mod store;
mod store_history;
mod ws_tickets;
