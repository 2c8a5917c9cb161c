//! Strato on one machine: moto, API Gateway HTTP + WebSocket, SQS event source mappings, schedules and
//! Fargate emulated around the real function code.

pub mod apigw_ws;
