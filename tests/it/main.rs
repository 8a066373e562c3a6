//! End-to-end tests of the approval-gate library, compiled into one binary.

mod audit_forgery;
mod audit_log;
mod binding;
mod execute;
mod layout;
mod lifecycle;
mod model;
mod properties;
mod races;
mod smtp_example;
