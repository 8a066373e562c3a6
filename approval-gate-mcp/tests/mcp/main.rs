//! The `approval-gate-mcp` binary, driven over real stdio by rmcp's client (an MCP client
//! this project did not write), with the approval-gate library playing the human.

mod allowances;
mod damage;
mod hostile;
mod logging;
mod never_approves;
mod predecessor;
mod revisions;
mod schema;
mod settings;
mod signed;
mod support;
mod tools;
mod waits;
