//! What the human's terminal is shown and told, shared by the command line ([`crate::cli`])
//! and the web page (`web`): how a command ends ([`Exit`], `Refusal`, the exit for each
//! library error), what reaches stdout and stderr (`output`), how a request looks
//! (`render`), and the escaping of every agent-supplied string, look-alike letters included
//! ([`display`]).
//!
//! `cli` may use `web`; `web` never uses `cli`; both use this module, which uses neither.

pub mod display;
mod exit;
pub(crate) mod output;
pub(crate) mod render;

pub use self::exit::Exit;
pub(crate) use self::exit::{Refusal, gate_exit};
