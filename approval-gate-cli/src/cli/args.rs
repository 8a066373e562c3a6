//! The command line: what `--help` shows is written here.

// Doc comments here are `--help` text, not rustdoc: backticks would be printed as they are.
#![allow(clippy::doc_markdown)]

use std::ffi::OsString;
use std::path::PathBuf;

use approval_gate::RequestId;
use clap::{Parser, Subcommand, ValueHint};
use clap_complete::Shell;

const AFTER_HELP: &str = "\
Exit codes:
  0  done
  1  refused: not found, wrong state, expired, confirmation mismatch, not a terminal, an
     approval that must be signed or whose key is not trusted; for doctor, a problem found
  2  usage or I/O error (including a broken or inconsistent audit log, an unreadable request
     record or an unsafe state directory)
  3  took effect, but its durability is unknown (a directory fsync failed) or it could not be
     recorded in the audit log: check with `show ID` and `audit verify`

With --json, stdout holds exactly one JSON document, also when the command fails: then it is
{\"error\": {\"code\": ..., \"message\": ..., \"id\": ...}}, with the library's error code (such as
not_found, wrong_state, audit_broken; usage for a command line that does not parse), the
message also written to stderr, and the request id the command was about, or null.

Every string an agent supplied (action, reason, requester, payload, decision reason) is shown
with control, bidi, zero-width and other invisible characters, and letters that imitate
others (a Cyrillic a in a Latin word, fullwidth forms), as visible escapes such as
\\u{202e}; a backslash is shown as \\\\. A warning names each field holding look-alikes.";

