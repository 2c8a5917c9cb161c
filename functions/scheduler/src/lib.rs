//! scheduled drift checks and the sweeper (undispatched and stuck operations, stale locks, expired connections) (under construction).
