//! `approval-gate notify`: tells approvers that a decision waits, on every channel the config
//! file's `[notify]` table names (a signed webhook, Slack, ntfy, email, a command).
//!
//! No channel approves. A message carries the request's id, operation, a short payload digest,
//! its expiry and the link to its page (`public_url`), where approving needs a passkey; nothing
//! here decides anything on a GET, or at all.
//!
//! The agent supplies the request's text: every channel escapes it by its own rules and cuts
//! it at a stated length ([`text`]) before it goes out.

pub(crate) mod channel;
pub(crate) mod config;
mod due;
pub(crate) mod message;
pub(crate) mod run;
pub(crate) mod secret;
pub(crate) mod text;
mod worker;
