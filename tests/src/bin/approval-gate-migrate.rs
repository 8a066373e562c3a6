//! A separate process for the migration's crash test: runs one
//! `approval_gate::migrate_predecessor` on a directory.
//!
//! Usage: `approval-gate-migrate <dir>`. `FAILPOINTS=<name>=return(kill)` kills it with SIGKILL
//! at that failpoint (`migrate::…`, or `fs::op=N*off->return(kill)` at the N+1-th file system
//! operation). Exit codes: 0 migrated (or migrated before), 1 refused or failed, 2 usage.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Reads FAILPOINTS.
    let _failpoints = fail::FailScenario::setup();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir] = &args[..] else {
        eprintln!("usage: approval-gate-migrate <dir>");
        return ExitCode::from(2);
    };
    match approval_gate::migrate_predecessor(std::path::Path::new(dir), false) {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("approval-gate-migrate: {error}");
            ExitCode::from(1)
        }
    }
}
