//! The human's face of [`approval_gate`]: the `approval-gate` command line (the [`cli`]
//! module) and its web page for approvers (`approval-gate serve`).
//!
//! Only a human, in their own terminal, may approve: `approval-gate approve <id>` refuses
//! unless stdin and stdout are a terminal, shows the whole request with every
//! agent-supplied string escaped (see [`term::display`]), and asks for a confirmation code that
//! can only be read off that screen.
//!
//! The CLI is a library so that tests and other front ends can drive it; the binary only
//! parses arguments, runs the command and exits with its code:
//!
//! ```
//! use approval_gate_cli::cli::{Cli, Exit, run};
//! use clap::Parser;
//!
//! # let dir = tempfile::tempdir()?;
//! # let store = dir.path().join("store");
//! let store = store.to_str().unwrap();
//! let cli = Cli::try_parse_from(["approval-gate", "--dir", store, "list", "--json"])?;
//! assert_eq!(run(cli), Exit::Done);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The agent's MCP server is the crate `approval-gate-mcp`, which does not depend on this one.

pub mod cli;
#[cfg(feature = "notify")]
mod notify;
mod notify_cmd;
mod settings;
pub mod term;
#[cfg(feature = "web")]
mod web;

#[cfg(test)]
mod treatment_tests;
