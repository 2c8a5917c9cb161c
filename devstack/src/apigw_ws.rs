//! API Gateway WebSocket API emulation and its `@connections` management API (under construction).
