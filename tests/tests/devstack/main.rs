//! The whole system on one machine: devstack (moto, the emulated API Gateway, SQS triggers, schedules and
//! Fargate around the real function code, runners on a real engine), driven as a user drives it.

mod devstack_support;
mod load_support;

mod api_samples;
mod cli_e2e;
mod console_e2e;
mod devstack_agent;
mod devstack_clouds;
mod devstack_clouds_azure;
mod devstack_clouds_state;
mod devstack_contract;
mod devstack_demo;
mod devstack_drift;
mod devstack_e2e;
mod devstack_estimate;
mod devstack_failures;
mod devstack_faults;
mod devstack_fleet;
mod devstack_governance;
mod devstack_lifecycle;
mod devstack_load;
mod devstack_metrics;
mod devstack_observability;
mod devstack_operator;
mod devstack_runtime_api;
