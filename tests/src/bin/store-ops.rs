//! One directory-store operation, many times, for strace to count (issue 42):
//! `tests/benches/strace-ops.sh` runs it; the figures are in docs/benchmarks.md.
//!
//! Usage: `store-ops <operation> <count> [threads]`, the operation one of
//!
//! - `file`: `request_approval`;
//! - `approve`, `deny`: a decision on a pending request;
//! - `consume`: `consume` of an approved request (its grant dropped, never started);
//! - `execute`: `execute_approved` of an approved request (consume, start, an empty closure,
//!   finish).
//!
//! Everything the counted part needs is made first: a fresh store in a temporary directory
//! under `APPROVAL_GATE_BENCH_DIR` (else the system temp dir), one whole request → approve →
//! execute cycle and one denial (so that the store's first-time files and folders exist),
//! and `count` requests filed, approved or not as the operation needs. Then it prints
//! `ready` and waits for a line on stdin; on that line it does the operation `count` times,
//! prints `done` and waits for another line before it exits and removes the store. With
//! `threads` above 1, that many threads (started before the count, waiting at a barrier)
//! share the `count` operations, all at once: what one process's concurrent steps cost, as
//! the MCP server's or `serve`'s.
//!
//! The counted part is fenced by two markers a trace shows: a look-up of the names
//! `strace-ops-counted-part-begins` and `strace-ops-counted-part-ends` in the store's
//! temporary directory, where nothing has those names. The calls between them are the
//! operations' own. Exit codes: 0 done, 4 an operation failed, 2 usage.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Barrier;

use approval_gate::{Binding, Decision, Error, Gate, Grant, Limits, NewRequest, RequestId};

const USAGE: &str = "usage: store-ops file|approve|deny|consume|execute <count> [threads]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |n: &String| n.parse::<usize>().ok().filter(|&n| n > 0);
    let (Some(op), Some(count), Some(threads), 2..=3) = (
        args.first().and_then(|op| Op::parse(op)),
        args.get(1).and_then(number),
        args.get(2).map_or(Some(1), number),
        args.len(),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match run(op, count, threads) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("store-ops: {error}");
            ExitCode::from(4)
        }
    }
}

/// The operation counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    File,
    Approve,
    Deny,
    Consume,
    Execute,
}

impl Op {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "file" => Self::File,
            "approve" => Self::Approve,
            "deny" => Self::Deny,
            "consume" => Self::Consume,
            "execute" => Self::Execute,
            _ => return None,
        })
    }
}

fn run(op: Op, count: usize, threads: usize) -> Result<(), Box<dyn std::error::Error>> {
    let root =
        std::env::var_os("APPROVAL_GATE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let tmp = tempfile::Builder::new()
        .prefix("ag-store-ops.")
        .tempdir_in(root)?;
    // Room for every request the run files, all pending at once for `approve` and `deny`.
    let limits = Limits::default().max_pending(count + 2);
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .limits(limits)
        .open()?;
    let by = Decision::by("store-ops");
    // The store's first-time work (the audit anchor, the folders of claims), not counted.
    let first = file(&gate, "warm-up")?;
    gate.approve(first, &by)?;
    execute(&gate, first, "warm-up")?;
    gate.deny(file(&gate, "warm-up denied")?, &by)?;

    let mut items = Vec::new();
    for n in 0..count {
        let action = format!("store-ops {n}");
        let id = match op {
            Op::File => None,
            Op::Approve | Op::Deny => Some(file(&gate, &action)?),
            Op::Consume | Op::Execute => {
                let id = file(&gate, &action)?;
                gate.approve(id, &by)?;
                Some(id)
            }
        };
        items.push((action, id));
    }
    let step = |(action, id): &(String, Option<RequestId>)| once(&gate, op, action, *id, &by);

    if threads == 1 {
        handshake("ready")?;
        marker(tmp.path(), "begins");
        items.iter().try_for_each(step)?;
        marker(tmp.path(), "ends");
        return Ok(handshake("done")?);
    }
    // The threads are made before the count and end after it, each waiting at a barrier,
    // so that what is counted is the operations, not the threads' making and ending.
    let chunks: Vec<_> = items.chunks(count.div_ceil(threads)).collect();
    let [start, done, leave] = [(); 3].map(|()| Barrier::new(chunks.len() + 1));
    let ran = std::thread::scope(|scope| {
        let workers: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                scope.spawn(|| {
                    start.wait();
                    let ran = chunk.iter().try_for_each(step);
                    done.wait();
                    leave.wait();
                    ran
                })
            })
            .collect();
        let ready = handshake("ready");
        marker(tmp.path(), "begins");
        start.wait();
        done.wait();
        marker(tmp.path(), "ends");
        leave.wait();
        let ran: Vec<_> = workers
            .into_iter()
            .map(std::thread::ScopedJoinHandle::join)
            .collect();
        ready.map(|()| ran)
    })?;
    for result in ran {
        result.map_err(|_| "an operation's thread panicked")??;
    }
    Ok(handshake("done")?)
}

/// One operation, on the request `id` made for it (none for a filing).
fn once(
    gate: &Gate,
    op: Op,
    action: &str,
    id: Option<RequestId>,
    by: &Decision,
) -> Result<(), Error> {
    let id = || id.expect("a request made for the operation");
    match op {
        Op::File => file(gate, action).map(drop),
        Op::Approve => gate.approve(id(), by).map(drop),
        Op::Deny => gate.deny(id(), by).map(drop),
        Op::Consume => gate.consume::<()>(id(), &Binding::new(action)).map(drop),
        Op::Execute => execute(gate, id(), action),
    }
}

fn file(gate: &Gate, action: &str) -> Result<RequestId, Error> {
    Ok(gate
        .request_approval(NewRequest::new(action, "store-ops"))?
        .request
        .id())
}

fn execute(gate: &Gate, id: RequestId, action: &str) -> Result<(), Error> {
    gate.execute_approved(id, &Binding::new(action), |run: &Grant<()>| {
        run.assert_active()
    })
}

/// One look-up of a name that is not there, for a trace to find.
fn marker(dir: &std::path::Path, edge: &str) {
    let _absent = std::fs::symlink_metadata(dir.join(format!("strace-ops-counted-part-{edge}")));
}

/// Says `word` on stdout and waits for a line on stdin (or its end).
fn handshake(word: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{word}")?;
    out.flush()?;
    std::io::stdin().lock().read_line(&mut String::new())?;
    Ok(())
}
