//! Lambda Runtime API harness (placeholder, filled in below).
