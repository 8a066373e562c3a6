//! `approval-gate-mcp`: the approval-gate MCP server, over stdio, for agents.
//!
//! Exit status: 0 when the client closes the connection, 1 when the server cannot start or
//! keep serving, 2 on a usage error or a bad setting.

use std::process::ExitCode;

use approval_gate_mcp::mcp::{self, Options};

fn main() -> ExitCode {
    match Options::from_args(std::env::args_os()) {
        Ok(options) => mcp::run(&options),
        Err(usage) => usage.exit(),
    }
}
