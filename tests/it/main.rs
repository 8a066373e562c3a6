//! End-to-end tests of the approval-gate library, compiled into one binary.

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
