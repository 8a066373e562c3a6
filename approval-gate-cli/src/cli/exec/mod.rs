//! `exec` and `consume`: the single-use claim from any program.
//!
//! `exec` is the library's [`Gate::execute_approved`] with a process as its closure: the
//! claim and the start are durable before the command starts, the command gets the frozen
//! approved payload (never the caller's copy), and its end is the execution's outcome. Every
//! check that can fail without spending anything (the payload, the command, the binding)
//! happens before the claim.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use approval_gate::limits::MAX_PAYLOAD_BYTES;
use approval_gate::{Binding, CanonicalPayload, ErrorFamily, Gate, Grant, RequestId};
use serde_json::{Value, json};
use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};

mod end;
mod forward;
mod program;

use super::args::{BindingArgs, ExecArgs};
use crate::settings::{SYSTEM_POLICY_ENV, SYSTEM_POLICY_PATH, Settings};
use crate::term::display::{escape, escape_truncated};
use crate::term::output;
use crate::term::{Exit, Refusal, render};
use end::End;
use forward::Forwarder;
use program::resolve;

/// The signals `exec` passes on to its command.
const FORWARDED: [i32; 7] = [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM];

/// Most bytes read as a payload: the most a payload's JSON text may be (the library refuses
/// longer text, whitespace included), so reading on could only waste memory.
const MAX_PAYLOAD_INPUT: u64 = MAX_PAYLOAD_BYTES as u64;

/// `exec`'s documented exit codes for what it decides itself (the command's own status is
/// passed through; see `exec --help`).
pub(crate) mod code {
    /// Still pending (also after `--wait`), short of its quorum.
    pub(crate) const NOT_APPROVED: u8 = 110;
    /// Denied.
    pub(crate) const DENIED: u8 = 111;
    /// The request, or the approval before it was used, expired.
    pub(crate) const EXPIRED: u8 = 112;
    /// The approval was revoked.
    pub(crate) const REVOKED: u8 = 113;
    /// The approval was used before.
    pub(crate) const ALREADY_CONSUMED: u8 = 114;
    /// The action, operation or payload differ from what was approved.
    pub(crate) const MISMATCH: u8 = 115;
    /// Under an approvers policy, the approval's signatures do not hold: unsigned, too few
    /// valid ones, a bad one, or one from a key the policy does not trust.
    pub(crate) const SIGNATURE: u8 = 116;
    /// No such request, or it is archived.
    pub(crate) const NOT_FOUND: u8 = 117;
    /// Spent, and the command did not run: claimed, but the claim or the start could not be
    /// made durable or recorded, the command could not be started, or a signal stopped exec
    /// before it started.
    pub(crate) const SPENT_NOT_RUN: u8 = 118;
    /// Spent, and the command's outcome is unknown: it started, and exec lost track of it.
    pub(crate) const SPENT_UNKNOWN: u8 = 119;
    /// `exec` itself failed: usage, payload, store or audit-log error.
    pub(crate) const FAILED: u8 = 125;
    /// The command (or the interpreter its `#!` line names) is not an executable file;
    /// found before the claim, so nothing was spent.
    pub(crate) const CANNOT_RUN: u8 = 126;
    /// The command (or the interpreter its `#!` line names) was not found; found before the
    /// claim, so nothing was spent.
    pub(crate) const NOT_FOUND_CMD: u8 = 127;
}

/// The exit code `exec` reports for an error that kept the command from running.
pub(crate) fn exit_code(error: &anyhow::Error) -> u8 {
    for cause in error.chain() {
        if let Some(refusal) = cause.downcast_ref::<Refusal>() {
            return match refusal.code {
                "command_not_found" => code::NOT_FOUND_CMD,
                "command_not_executable" => code::CANNOT_RUN,
                _ => code::FAILED,
            };
        }
        if let Some(error) = cause.downcast_ref::<approval_gate::Error>() {
            return gate_code(error.code().family());
        }
    }
    code::FAILED
}

/// `exec`'s code for a library error: its family, from the error table (no wildcard: a family
/// added to the library must be decided here).
#[deny(clippy::wildcard_enum_match_arm)]
fn gate_code(family: ErrorFamily) -> u8 {
    use ErrorFamily as F;
    match family {
        F::Pending => code::NOT_APPROVED,
        F::Denied => code::DENIED,
        F::Expired => code::EXPIRED,
        F::Revoked => code::REVOKED,
        F::Spent => code::ALREADY_CONSUMED,
        F::Binding => code::MISMATCH,
        F::Signature | F::Quorum => code::SIGNATURE,
        F::Missing => code::NOT_FOUND,
        F::Incomplete => code::SPENT_NOT_RUN,
        // Refusals exec has no code of its own for (it never decides), and every failure.
        F::State | F::Capacity | F::Permission | F::Input | F::Damage | F::Setup | F::Store => {
            code::FAILED
        }
    }
}

