//! The arguments of the commands that take more than a flag or two, and the parsers of ids
//! and page sizes.

// Doc comments here are `--help` text, not rustdoc: backticks would be printed as they are.
#![allow(clippy::doc_markdown)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::LazyLock;

use approval_gate::limits::MAX_PAGE;
use approval_gate::{ListFilter, RequestId};
use clap::{Args, Subcommand, ValueEnum, ValueHint};

#[cfg(feature = "web")]
use super::help::ENROLL_HELP;

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Which requests.
    #[arg(value_enum, default_value = "pending")]
    pub(crate) status: StatusFilter,
    /// At most this many requests (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = parse_limit)]
    pub(crate) limit: usize,
    /// Start after this request (the `nextAfter` of the previous page).
    #[arg(long, value_name = "ID", value_parser = parse_id)]
    pub(crate) after: Option<RequestId>,
    /// Print one page as JSON: {"items": [...], "nextAfter": id or null}.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What a claim binds: the request, and the action, operation and payload the caller means
/// to run.
#[derive(Debug, Args)]
pub(crate) struct BindingArgs {
    /// The request id (12 hex characters).
    #[arg(value_parser = parse_id)]
    pub(crate) id: RequestId,
    /// The payload the approval must bind, as JSON, read from FILE.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, conflicts_with = "payload_stdin")]
    pub(crate) payload_file: Option<PathBuf>,
    /// The payload the approval must bind, as JSON, read from standard input.
    #[arg(long)]
    pub(crate) payload_stdin: bool,
    /// The action text the approval must name, byte for byte [default: the request's own].
    #[arg(long, value_name = "TEXT")]
    pub(crate) action: Option<String>,
}

/// `exec`: the claim, the wait before it, and the command.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    pub(crate) binding: BindingArgs,
    /// The operation the approval must name (such as smtp.send).
    #[arg(long, value_name = "OP")]
    pub(crate) operation: String,
    /// Wait for the decision first, until it is made or the request expires (saying so on
    /// stderr while the request is pending).
    #[arg(long)]
    pub(crate) wait: bool,
    /// With --wait: wait at most this long (such as 90s or 10m).
    #[arg(long, value_name = "DURATION", requires = "wait", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Option<std::time::Duration>,
    /// Refuse to run, spending nothing, unless a system policy is in force
    /// (/etc/approval-gate/policy.toml, or the file APPROVAL_GATE_SYSTEM_POLICY names): one
    /// the account running exec cannot change or remove.
    #[arg(long)]
    pub(crate) require_policy: bool,
    /// The command to run and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

/// Which requests `list` shows: the library's [`ListFilter`], by its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatusFilter(pub(crate) ListFilter);

impl ValueEnum for StatusFilter {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: LazyLock<[StatusFilter; 7]> =
            LazyLock::new(|| ListFilter::ALL.map(StatusFilter));
        &*VARIANTS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.about()))
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Create or migrate the schema `approval_gate` and the group roles of a PostgreSQL store.
    #[command(after_help = "\
Run it as the database's owner (a superuser, or a role with CREATEROLE that may create schemas
in the database), against the store the other commands use (--store postgres://... or
APPROVAL_GATE_STORE). It is one transaction under an advisory lock: running it again, or
from two places at once, is safe, and an init by a newer build migrates the schema.

It creates four NOLOGIN group roles, which the operator grants to login roles:
  approval_gate_agent     file requests, read them, deny
  approval_gate_approver  approve, deny, revoke, archive (the humans)
  approval_gate_executor  consume approvals and record executions (the trusted code)
  approval_gate_notifier  record notifications delivered (`approval-gate notify`)
No role may write a table: every change goes through the schema's functions, which check the
role of the session user and record it as the decider. docs/postgres.md shows the set-up.")]
    Init {
        /// Print {"schemaVersion": N, "roles": [...]}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Verify the audit log's hash chain and anchor, and that each request's events follow
    /// the state machine; reports the first bad line.
    Verify {
        /// Print {"ok": true, "lines": N, "lastHash": ...}; a broken log is an error,
        /// {"error": {"code": "audit_broken", "line": N, "problem": ..., ...}}, and so is one
        /// whose lines chain but tell what cannot happen, {"error": {"code":
        /// "audit_inconsistent", "line": N, "id": ..., "problem": ..., ...}}.
        #[arg(long)]
        json: bool,
    },

    /// Accept the audit log as it is after its anchor (audit.head) went missing or stopped
    /// agreeing with it; records who did it and what was found.
    #[command(after_help = "\
Without its anchor a truncated log cannot be told from a whole one, so every write that
needs an audit line is refused until a human re-anchors. Look first: `audit verify` says
what is wrong, and a backup or another copy of audit.jsonl may show whether lines are
missing. Re-anchoring cuts a torn last line, appends a `reanchored` line naming you (the OS
user), the problem, the lines and last hash found and the old anchor, and anchors the log
there. Without --yes it only reports and exits 1. A log whose lines do not chain (an edited
line) cannot be re-anchored: move it aside and keep it.")]
    Reanchor {
        /// Accept the log as it is now and re-anchor it.
        #[arg(long)]
        yes: bool,
        /// Print what was found and done as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Print one JSON object per line for each new request and each decision (see below).
    #[arg(long)]
    pub(crate) json: bool,
    /// Run this shell command for each new request (see below).
    #[arg(long, value_name = "CMD")]
    pub(crate) notify_cmd: Option<String>,
    /// The origin `approval-gate serve` is opened at (https://approvals.example.com): each
    /// request's page link is then printed, given to --notify-cmd as APPROVAL_GATE_URL, and
    /// added to --json lines as "url" [default: $APPROVAL_GATE_PUBLIC_URL, else `public_url`
    /// in the config file].
    #[cfg(feature = "web")]
    #[arg(long, value_name = "URL")]
    pub(crate) public_url: Option<String>,
    /// Exit after printing this many requests (with --json: lines) (for tests).
    #[arg(long, hide = true, value_name = "N")]
    pub(crate) exit_after: Option<u64>,
    /// Seconds between fallback checks of the queue, in case file-system events are lost.
    #[arg(long, hide = true, value_name = "SECONDS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) fallback_secs: u64,
}

pub(super) fn parse_id(text: &str) -> Result<RequestId, String> {
    RequestId::parse(text).map_err(|_| "expected 12 lowercase hex characters".to_owned())
}

pub(super) fn parse_limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(limit) if (1..=MAX_PAGE).contains(&limit) => Ok(limit),
        _ => Err(format!("expected a number from 1 to {MAX_PAGE}")),
    }
}

/// `approval-gate passkey ...`.
#[cfg(feature = "web")]
#[derive(Debug, Subcommand)]
pub(crate) enum PasskeyCommand {
    /// Open a one-time link that registers a passkey for PRINCIPAL, and print the line that
    /// trusts it, to add to the approvers file.
    #[command(after_help = ENROLL_HELP)]
    Enroll(crate::web::EnrollArgs),
}
