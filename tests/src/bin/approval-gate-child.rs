//! A separate process for the race and crash tests: runs one `execute_approved` on a store.
//!
//! Usage: `approval-gate-child <store> <id> <action> <runs-file> [operation] [payload-json]`
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

fn run(args: &[String]) -> Result<(), Error> {
    let gate = Gate::builder().store(Location::parse(&args[0])?).open()?;
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
