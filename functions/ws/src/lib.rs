//! WebSocket API: $connect (token auth), subscribe/unsubscribe/ping with archive replay, $disconnect (under construction).
