//! A separate process that decides one request, as a human's terminal would: for the tests
//! that a wait in another process hears of the decision.
//!
//! Usage: `approval-gate-decide <dir> <id> approve|deny|revoke`. Exit codes: 0 decided,
//! 4 refused, 2 usage.

use std::process::ExitCode;

use approval_gate::{Decision, Gate, RequestId};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, id, verb] = args.as_slice() else {
        eprintln!("usage: approval-gate-decide <dir> <id> approve|deny|revoke");
        return ExitCode::from(2);
    };
    let decided = Gate::open(dir).and_then(|gate| {
        let id = RequestId::parse(id)?;
        let decision = Decision::by("another process");
        match verb.as_str() {
            "approve" => gate.approve(id, &decision),
            "deny" => gate.deny(id, &decision),
            "revoke" => gate.revoke(id, &decision),
            _ => Err(approval_gate::Error::InvalidInput {
                field: "decision",
                problem: format!("{verb:?} is not approve, deny or revoke"),
            }),
        }
    });
    match decided {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{}: {error}", error.code());
            ExitCode::from(4)
        }
    }
}
