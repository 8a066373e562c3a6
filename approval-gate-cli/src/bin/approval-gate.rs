//! `approval-gate`: review and decide the approval requests of AI agents.

use std::process::ExitCode;

fn main() -> ExitCode {
    approval_gate_cli::cli::run_args(std::env::args_os()).into()
}