/// Review and decide the approval requests of AI agents.
///
/// Agents ask (through the MCP server or the library); only a human, here, may approve.
/// Nothing is ever approved without a re-typed confirmation in an interactive terminal.
#[derive(Debug, Parser)]
#[command(name = "approval-gate", version, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub(crate) settings: crate::settings::Flags,

    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// Parses the command line, program name first. Empty or bad settings are refused when
    /// they are resolved, before anything is opened (see [`crate::settings`]).
    pub(crate) fn parse_args(args: &[OsString]) -> Result<Self, clap::Error> {
        Self::try_parse_from(args)
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List requests: id, status, age, time left, requester and action (one line each).
    #[command(after_help = "\
Pending requests come first in `all`. TIME is the time left for a request that can still be
approved or used, else its age. STATUS `lapsed` is an approval that expired unused. Actions
longer than the line are cut with a marker giving the bytes left out, such as
`… [+1234 bytes]`; `show ID` prints everything, and --json gives exact statuses.
A request whose record cannot be read is listed first as `unreadable`, with what is wrong
(with \"unreadable\": true in --json): it refuses everything until it is repaired or
removed, and nothing else is held up; `doctor` reports it too.")]
    List(ListArgs),

    /// Show one request in full, with its canonical payload and digest.
    Show {
        /// The request id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Print the request as JSON (camelCase, with effectiveStatus).
        #[arg(long)]
        json: bool,
    },

    /// Approve a pending request, in an interactive terminal only.
    #[command(after_help = "\
approve refuses (exit 1, nothing changed) unless both stdin and stdout are a terminal.
It shows the whole request and asks you to type an 8-character confirmation code printed
under it. The code is the first 8 hex characters of a BLAKE3 hash over a random value drawn
for this prompt and everything shown (id, action, reason, requester, operation, payload
digest, creation and expiry time): an agent cannot know it in advance, so it cannot be typed
without reading the screen. Anything other than the exact code (a typo, an empty line,
end of input) refuses. After you type it, the request is read again and the approval is
refused if the request changed or expired meanwhile.

Under a policy (--approvers, see `config --help`) an approval counts only when signed: give
--key (or APPROVAL_GATE_SIGNING_KEY), and after you type the code the CLI signs the request's
decision statement with `ssh-keygen -Y sign -n approval-gate` (the ssh_keygen setting's
absolute path, else /usr/bin/ssh-keygen: never one found through PATH), which may ask for the key's
passphrase or a touch of a FIDO key. For a key held by ssh-agent give its .pub file (with
`ssh-add -c` the agent asks you to confirm each use). Your principal is the one the approvers
file lists for the key, unless --principal says otherwise. A request needing M approvers stays
pending, showing k of M, until M distinct trusted approvers have signed.")]
    Approve {
        /// The request id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Why you approve (optional; recorded with the decision).
        reason: Vec<String>,
        /// Sign the approval with this SSH key: a private key file, or the .pub of a key in
        /// ssh-agent [default: $APPROVAL_GATE_SIGNING_KEY, else `signing_key` in the config
        /// file].
        #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
        key: Option<PathBuf>,
        /// Sign as this principal [default: the one the approvers file lists for the key].
        #[arg(long, value_name = "NAME")]
        principal: Option<String>,
    },

    /// Deny a pending request (no terminal needed: saying no is always safe).
    Deny {
        /// The request id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Why you deny (optional; recorded with the decision).
        reason: Vec<String>,
        /// Print the request as it is now, as JSON (as `show --json`).
        #[arg(long)]
        json: bool,
    },

    /// Withdraw an approval that has not been consumed yet.
    Revoke {
        /// The request id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Why you revoke (optional; recorded with the decision).
        reason: Vec<String>,
        /// Print the request as it is now, as JSON (as `show --json`).
        #[arg(long)]
        json: bool,
    },

    /// Allow requests like these without asking, within bounds: sign an allowance, in an
    /// interactive terminal only.
    #[command(after_help = ALLOW_HELP)]
    Allow(AllowArgs),

    /// List the allowances humans signed, with their uses and budget left.
    #[command(after_help = "\
An allowance is what approvers signed once instead of approving each request: an operation,
constraints on the payload, and bounds (uses, a budget, a rate, a window of at most 7 days).
A request it covers is approved by it as it is filed, and each use is counted when it is
consumed. Each is listed with its id, whether it is active (not revoked, its window open),
its operation, what it has used and has left, who signed it, and what it allows in words.
With --json, a list of {\"id\", \"operation\", \"active\", \"revoked\", \"ended\", \"uses\",
\"spent\", \"usesLeft\", \"budgetLeft\", \"principals\", \"requiredApprovals\",
\"signaturesMissing\", \"words\", \"terms\"}. One that awaits more approvers' signatures is
listed as proposed. See docs/allowances.md.")]
    Allowances {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },

    /// Sign an allowance another approver proposed, as one more of the approvers its
    /// operation needs, in an interactive terminal only.
    #[command(after_help = "\
An allowance for an operation that needs more approvers than one (the approvers file's
quorum table) is proposed by the first who signs it with `allow`, and approves nothing until
enough others sign it here. The allowance is read from the store and shown in words, with who
signed it before; typing the code shown signs exactly that, with your approver key, as `allow`
signs. It refuses an allowance that was revoked, has ended, or has all the signatures it
needs, and a second signature from one approver. See docs/allowances.md.")]
    SignAllowance {
        /// The allowance id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Sign with this SSH key: a private key file, or the .pub of a key in ssh-agent
        /// [default: $APPROVAL_GATE_SIGNING_KEY, else `signing_key` in the config file].
        #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
        key: Option<PathBuf>,
        /// Sign as this principal [default: the one the approvers file lists for the key].
        #[arg(long = "as", value_name = "PRINCIPAL")]
        principal: Option<String>,
        /// Print the allowance as it is then, as JSON (as `allowances --json`).
        #[arg(long)]
        json: bool,
    },

    /// Revoke an allowance at once: nothing not yet used is approved by it any more.
    RevokeAllowance {
        /// The allowance id (12 hex characters).
        #[arg(value_parser = parse_id)]
        id: RequestId,
        /// Why you revoke it (optional; recorded with the revocation).
        reason: Vec<String>,
        /// Print the allowance as it is now, as JSON (as `allowances --json`).
        #[arg(long)]
        json: bool,
    },

    /// Run a command once, as approved: claim the approval, run it with the approved payload.
    #[command(after_help = EXEC_HELP)]
    Exec(ExecArgs),

    /// Claim an approval (single use) and print what was approved, without running anything.
    #[command(after_help = "\
consume makes the same single-use claim as exec, bound to the same action, operation and
payload, and prints the approved payload (canonical JSON) or, with --json, {\"id\", \"action\",
\"operation\", \"payloadDigest\", \"payload\", \"expiresAt\"}. The approval is spent when it
succeeds, whatever the caller does next, and nothing records whether or how it acted: prefer
`exec`, which records the start before it runs and the outcome after. Exit codes as for the
other commands (1 for every refusal).")]
    Consume {
        #[command(flatten)]
        binding: BindingArgs,
        /// The operation the approval must name, if the request has one.
        #[arg(long, value_name = "OP")]
        operation: Option<String>,
        /// Print the claim as JSON.
        #[arg(long)]
        json: bool,
    },

    /// Move finished requests out of the live store.
    #[command(after_help = "\
Only finished requests (denied, expired, revoked, consumed, or approved and expired)
created at least max(N, 8) days ago and expired at least 8 days ago are archived, so
nothing archived could still be used.")]
    Archive {
        /// Archive requests created at least this many days ago (at least 8 applies).
        #[arg(long, value_name = "N")]
        older_than_days: u32,
        /// Print what would be archived and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print {"dryRun": bool, "archived": [id, ...], "skipped": [{"id", "problem", ...}]}.
        #[arg(long)]
        json: bool,
    },

    /// Check the audit log.
    #[command(subcommand)]
    Audit(AuditCommand),

    /// Check the store: unreadable request records, the audit log, stray files.
    #[command(after_help = "\
doctor changes nothing. It reads every request record of the live store, verifies the audit
log's hash chain, anchor and meaning (as `audit verify`), and lists entries of the store's directories
that approval-gate does not write. It exits 0 when the store is healthy and 1 when anything
needs a look. An unreadable record refuses everything about its own id (exit 2 for those
commands) and nothing else; repair it from a backup or move it out of the store.")]
    Doctor {
        /// Print {"ok": bool, "dir": ..., "unreadable": [{"id", "problem", ...}],
        /// "audit": {"ok": bool, ...}, "stray": [path, ...]}.
        #[arg(long)]
        json: bool,
    },

    /// Bring a store of approval-gate-mcp (Node) over to this one, in place.
    #[command(after_help = "\
migrate reads the store approval-gate-mcp wrote in the directory (--dir, APPROVAL_GATE_DIR or
~/.approval-gate) and replaces it, in one atomic swap, with a store of ours holding the same
requests: ids, text, requester, times and decisions kept, pending ones still pending with
their expiry. Anything approval-gate-mcp approved is brought over SPENT (consumed, outcome
unknown): it never spent an approval, so an agent may have acted on it any number of times.
Its audit log and records are kept byte for byte under predecessor/, and the new audit chain
begins with a line recording the old log's length and BLAKE3 digest.

Stop approval-gate-mcp first. A store it cannot read exactly (a damaged or truncated record, a
partial audit line, a temporary file, a mark of a later version, ...) is refused whole, naming
the file, and nothing is changed; so is a store mixing its files with ours. Run it again after
an interruption: it finishes or starts over. On a migrated store it says so and changes
nothing. See docs/migrating.md.")]
    Migrate {
        /// Print what would become of each request, and why; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print {"outcome": "planned"|"migrated"|"already_migrated", "dir": ...,
        /// "logBytes": n, "logBlake3": hex, "requests": [{"id", "oldStatus", "newStatus",
        /// "why"}]}.
        #[arg(long)]
        json: bool,
    },

    /// Print new pending requests as they arrive (and those already waiting).
    #[command(after_help = "\
watch follows the store's pending queue through file-system events (with a fallback check
every few seconds) and stops on Ctrl-C, SIGTERM, or when its output is closed.

--json prints one JSON object per line instead, for each new request and for each decision
that takes a request the watch has printed out of the queue:
  {\"event\": \"requested\", \"request\": {...}}   as `show --json` prints it
  {\"event\": \"decided\", \"request\": {...}}     approved, denied or expired: see its
                                               effectiveStatus
  {\"event\": \"unreadable\", \"record\": {...}}   a record in the queue that cannot be read
Errors are reported on stderr and by the exit status, as without --json.

--notify-cmd runs CMD with `sh -c` for each new request. The request id and the escaped
action are passed only in the environment variables APPROVAL_GATE_ID and
APPROVAL_GATE_ACTION, never in the command text: quote them, as in
  --notify-cmd 'notify-send \"approval needed\" \"$APPROVAL_GATE_ACTION\"'
With --public-url, the request's page on `approval-gate serve` is in APPROVAL_GATE_URL too:
  --public-url https://approvals.example.com \\
  --notify-cmd 'curl -sS -d \"text=approval needed: $APPROVAL_GATE_URL\" \"$CHAT_WEBHOOK\"'
The command, and the link, only tell someone to look; neither can decide anything.")]
    Watch(WatchArgs),

    /// Guard an agent harness's tool calls (Claude Code, Codex): read its hook input on
    /// stdin, file matching calls and answer allow only after a human approves.
    #[command(after_help = HOOK_HELP)]
    Hook(crate::cli::hook::HookArgs),

    /// Serve the web page where approvers decide from a browser or a phone, signing
    /// approvals with their passkeys.
    #[command(after_help = SERVE_HELP)]
    #[cfg(feature = "web")]
    Serve(crate::web::ServeArgs),

    /// Passkeys of approvers, for the web page.
    #[command(subcommand)]
    #[cfg(feature = "web")]
    Passkey(PasskeyCommand),

    /// Tell approvers that a decision waits, on the channels of the config file's [notify]
    /// table (webhook, command, Slack, ntfy, email), with retries, reminders and escalation.
    #[command(after_help = NOTIFY_HELP)]
    #[cfg(feature = "notify")]
    Notify(crate::notify::run::NotifyArgs),

    /// Set up a PostgreSQL store (`--store postgres://...`): create or migrate its schema and
    /// roles.
    #[command(subcommand)]
    Db(DbCommand),

    /// Print a shell completion script.
    #[command(after_help = "\
Load it in the current shell, or install it where your shell looks for completions:
  bash        source <(approval-gate completions bash)
  zsh         approval-gate completions zsh > ~/.zfunc/_approval-gate  (with ~/.zfunc in fpath)
  fish        approval-gate completions fish > ~/.config/fish/completions/approval-gate.fish
  elvish      eval (approval-gate completions elvish | slurp)
  powershell  approval-gate completions powershell | Out-String | Invoke-Expression")]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: Shell,
    },

    /// Print the man page (roff), or write one page per command into a directory.
    #[command(after_help = "\
Read it with `approval-gate man | man -l -`. With --out-dir, writes approval-gate.1 and one
page per command (approval-gate-list.1, approval-gate-audit-verify.1, ...) for MANPATH.")]
    Man {
        /// Write approval-gate.1 and a page for every command into DIR instead.
        #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
        out_dir: Option<PathBuf>,
    },

    /// Print the operator's settings (store, limits, default TTL, approvers, quorum, signing
    /// key) and where each came from.
    #[command(after_help = CONFIG_HELP)]
    Config {
        /// Print {"config": {"path", "found", "source"}, "store": {"value", "source",
        /// "from"}, "maxPending": ..., "maxRequests": ..., "defaultTtl": {..., "seconds"},
        /// "approvers": ..., "quorum": {"value": {pattern: n}, ...}, "signingKey": ...,
        /// "sshKeygen": ..., "hooks": {"value": {"commands", "tools", "timeoutSeconds"}, ...},
        /// "systemPolicy": ...}.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    /// Whether the command was asked for JSON, so that its errors are JSON too.
    pub(crate) fn json(&self) -> bool {
        match self {
            Self::List(args) => args.json,
            Self::Show { json, .. }
            | Self::Deny { json, .. }
            | Self::Revoke { json, .. }
            | Self::Allowances { json }
            | Self::RevokeAllowance { json, .. }
            | Self::SignAllowance { json, .. }
            | Self::Archive { json, .. }
            | Self::Doctor { json }
            | Self::Migrate { json, .. }
            | Self::Config { json }
            | Self::Db(DbCommand::Init { json })
            | Self::Audit(AuditCommand::Verify { json } | AuditCommand::Reanchor { json, .. }) => {
                *json
            }
            Self::Consume { json, .. } => *json,
            Self::Allow(args) => args.json,
            Self::Approve { .. }
            | Self::Exec(_)
            | Self::Hook(_)
            | Self::Watch(_)
            | Self::Completions { .. }
            | Self::Man { .. } => false,
            #[cfg(feature = "web")]
            Self::Serve(_) | Self::Passkey(_) => false,
            #[cfg(feature = "notify")]
            Self::Notify(_) => false,
        }
    }

    /// The request the command is about, if it names one.
    pub(crate) fn id(&self) -> Option<RequestId> {
        match self {
            Self::Show { id, .. }
            | Self::Approve { id, .. }
            | Self::Deny { id, .. }
            | Self::Revoke { id, .. }
            | Self::RevokeAllowance { id, .. } => Some(*id),
            Self::Exec(ExecArgs { binding, .. }) | Self::Consume { binding, .. } => {
                Some(binding.id)
            }
            _ => None,
        }
    }
}

mod allow;
mod help;
mod parts;

use self::allow::ALLOW_HELP;
pub(crate) use self::allow::AllowArgs;

#[cfg(feature = "notify")]
use self::help::NOTIFY_HELP;
#[cfg(feature = "web")]
use self::help::SERVE_HELP;
use self::help::{CONFIG_HELP, EXEC_HELP, HOOK_HELP};
#[cfg(feature = "web")]
pub(crate) use self::parts::PasskeyCommand;
use self::parts::parse_id;
pub(crate) use self::parts::{AuditCommand, BindingArgs, DbCommand, ExecArgs, ListArgs, WatchArgs};

#[cfg(test)]
mod tests;
