//! A separate process for the race and crash tests: runs one `execute_approved` on a store.
//!
//! Usage: `approval-gate-child <store> <id> <action> <runs-file> [operation] [payload-json]`
//!
//! Or `approval-gate-child --serve <store> <operation> <payload-json>`: opens the store once,
//! prints `ready`, then for each line `<id>\t<action>\t<runs-file>` on stdin runs one
//! `execute_approved` and prints its exit code as below (then a space and the error, for 4),
//! until stdin ends. The races use it so that a trial's processes are all running, their
//! stores open, when the trial starts.
//!
//! `<store>` is a store location as `--store` takes it (a directory, or a URL of any
//! backend this build has), so the same races and crashes run against every backend.
//!
//! The closure appends one line to `<runs-file>`, so the test can count executions across
//! processes. `FAILPOINTS=<name>=return(kill)` kills it with SIGKILL at that failpoint.
//! With `APPROVAL_GATE_CHILD_ABORT=1` the process aborts right after that line,
//! inside the closure, as a crash would. Exit codes: 0 executed, 3 already consumed, 4 any
//! other refusal, 2 usage.

use std::io::Write;
use std::process::ExitCode;

use approval_gate::{Binding, CanonicalPayload, Error, Gate, Grant, Location, RequestId};

fn main() -> ExitCode {
    // Reads FAILPOINTS, e.g. `consume::after_claim=return(kill)`.
    let _failpoints = fail::FailScenario::setup();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") && args.len() == 4 {
        return serve(&args[1], &args[2], &args[3]);
    }
    if args.len() < 4 {
        eprintln!(
            "usage: approval-gate-child <store> <id> <action> <runs-file> [operation] [payload]"
        );
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::AlreadyConsumed(_)) => ExitCode::from(3),
        Err(other) => {
            eprintln!("{}: {other}", other.code());
            ExitCode::from(4)
        }
    }
}

/// The `--serve` loop.
fn serve(store: &str, operation: &str, payload: &str) -> ExitCode {
    let gate =
        match Location::parse(store).and_then(|location| Gate::builder().store(location).open()) {
            Ok(gate) => gate,
            Err(error) => {
                eprintln!("{}: {error}", error.code());
                return ExitCode::from(4);
            }
        };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(2);
    }
    for line in std::io::stdin().lines() {
        let Ok(line) = line else { break };
        let fields: Vec<&str> = line.split('\t').collect();
        let [id, action, runs] = fields[..] else {
            eprintln!("expected <id>\\t<action>\\t<runs-file>, got {line:?}");
            return ExitCode::from(2);
        };
        let args = [store, id, action, runs, operation, payload].map(str::to_owned);
        let answer = match execute(&gate, &args) {
            Ok(()) => "0".to_owned(),
            Err(Error::AlreadyConsumed(_)) => "3".to_owned(),
            Err(other) => format!("4 {}: {other}", other.code()),
        };
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

fn run(args: &[String]) -> Result<(), Error> {
    let gate = Gate::builder().store(Location::parse(&args[0])?).open()?;
    execute(&gate, args)
}

fn execute(gate: &Gate, args: &[String]) -> Result<(), Error> {
    let id = RequestId::parse(&args[1])?;
    let mut binding = Binding::new(args[2].as_str());
    if let Some(op) = args.get(4).filter(|s| !s.is_empty()) {
        binding = binding.operation(op.as_str());
    }
    if let Some(payload) = args.get(5) {
        binding = binding.payload(CanonicalPayload::from_json_text(payload)?);
    }
    let runs = args[3].clone();
    gate.execute_approved(id, &binding, |run: &Grant<serde_json::Value>| {
        run.assert_active()?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&runs)
            .map_err(|e| Error::Io {
                op: "appending to",
                path: runs.clone().into(),
                source: e,
            })?;
        writeln!(file, "{} {}", std::process::id(), run.id()).map_err(|e| Error::Io {
            op: "appending to",
            path: runs.clone().into(),
            source: e,
        })?;
        if std::env::var_os("APPROVAL_GATE_CHILD_ABORT").is_some() {
            std::process::abort();
        }
        Ok(())
    })
}
