//! Strato on one machine: moto, API Gateway HTTP + WebSocket, SQS triggers, schedules and Fargate emulated (under construction).
