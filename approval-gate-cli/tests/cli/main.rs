//! End-to-end tests of the `approval-gate` binary: one test binary, one module per concern.

mod allow;
mod allowances;
mod approve;
mod damage;
mod decide;
mod display;
mod exec;
mod exec_ledger;
#[cfg(feature = "postgres")]
mod exec_ledger_pg;
pub(crate) mod exec_policy;
mod exec_spent;
mod generate;
mod hook;
mod json;
#[cfg(not(feature = "postgres"))]
mod no_postgres;
#[cfg(not(feature = "web"))]
mod no_web;
#[cfg(feature = "notify")]
mod notify;
#[cfg(feature = "notify")]
mod notify_channels;
#[cfg(feature = "postgres")]
mod postgres;
mod settings;
mod show_allowance;
mod sign_allowance;
mod signed;
mod support;
mod usage;
mod watch;
