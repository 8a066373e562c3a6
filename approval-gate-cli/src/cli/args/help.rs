//! The longer `--help` texts of `serve`, `passkey enroll`, `exec` and `config`.

#[cfg(feature = "web")]
pub(super) const SERVE_HELP: &str = "\
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

#[cfg(feature = "web")]
pub(super) const ENROLL_HELP: &str = "\
Open the printed link in the approver's browser (on their phone, laptop or security key) and
create the passkey; the command then prints one line, such as
  alice@example.com namespaces=\"approval-gate\" sk-ecdsa-sha2-nistp256@openssh.com AAAA... \
passkey:... origin:http://localhost:8470
and exits. Nothing is trusted until the operator adds that line to the approvers file (and
restarts serve). The passkey belongs to the host name of the link's origin (its relying party):
enroll with the --public-url (and certificate) that serve uses. Its approvals count only on
the page the line names (--serve-url, port included: serve's origin).";

pub(super) const EXEC_HELP: &str = "\
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

pub(super) const CONFIG_HELP: &str = "\
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
  hooks         a table [hooks] in the config file only: the tool calls `hook` guards
                (commands = [\"git push*\"], tools = [\"mcp__*__send*\"], timeout = \"600s\";
                default none guarded, 60s): see `hook --help`
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

pub(super) const HOOK_HELP: &str = "\
hook reads one hook input (JSON) on stdin: Claude Code's PreToolUse, or Codex's
PermissionRequest. A call matching none of the config file's [hooks] patterns gets no
opinion (exit 0, nothing on stdout): the harness's own permission flow goes on. A matching
call is filed as a request: operation hook.<harness>.<tool> (the tool name lowercased, any
other character made _, such as hook.claude_code.bash), payload the exact tool_input. The
hook waits for a decision until a little before --timeout (a tenth of it, 0.5 s to 5 s),
consumes an approval bound to that exact action, operation and payload, and answers allow.

Everything else answers deny, with the reason: a denial, an expiry, the timeout, input that
is not the harness's hook JSON, a bad setting, a store error. Claude Code gets
{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": ...,
\"permissionDecisionReason\": ...}}, and a deny exits 2 (which blocks the call whatever
stdout holds); Codex gets {\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\",
\"decision\": {\"behavior\": ..., \"message\": ...}}} with exit 0.

  [hooks]
  commands = [\"git push*\", \"rm -rf*\"]   # Bash calls whose command matches
  tools = [\"mcp__*__send*\"]              # every call of these tools
  timeout = \"600s\"                        # the harness's timeout for the hook

See docs/hooks.md for the harness configuration, and what the hook does not guarantee.";

/// `notify`'s help.
#[cfg(feature = "notify")]
pub(super) const NOTIFY_HELP: &str = "\
Reads its channels from the config file's [notify] table (docs/notify.md):
  public_url = \"https://approvals.example.com\"   # each message links to the request's page
  [notify]
  reminder_before = \"10m\"                        # one reminder before expiry (optional)
  [notify.channels.ops]
  type = \"webhook\"                               # webhook, command, slack, ntfy, email
  url = \"https://hooks.example.com/approvals\"
  secret = { file = \"/etc/approval-gate/webhook.key\" }   # never on the command line
  [[notify.escalate]]
  operations = \"payments.*\"
  after = \"15m\"                                  # still undecided: also tell these
  channels = [\"oncall\"]

Each channel gets one message per pending request (and a reminder, an escalation), with its
id, operation, payload digest, expiry and page link. No channel approves: the link opens the
page, where approving needs a passkey, and nothing decides on a GET.

Delivery is at least once, and once in normal operation: each message has a key
(<id>.<channel>.<kind>, the webhook's webhook-id) recorded in the store's ledger when
delivered; failures are tried again with exponential backoff (1 s doubling to 5 min, full
jitter), 8 attempts, then kept as a dead letter, which `approval-gate doctor` lists.

A command of its own, not a mode of `serve`: it holds the channels' secrets, which the page
does not need; it may run on another host; several may run over one PostgreSQL store (their
logins need approval_gate_notifier) and deliver each message once; one crashing does not take
the page down. On a directory store one runs at a time. Logs go to stderr, one line per
delivery, retry and dead letter; secrets are never printed. SIGINT or SIGTERM stops it.

Exit status: 0 when stopped (--once: everything due delivered), 1 with --once if a message
was given up on, 2 for a bad config or store.";
