//! Every decision of a run, on the fakes (`crate::fakes`): the whole run — prepare, stages, cleanup, final
//! event — with a scripted engine, in milliseconds. What only a real engine and moto can prove (the
//! engine's behaviour, the AWS adapters, the built binary under SIGTERM) stays in `tests/engine/`.

mod support;

mod adopt;
mod agent_install;
mod approval;
mod cleanup;
mod clouds;
mod customer_state;
mod gates;
mod prepare;
mod preview;
mod report;
mod retries;
mod stops;
