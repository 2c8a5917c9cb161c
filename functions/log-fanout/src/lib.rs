//! logs queue consumer: posts log, status and end frames to subscribed WebSocket connections (under construction).