/// `consume`: the claim alone.
pub(crate) fn consume(
    gate: &Gate,
    args: &BindingArgs,
    operation: Option<&str>,
    json: bool,
) -> anyhow::Result<Exit> {
    let binding = binding(gate, args, operation)?;
    let grant = gate.consume::<Value>(args.id, &binding)?;
    let payload = frozen_payload(&grant)?;
    if json {
        let claim = json!({
            "id": grant.id(),
            "action": binding.action(),
            "operation": grant.operation(),
            "payloadDigest": grant.payload_digest(),
            "payload": grant.payload(),
            "expiresAt": grant.expires_at(),
        });
        output::stdout(&render::json(&claim)?)?;
    } else {
        let room = output::width().saturating_sub(24);
        output::stderr_line(&format!(
            "consumed {}: {}",
            grant.id(),
            escape_truncated(binding.action(), room.max(24))
        ));
        // The payload as approved, byte for byte, for the script that asked.
        if let Some(payload) = payload {
            output::stdout(payload.as_str())?;
        }
    }
    Ok(Exit::Done)
}

/// `exec`: wait if asked, check everything that can be checked for free, claim, run, record.
pub(crate) fn exec(settings: &Settings, args: &ExecArgs) -> anyhow::Result<Exit> {
    let id = args.binding.id;
    // Before the store is even opened: a policy the executor was told to expect is missing.
    if args.require_policy && settings.system_policy.is_none() {
        return Err(Refusal::new(
            "policy_missing",
            format!(
                "--require-policy: no system policy is in force ({SYSTEM_POLICY_PATH} does not \
                 exist, and {SYSTEM_POLICY_ENV} names no other); nothing was consumed"
            ),
        )
        .into());
    }
    let gate = &settings.open()?;
    if let Some(warning) = super::ledger::rewritable_store(settings) {
        output::stderr_line(&format!("approval-gate: exec {id}: {warning}"));
    }
    // Found before anything is spent: a typo in CMD must not use up the approval.
    let program = resolve(&args.command[0])?;
    // Read before any wait: a payload that cannot be bound is refused now, not in ten minutes.
    let binding = binding(gate, &args.binding, Some(&args.operation))?;
    if args.wait {
        wait(gate, id, args.timeout)?;
    }
    // From here until the command has started, a signal stops exec instead.
    let forward = Forwarder::install()?;
    let result = gate.execute_approved(id, &binding, |grant: &Grant<Value>| {
        run(grant, &program, &args.command[1..], &forward)
    });
    forward.close();
    match result {
        Ok(end) | Err(RunError::Command(end)) => {
            if let Some(note) = end.note() {
                output::stderr_line(&format!("approval-gate: exec {id}: {note}"));
            }
            Ok(Exit::Status(end.exit_code()))
        }
        Err(RunError::Refused(error)) => Err(error.into()),
    }
}

/// Waits for the request's decision: until it is made, it expires, or `timeout` passes.
fn wait(gate: &Gate, id: RequestId, timeout: Option<Duration>) -> anyhow::Result<()> {
    let report = gate.status(id)?;
    let left = gate
        .now()
        .millis_until(report.request().expires_at())
        .max(0)
        .unsigned_abs();
    // A little past the expiry, so that the wait sees the request expire.
    let until_expiry = Duration::from_millis(left) + Duration::from_secs(1);
    let timeout = timeout.map_or(until_expiry, |t| t.min(until_expiry));
    if report.effective_status() == approval_gate::EffectiveStatus::Pending {
        // Whoever runs the script sees why it stopped, and for how long it may.
        output::stderr_line(&format!(
            "approval-gate: exec {id}: waiting for a decision (at most {})",
            humantime::format_duration(Duration::from_secs(timeout.as_secs()))
        ));
    }
    // Whatever the wait saw, the claim decides: a request still pending is refused there,
    // and audited, like any other.
    gate.wait_for_decision(id, timeout)?;
    Ok(())
}

/// The binding the caller states: its action (or the request's own), operation and payload.
/// A payload that cannot be read is a refusal of this consume, and audited as one.
fn binding(gate: &Gate, args: &BindingArgs, operation: Option<&str>) -> anyhow::Result<Binding> {
    let id = args.id;
    let refused = |error: approval_gate::Error| {
        gate.record_refused_consume(id, &error);
        anyhow::Error::new(error)
    };
    let payload = match read_payload(args) {
        Ok(payload) => payload,
        Err(PayloadInput::Invalid(error)) => return Err(refused(error.into())),
        Err(PayloadInput::Io(error)) => return Err(error),
    };
    let action = match &args.action {
        Some(action) => action.clone(),
        None => match gate.status(id) {
            Ok(report) => report.request().action().to_owned(),
            Err(error) => return Err(refused(error)),
        },
    };
    let mut binding = Binding::new(action);
    if let Some(operation) = operation {
        binding = binding.operation(operation);
    }
    if let Some(payload) = payload {
        binding = binding.payload(payload);
    }
    Ok(binding)
}

