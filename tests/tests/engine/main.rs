//! Tests that run a real Terraform engine (the PyPI bed's 0.15, and the modern engine where the machine
//! has one): the catalog applied into moto, cost from real plans, infra/ checked and applied, the bed itself.

mod catalog_common;
#[allow(dead_code)] // each module uses a different part
mod deployment_run;
#[allow(dead_code)] // each module uses a different part
mod infra_support;

mod catalog_apply;
mod catalog_publish;
mod cloud_state;
mod cost_plan;
mod infra_apply;
mod infra_check;
mod terraform_bed;
