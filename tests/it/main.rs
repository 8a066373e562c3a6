//! End-to-end tests of the approval-gate library, compiled into one binary.

mod audit_forgery;
mod audit_log;
mod binding;
mod damage;
mod execute;
mod layout;
mod lifecycle;
mod model;
mod properties;
mod races;
mod smtp_example;
// Shared by the example and its tests, so both talk to the same server.
#[path = "../../examples/support/smtp_sink.rs"]
mod smtp_sink;
mod smtp_tls;
mod unanchored;
mod wait;