enum PayloadInput {
    Invalid(approval_gate::PayloadError),
    Io(anyhow::Error),
}

fn read_payload(args: &BindingArgs) -> Result<Option<CanonicalPayload>, PayloadInput> {
    let (text, from) = if let Some(path) = &args.payload_file {
        let file = std::fs::File::open(path).map_err(|e| {
            PayloadInput::Io(anyhow::Error::new(e).context(format!(
                "cannot read the payload file {}",
                escape(&path.display().to_string())
            )))
        })?;
        (read_bounded(file), "the payload file")
    } else if args.payload_stdin {
        (read_bounded(io::stdin().lock()), "standard input")
    } else {
        return Ok(None);
    };
    let text = text.map_err(|e| {
        PayloadInput::Io(anyhow::Error::new(e).context(format!("cannot read {from}")))
    })?;
    CanonicalPayload::from_json_text(&text)
        .map(Some)
        .map_err(PayloadInput::Invalid)
}

fn read_bounded(source: impl Read) -> io::Result<String> {
    let mut text = String::new();
    source
        .take(MAX_PAYLOAD_INPUT + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PAYLOAD_INPUT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the payload is longer than {MAX_PAYLOAD_INPUT} bytes, the most a payload may be"
            ),
        ));
    }
    Ok(text)
}

/// Why the closure given to `execute_approved` did not end with a command that exited 0.
enum RunError {
    /// A refusal of the claim or of the start: the command never ran.
    Refused(approval_gate::Error),
    /// The command ran and failed, or could not be run after the claim: its outcome.
    Command(End),
}

impl From<approval_gate::Error> for RunError {
    fn from(error: approval_gate::Error) -> Self {
        Self::Refused(error)
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(error) => write!(f, "{error}"),
            Self::Command(end) => write!(f, "{end}"),
        }
    }
}

/// The approved payload, canonical, checked against the digest the claim was made for.
fn frozen_payload(grant: &Grant<Value>) -> Result<Option<CanonicalPayload>, approval_gate::Error> {
    let Some(digest) = grant.payload_digest() else {
        return Ok(None);
    };
    let payload = CanonicalPayload::from_value(grant.payload())?;
    if payload.digest() != digest {
        // Cannot happen: consume checked that the payload round-trips. Refuse all the same.
        return Err(approval_gate::Error::PayloadMismatch {
            id: grant.id(),
            expected: digest.to_hex(),
        });
    }
    Ok(Some(payload))
}
/// The command's run inside the execution: the last check, the start, the payload on its
/// standard input, and its end.
fn run(
    grant: &Grant<Value>,
    program: &Path,
    args: &[OsString],
    forward: &Forwarder,
) -> Result<End, RunError> {
    let payload = frozen_payload(grant)?;
    let mut command = Command::new(program);
    command.args(args);
    command
        .env_remove("APPROVAL_GATE_PAYLOAD_DIGEST")
        .env("APPROVAL_GATE_ID", grant.id().to_string())
        .env(
            "APPROVAL_GATE_OPERATION",
            grant.operation().unwrap_or_default(),
        );
    if let Some(digest) = grant.payload_digest() {
        command.env("APPROVAL_GATE_PAYLOAD_DIGEST", digest.to_hex());
    }
    command.stdin(if payload.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    grant.assert_active()?;
    let mut child = match forward.spawn(&mut command) {
        Ok(Some(child)) => child,
        Ok(None) => {
            let signal = forward.pending().unwrap_or(SIGTERM);
            return Err(RunError::Command(End::Stopped(signal)));
        }
        Err(error) => return Err(RunError::Command(End::CouldNotStart(error))),
    };
    if let Some((mut stdin, payload)) = child.stdin.take().zip(payload) {
        // Written here, not on a thread: nothing waits on the command's output meanwhile,
        // so a command that reads its input late only delays this write, and one that
        // exits without reading it ends it (a broken pipe, its own affair). Signals are
        // passed on by the forwarding thread all the while. The pipe closes at the end of
        // this block: the command sees the end of its input.
        let _ = stdin.write_all(payload.as_bytes());
    }
    forward.until_ended(&child);
    // std retries an interrupted wait itself; any other error leaves the end unknown.
    let status = child
        .wait()
        .map_err(|error| RunError::Command(End::Lost(error)))?;
    if status.success() {
        Ok(End::Exited(status))
    } else {
        Err(RunError::Command(End::Exited(status)))
    }
}

#[cfg(test)]
mod tests;
