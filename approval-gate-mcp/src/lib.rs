//! The agent's face of [`approval_gate`]: the `approval-gate-mcp` server, over stdio, through
//! which an AI agent may ask for, check, wait for, list, deny and consume approvals, and never
//! approve.
//!
//! This crate is the agent's alone. The human's front ends (the `approval-gate` command line,
//! its approve screen, its web page and the signing code) are the crate `approval-gate-cli`,
//! which this one never depends on: the agent's binary cannot contain them.

/// The `approval-gate-mcp` server for agents: ask, check, wait, list, deny and consume over
/// MCP, never approve.
pub mod mcp;
mod settings;

#[cfg(test)]
mod treatment_tests;
