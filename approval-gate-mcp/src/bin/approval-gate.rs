//! `approval-gate`: review and decide the approval requests of AI agents.

use std::process::ExitCode;

use approval_gate_mcp::cli::{self, Cli};
use clap::Parser;

fn main() -> ExitCode {
    let exit = match Cli::try_parse() {
        Ok(args) => cli::run(args),
        Err(error) => cli::usage_error(&error),
    };
    exit.into()
}
