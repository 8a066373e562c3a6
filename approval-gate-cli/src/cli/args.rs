//! The command line: what `--help` shows is written here.

// Doc comments here are `--help` text, not rustdoc: backticks would be printed as they are.
#![allow(clippy::doc_markdown)]

use std::ffi::OsString;
use std::path::PathBuf;

use approval_gate::limits::MAX_PAGE;
use approval_gate::{ListFilter, RequestId};
use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};
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

    /// Serve the web page where approvers decide from a browser or a phone, signing
    /// approvals with their passkeys.
    #[command(after_help = SERVE_HELP)]
    Serve(crate::web::ServeArgs),

    /// Passkeys of approvers, for the web page.
    #[command(subcommand)]
    Passkey(PasskeyCommand),

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
        /// "approvers": ..., "quorum": {"value": {pattern: n}, ...}, "signingKey": ...}.
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
            | Self::Archive { json, .. }
            | Self::Doctor { json }
            | Self::Config { json }
            | Self::Db(DbCommand::Init { json })
            | Self::Audit(AuditCommand::Verify { json } | AuditCommand::Reanchor { json, .. }) => {
                *json
            }
            Self::Consume { json, .. } => *json,
            Self::Approve { .. }
            | Self::Exec(_)
            | Self::Watch(_)
            | Self::Serve(_)
            | Self::Passkey(_)
            | Self::Completions { .. }
            | Self::Man { .. } => false,
        }
    }

    /// The request the command is about, if it names one.
    pub(crate) fn id(&self) -> Option<RequestId> {
        match self {
            Self::Show { id, .. }
            | Self::Approve { id, .. }
            | Self::Deny { id, .. }
            | Self::Revoke { id, .. } => Some(*id),
            Self::Exec(ExecArgs { binding, .. }) | Self::Consume { binding, .. } => {
                Some(binding.id)
            }
            _ => None,
        }
    }
}

/// `approval-gate passkey ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum PasskeyCommand {
    /// Open a one-time link that registers a passkey for PRINCIPAL, and print the line that
    /// trusts it, to add to the approvers file.
    #[command(after_help = ENROLL_HELP)]
    Enroll(crate::web::EnrollArgs),
}

const SERVE_HELP: &str = "\
The page lists pending requests (live: new ones and decisions appear without a reload), shows
one in full with the terminal's escaping, its approvals and its audit trail, and takes
decisions. Approvers sign in with a passkey; an approval is a passkey signature over the
request's decision statement (the statement `approve --key` signs with an SSH key), which the
executor verifies against the approvers file and counts toward the quorum like an SSH-signed
one. Deny and revoke need a signed-in approver.

It needs the approvers file (--approvers) with at least one passkey line: see `approval-gate
passkey enroll --help`. Without TLS it serves loopback only, at http://localhost:PORT (browsers
allow passkeys there and over https:// only); elsewhere give --tls-cert, --tls-key and
--public-url. Run it as its own OS user, with the store's approver role, never as the agent.

  approval-gate --approvers approvers serve
  approval-gate --store postgres://approver@db/gate --approvers approvers serve \\
      --listen 0.0.0.0:443 --public-url https://approvals.example.com \\
      --tls-cert cert.pem --tls-key key.pem --session-key-file session.key";

const ENROLL_HELP: &str = "\
Open the printed link in the approver's browser (on their phone, laptop or security key) and
create the passkey; the command then prints one line, such as
  alice@example.com namespaces=\"approval-gate\" sk-ecdsa-sha2-nistp256@openssh.com AAAA... \
passkey:... origin:http://localhost:8470
and exits. Nothing is trusted until the operator adds that line to the approvers file (and
restarts serve). The passkey belongs to the host name of the link's origin (its relying party):
enroll with the --public-url (and certificate) that serve uses. Its approvals count only on
the page the line names (--serve-url, port included: serve's origin).";

const EXEC_HELP: &str = "\
exec is sudo for approved actions. Before anything is spent it reads the payload (the JSON
the approval must bind, canonicalized as RFC 8785) and finds CMD (through PATH unless it
holds a slash). Then it claims the approval once, bound to the request's own action text
(or --action), the operation and the payload, exactly as the library's execute_approved:
the claim and the start of the execution are written and synced before CMD starts, the
expiry is checked again, and CMD runs with
  standard input                 the approved payload's canonical JSON bytes (nothing
                                 when the request has no payload)
  APPROVAL_GATE_ID               the request id
  APPROVAL_GATE_OPERATION        the operation
  APPROVAL_GATE_PAYLOAD_DIGEST   the payload's BLAKE3 digest (hex), when it has one
exec waits for CMD and records its outcome (exit status or signal) in the audit log.
SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 and SIGALRM sent to exec are passed on
to CMD (those the terminal sends reach CMD itself); one that arrives before CMD starts stops
exec, and CMD never runs. If exec itself dies while CMD runs, the execution stays started and
unfinished: `show ID` and `audit verify` report its outcome as unknown. Nothing is retried.

