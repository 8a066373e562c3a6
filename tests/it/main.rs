//! End-to-end tests of the directory store and the examples, compiled into one binary. What
//! every backend must pass is the conformance suite (`tests/conformance`).

mod architecture;
mod audit_forgery;
mod crates;
mod damage;
mod imports;
mod layout;
mod migrate;
mod migrate_crash;
mod migrate_layout;
mod migrate_layout_fixture;
mod never_blocking;
mod postgres;
mod postgres_allowances;
mod postgres_jams;
mod postgres_passkeys;
mod postgres_records;
mod predecessor;
mod properties;
mod smtp_allowance;
mod smtp_example;
mod smtp_quorum;
mod smtp_run;
// Shared by the example and its tests, so both talk to the same server.
#[path = "../../examples/support/smtp_sink.rs"]
mod smtp_sink;
mod smtp_tls;
mod ssh_signing;
mod traces;
mod unanchored;
mod wait;
