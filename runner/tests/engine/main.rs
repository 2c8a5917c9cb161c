//! The runner binary and its parts against moto and a real Terraform engine (the engine matrix).

#[allow(dead_code)] // each module uses a different part
mod support;

mod failures;
mod lifecycle;
mod logs;
mod policy;
mod progress;
mod signals;
