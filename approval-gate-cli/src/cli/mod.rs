//! The `approval-gate` command line, for humans.
//!
//! [`Cli`] is the parsed command line, [`run`] carries it out and returns its [`Exit`]; the
//! binary is nothing more. Exit codes are part of the interface:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | refused: not found, wrong state, expired, confirmation mismatch, not a terminal, an approval that must be signed or whose key is not trusted; for `doctor`, a problem found |
//! | 2 | usage or I/O error, including an unsafe state directory, a corrupt state file or a broken audit log |
//! | 3 | took effect, but not completely: the change is in place but its durability is unknown (a directory fsync failed) or its audit line could not be written; check with `show ID` and `audit verify` |
//!
//! A library error exits as its class in the error table says ([`approval_gate::ErrorClass`]):
//! `refused` 1, `invalid` and `fault` 2, `incomplete` 3.
//!
//! `exec` is the exception: it exits with its command's status, or with one of its own codes
//! (110 to 127, listed in `exec --help`), so that they do not read as the command's 1 or 2.
//!
//! Errors are one line on stderr, with agent-supplied text escaped. A command given `--json`
//! also reports its error on stdout, as its one JSON document:
//! `{"error": {"code": ..., "message": ..., "id": ...}}`, where `code` is
//! [`approval_gate::Error::code`] (or `usage`, `io`, `other`, or the CLI's own refusal code) and
//! `id` is the request the command was about, or null. Any error on the approve path means
//! nothing was approved.

use std::ffi::OsString;
use std::io;

use approval_gate::{Gate, RequestId};
use serde_json::{Value, json};

mod allow;
mod allowances;
mod approve;
mod archive;
mod args;
mod audit;
mod config;
mod db;
mod decide;
mod doctor;
pub(crate) mod exec;
mod generate;
mod hook;
mod ledger;
mod list;
mod migrate;
mod show;
mod sign_allowance;
mod watch;

/// How a command ended (the human's front ends share it: see [`crate::term`]).
pub use crate::term::Exit;
use crate::term::{Refusal, gate_exit, output, render};
pub use args::Cli;
#[cfg(feature = "web")]
use args::PasskeyCommand;
use args::{AuditCommand, Command, DbCommand};

use crate::settings::SettingsError;
use crate::term::display::escape;

/// Parses `args` (program name first, as [`std::env::args_os`] gives them) and runs the
/// command: all the `approval-gate` binary does.
///
/// A command line that does not parse exits 2 with clap's message on stderr and, when
/// `--json` is among the arguments, `{"error": {"code": "usage", ...}}` on stdout; `--help`
/// and `--version` print on stdout and exit 0.
#[must_use]
pub fn run_args<I, T>(args: I) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    match Cli::parse_args(&args) {
        Ok(cli) => run(cli),
        Err(error) => usage_error(&error, &args),
    }
}

/// Runs a parsed command line, reporting any error on stderr (and on stdout as JSON when the
/// command was given `--json`).
#[must_use]
pub fn run(cli: Cli) -> Exit {
    init_logging();
    let about = About {
        json: cli.command.json(),
        id: cli.command.id(),
        exec: matches!(cli.command, Command::Exec(_)),
    };
    match dispatch(cli) {
        Ok(exit) => exit,
        Err(error) => report(&error, about),
    }
}

/// The library's spans and events on stderr, filtered by `APPROVAL_GATE_LOG` (`tracing`
/// `EnvFilter` syntax: `approval_gate=debug` shows each operation and its outcome, `trace`
/// each step of the store too); nothing by default but errors. A subscriber set by an
/// embedding program wins.
fn init_logging() {
    let filter = match std::env::var(approval_gate::settings::LOG_ENV) {
        Ok(directives) => tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
            output::stderr_line(&format!(
                "approval-gate: warning: ignoring {}: {}",
                approval_gate::settings::LOG_ENV,
                escape(&e.to_string())
            ));
            tracing_subscriber::EnvFilter::new("error")
        }),
        Err(_) => tracing_subscriber::EnvFilter::new("error"),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// What an error report needs to know about the command that failed.
#[derive(Debug, Clone, Copy)]
struct About {
    /// The command was asked for JSON: its error goes to stdout as JSON too.
    json: bool,
    /// The request the command named.
    id: Option<RequestId>,
    /// The command is `exec`, whose exit codes are its own.
    exec: bool,
}

