//! The store against its two backends: a local directory and a real
//! SeaweedFS S3 gateway (started by `support::seaweed`, on loopback only).

mod backends;
mod errors;
mod outage;
mod support;