Exit status: CMD's own, 128+N if a signal N ended it, else one of
  110  not approved: still pending (also after --wait, or short of its quorum)
  111  denied
  112  expired: the request, or the approval before it was used
  113  revoked
  114  already consumed: the approval was used before
  115  mismatch: action, operation or payload differ from what was approved
  116  signatures refused: under an approvers policy, the approval is unsigned, has too few
       valid signatures, a bad one, or one by a key the policy does not trust
  117  not found, or archived
  118  spent, CMD did not run: the approval was claimed, but its claim or the start could
       not be made durable or recorded, CMD failed to start (such as a missing
       interpreter of an interpreter), or a signal stopped exec before CMD started
  119  spent, outcome unknown: CMD started and exec lost track of it
  125  exec failed: a bad command line, a payload it cannot read, a store or audit-log error
       (nothing was spent)
  126  CMD, or the interpreter its #! line names, is not executable (nothing was spent)
  127  CMD, or the interpreter its #! line names, was not found (nothing was spent)
Codes 110 to 127 can also be CMD's own: the message on stderr and the audit log tell which.

Under a signing policy, exec warns on stderr when this account can rewrite the (directory)
store: any process of this account can delete a claim and run a spent approval again until
it expires, or write a revoked approval back to approved. Run exec under an OS user of its
own that owns the store, or on PostgreSQL with the executor role.";

const CONFIG_HELP: &str = "\
Each setting comes from the first of: a flag, the environment, the config file, the default.
  store         --store or --dir, APPROVAL_GATE_STORE, APPROVAL_GATE_DIR, `store`
                (default ~/.approval-gate)
  max_pending   APPROVAL_GATE_MAX_PENDING, `max_pending` (default 100)
  max_requests  APPROVAL_GATE_MAX_REQUESTS, `max_requests` (default 10000)
  default_ttl   APPROVAL_GATE_DEFAULT_TTL, `default_ttl`, such as 30m (default 1h)
  approvers     --approvers, APPROVAL_GATE_APPROVERS, `approvers`: an OpenSSH
                allowed_signers file of trusted approvers (default none). With it,
                approvals must be signed (approve --key) by keys it trusts.
  quorum        --quorum, APPROVAL_GATE_QUORUM ('payments.*=2,deploy.*=3,*=1'), or a
                table [quorum] \"payments.*\" = 2: distinct approvers an operation needs;
                a table needs a \"*\" entry (default 1; needs approvers)
  signing_key   approve --key, APPROVAL_GATE_SIGNING_KEY, `signing_key` (default none)
  ssh_keygen    APPROVAL_GATE_SSH_KEYGEN, `ssh_keygen`: the absolute path of the ssh-keygen
                that signs (default /usr/bin/ssh-keygen; never one found through PATH)
The config file is TOML: --config, else APPROVAL_GATE_CONFIG, else
$XDG_CONFIG_HOME/approval-gate/config.toml, else ~/.config/approval-gate/config.toml.
A system policy, /etc/approval-gate/policy.toml (or the file APPROVAL_GATE_SYSTEM_POLICY
names, in the executor's own environment), holds `approvers` and a [quorum] table that no
user setting can lower: when it exists, its approvers are the only ones (a user's other
approvers file is an error) and a user's quorum can only raise its numbers. It, its
approvers file and their directories must be owned by root (or, for a user other than
root, by another account) and not writable by group or others.
An unknown key or a bad value anywhere is an error (exit 2), even one overridden. config
reads the settings only: it opens and creates nothing.";

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Which requests.
    #[arg(value_enum, default_value_t = StatusFilter::Pending)]
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

/// Which requests `list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatusFilter {
    /// Waiting for a decision.
    Pending,
    /// Approved and not consumed (usable or expired).
    Approved,
    /// Denied.
    Denied,
    /// Expired while pending.
    Expired,
    /// Approval withdrawn.
    Revoked,
    /// Approved and used.
    Consumed,
    /// Everything in the live store, pending first.
    All,
}

impl StatusFilter {
    pub(crate) fn list_filter(self) -> ListFilter {
        match self {
            Self::Pending => ListFilter::Pending,
            Self::Approved => ListFilter::Approved,
            Self::Denied => ListFilter::Denied,
            Self::Expired => ListFilter::Expired,
            Self::Revoked => ListFilter::Revoked,
            Self::Consumed => ListFilter::Consumed,
            Self::All => ListFilter::All,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
            Self::Consumed => "consumed",
            Self::All => "all",
        }
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

It creates three NOLOGIN group roles, which the operator grants to login roles:
  approval_gate_agent     file requests, read them, deny
  approval_gate_approver  approve, deny, revoke, archive (the humans)
  approval_gate_executor  consume approvals and record executions (the trusted code)
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
    /// added to --json lines as "url".
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

fn parse_id(text: &str) -> Result<RequestId, String> {
    RequestId::parse(text).map_err(|_| "expected 12 lowercase hex characters".to_owned())
}

fn parse_limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(limit) if (1..=MAX_PAGE).contains(&limit) => Ok(limit),
        _ => Err(format!("expected a number from 1 to {MAX_PAGE}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