/// Reports a command line that did not parse (or `--help` / `--version`, which succeed).
fn usage_error(error: &clap::Error, args: &[OsString]) -> Exit {
    output::clap_message(error);
    if !error.use_stderr() {
        return Exit::Done;
    }
    // The line could not be parsed, so look for the flag itself; after `--` it is a word.
    let json = args
        .iter()
        .skip(1)
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "--json");
    // `exec` reports its own failures as 125, never as a code its command could mean.
    let exec = args
        .iter()
        .skip(1)
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "exec");
    if json {
        let rendered = error.render().to_string();
        let first = rendered.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first);
        print_json_error(&error_json("usage", message, None));
    }
    if exec {
        Exit::Status(exec::code::FAILED)
    } else {
        Exit::Failed
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    let Cli { settings, command } = cli;
    // A bad setting stops every command that uses the store, before anything is opened.
    let settings = || settings.resolve();
    let open = || -> anyhow::Result<Gate> { Ok(settings()?.open()?) };
    match command {
        Command::List(args) => list::list(&open()?, &args),
        Command::Show { id, json } => show::show(&open()?, id, json),
        // `approve` checks for a terminal before it even opens the store.
        Command::Approve {
            id,
            reason,
            key,
            principal,
        } => approve::approve(
            &settings()?,
            id,
            &reason.join(" "),
            approve::Signer { key, principal },
        ),
        Command::Deny { id, reason, json } => decide::deny(&open()?, id, &reason.join(" "), json),
        Command::Revoke { id, reason, json } => {
            decide::revoke(&open()?, id, &reason.join(" "), json)
        }
        // `allow` too checks for a terminal before it opens the store.
        Command::Allow(args) => allow::allow(&settings()?, &args),
        Command::Allowances { json } => allowances::list(&open()?, json),
        Command::SignAllowance {
            id,
            key,
            principal,
            json,
        } => sign_allowance::sign(&settings()?, id, key.as_ref(), principal.as_ref(), json),
        Command::RevokeAllowance { id, reason, json } => {
            allowances::revoke(&open()?, id, &reason.join(" "), json)
        }
        Command::Exec(args) => exec::exec(&settings()?, &args),
        // Never an error report: every failure is a deny in the harness's own format.
        Command::Hook(args) => Ok(hook::hook(settings(), &args)),
        Command::Consume {
            binding,
            operation,
            json,
        } => exec::consume(&open()?, &binding, operation.as_deref(), json),
        Command::Archive {
            older_than_days,
            dry_run,
            json,
        } => archive::archive(&open()?, older_than_days, dry_run, json),
        Command::Audit(AuditCommand::Verify { json }) => audit::verify(&open()?, json),
        Command::Audit(AuditCommand::Reanchor { yes, json }) => {
            audit::reanchor(&open()?, yes, json)
        }
        Command::Watch(args) => {
            let settings = settings()?;
            watch::watch(&settings, &settings.open()?, &args)
        }
        Command::Doctor { json } => {
            let settings = settings()?;
            doctor::doctor(&settings, &settings.open()?, json)
        }
        // Never opens the store: a store of the predecessor is what it reads.
        Command::Migrate { dry_run, json } => migrate::migrate(&settings()?, dry_run, json),
        Command::Config { json } => config::config(&settings()?, json),
        Command::Db(DbCommand::Init { json }) => db::init(&settings()?, json),
        #[cfg(feature = "notify")]
        Command::Notify(args) => crate::notify::run::notify(&settings()?, &args),
        #[cfg(feature = "web")]
        Command::Serve(args) => crate::web::serve(&settings()?, &args),
        #[cfg(feature = "web")]
        Command::Passkey(PasskeyCommand::Enroll(args)) => crate::web::enroll(&args),
        // Neither needs a store: they describe the command line itself.
        Command::Completions { shell } => generate::completions(shell),
        Command::Man { out_dir } => generate::man(out_dir.as_deref()),
    }
}

/// Prints the error as one escaped line (and as JSON on stdout if the command was asked for
/// JSON) and picks the exit code.
fn report(error: &anyhow::Error, about: About) -> Exit {
    if is_broken_pipe(error) {
        // Whoever read our output has gone (`approval-gate list | head`): nothing to say.
        return Exit::Done;
    }
    let exit = classify(error);
    let kind = match exit {
        Exit::Refused => "refused",
        // Not a failure to act on: the change happened; the reader must know that.
        Exit::TookEffect => "took effect, but",
        Exit::Done | Exit::Failed | Exit::Status(_) => "error",
    };
    let exit = if about.exec {
        Exit::Status(exec::exit_code(error))
    } else {
        exit
    };
    let message = chain_message(error);
    output::stderr_line(&format!("approval-gate: {kind}: {}", escape(&message)));
    if about.json {
        let mut body = error_json(code(error), &message, about.id);
        match gate_error(error) {
            Some(approval_gate::Error::AuditBroken { line, problem }) => {
                body["error"]["line"] = json!(line);
                body["error"]["problem"] = json!(problem);
            }
            Some(approval_gate::Error::AuditInconsistent { line, id, problem }) => {
                body["error"]["line"] = json!(line);
                body["error"]["id"] = json!(id);
                body["error"]["problem"] = json!(problem);
            }
            _ => {}
        }
        print_json_error(&body);
    }
    exit
}

/// The error and its causes, `: `-separated as `{:#}` writes them, without a cause that its
/// error already says in full (the library's `invalid payload: {0}` holds its source's text).
fn chain_message(error: &anyhow::Error) -> String {
    let mut message = String::new();
    let mut last = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !last.ends_with(&text) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
        last = text;
    }
    message
}

/// `{"error": {"code": ..., "message": ..., "id": ...}}`.
fn error_json(code: &str, message: &str, id: Option<RequestId>) -> Value {
    json!({ "error": { "code": code, "message": message, "id": id } })
}

fn print_json_error(body: &Value) {
    // The exit code and the line on stderr already carry the verdict; if stdout is gone
    // too, there is no one left to tell.
    if let Ok(text) = render::json(body) {
        let _ = output::stdout(&text);
    }
}

/// The stable code of an error: the CLI's own refusal code, the library's
/// [`approval_gate::Error::code`], `usage` for a bad setting, `io` for any other I/O error,
/// else `other`.
fn code(error: &anyhow::Error) -> &'static str {
    for cause in error.chain() {
        if cause.is::<SettingsError>() {
            return "usage";
        }
        if let Some(refusal) = cause.downcast_ref::<Refusal>() {
            return refusal.code;
        }
        if let Some(error) = cause.downcast_ref::<approval_gate::Error>() {
            return error.code().as_str();
        }
    }
    if error.chain().any(<dyn std::error::Error>::is::<io::Error>) {
        "io"
    } else {
        "other"
    }
}

fn gate_error(error: &anyhow::Error) -> Option<&approval_gate::Error> {
    error.chain().find_map(|cause| cause.downcast_ref())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Refusals exit 1; everything else, including anything unexpected, exits 2.
fn classify(error: &anyhow::Error) -> Exit {
    for cause in error.chain() {
        if cause.is::<Refusal>() {
            return Exit::Refused;
        }
        if let Some(error) = cause.downcast_ref::<approval_gate::Error>() {
            return gate_exit(error);
        }
    }
    Exit::Failed
}

#[cfg(test)]
mod tests {
    use approval_gate::RequestId;

    use super::*;

    #[test]
    fn a_cause_is_said_once() {
        let context = anyhow::anyhow!("cannot read x.json").context("reading the payload");
        assert_eq!(
            chain_message(&context),
            "reading the payload: cannot read x.json"
        );
        let payload = approval_gate::CanonicalPayload::from_json_text("{").unwrap_err();
        let said = payload.to_string();
        let error = anyhow::Error::new(approval_gate::Error::InvalidPayload(payload));
        assert_eq!(chain_message(&error), format!("invalid payload: {said}"));
        assert_eq!(chain_message(&anyhow::anyhow!("alone")), "alone");
    }

    #[test]
    fn refusals_exit_1_and_problems_exit_2() {
        let id = RequestId::parse("0123456789ab").unwrap();
        let refused = [
            approval_gate::Error::NotFound(id),
            approval_gate::Error::Expired(id),
            approval_gate::Error::Archived(id),
        ];
        for error in refused {
            assert_eq!(classify(&error.into()), Exit::Refused);
        }
        let failed = [
            approval_gate::Error::NoStateDir,
            approval_gate::Error::AuditBroken {
                line: 3,
                problem: "altered".into(),
            },
            approval_gate::Error::Corrupt {
                path: "x".into(),
                problem: "bad".into(),
            },
        ];
        for error in failed {
            assert_eq!(classify(&error.into()), Exit::Failed);
        }
        let took_effect = [
            approval_gate::Error::DurabilityUnknown {
                id,
                operation: "deny",
                source: Box::new(approval_gate::Error::NoStateDir),
            },
            approval_gate::Error::NotRecorded {
                id,
                operation: "revoke",
                source: Box::new(approval_gate::Error::NoStateDir),
            },
        ];
        for error in took_effect {
            assert_eq!(classify(&error.into()), Exit::TookEffect);
            assert_eq!(Exit::TookEffect.code(), 3);
        }
        let wrapped =
            anyhow::Error::new(Refusal::new("not_a_terminal", "no terminal")).context("approving");
        assert_eq!(classify(&wrapped), Exit::Refused);
        assert_eq!(code(&wrapped), "not_a_terminal");
        let gate = anyhow::Error::new(approval_gate::Error::NotFound(id)).context("showing");
        assert_eq!(code(&gate), "not_found");
        assert_eq!(code(&io::Error::other("disk gone").into()), "io");
        assert_eq!(code(&anyhow::anyhow!("something else")), "other");
        assert_eq!(classify(&anyhow::anyhow!("something else")), Exit::Failed);
    }
}
