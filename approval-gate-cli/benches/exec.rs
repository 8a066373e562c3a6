//! What `approval-gate exec` adds to running a command, once the approval is given.
//!
//! Each iteration files and approves a request through the library (untimed), then times
//! `approval-gate exec ID --operation OP --payload-file F -- true` from spawn to exit. The
//! same run times `true` spawned directly, `approval-gate --version` (the binary's own start
//! and exit, with no store), `approval-gate show ID` (the start, the store's open and one
//! read), and the `fdatasync` of a small file on the store's disk, since
//! an execution syncs the claim, its audit line, the start and the finish. The summary gives
//! each median and p90 and what exec adds over running the command directly.
//!
//! ```text
//! cargo bench -p approval-gate-cli --bench exec
//! ```
//!
//! The store lives in a temporary directory under `APPROVAL_GATE_BENCH_DIR` if set (the
//! system's temporary directory otherwise): put it on the disk you mean to measure.
//! `APPROVAL_GATE_BENCH_CLI` names another `approval-gate` binary to measure (an earlier build,
//! for a before-and-after in one session).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use approval_gate::{CanonicalPayload, Decision, Gate, Limits, NewRequest, RequestId};
use criterion::{Criterion, criterion_group};

fn bin() -> std::ffi::OsString {
    std::env::var_os("APPROVAL_GATE_BENCH_CLI")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_approval-gate").into())
}
const OP: &str = "smtp.send";
const PAYLOAD: &str = r#"{"amount":12.5,"subject":"Invoice 1042","to":"alice@example.com"}"#;

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("APPROVAL_GATE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

/// Every timing, by what was timed.
static TIMES: Mutex<Vec<(&'static str, Duration)>> = Mutex::new(Vec::new());

fn timed(what: &'static str, command: &mut Command) -> Duration {
    let started = Instant::now();
    let status = command.status().unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{what}: {status}");
    TIMES.lock().unwrap().push((what, took));
    took
}

fn approved(gate: &Gate) -> RequestId {
    let ask = NewRequest::new("send invoice 1042", "exec bench")
        .operation(OP)
        .payload(CanonicalPayload::from_json_text(PAYLOAD).unwrap());
    let id = gate.request_approval(ask).unwrap().request.id();
    gate.approve(id, &Decision::by("bench")).unwrap();
    id
}

fn exec_command(store: &Path, payload: &Path, id: RequestId) -> Command {
    let mut command = Command::new(bin());
    command
        .arg("--dir")
        .arg(store)
        .args(["exec", id.as_str(), "--operation", OP, "--payload-file"])
        .arg(payload)
        .args(["--", "true"])
        .env_remove("APPROVAL_GATE_LOG")
        .stdin(Stdio::null());
    command
}

fn exec(c: &mut Criterion) {
    let dir = bench_dir();
    let store: PathBuf = dir.path().join("store");
    let limits = Limits::default().max_requests(1_000_000);
    let gate = Gate::builder().dir(&store).limits(limits).open().unwrap();
    let payload = dir.path().join("payload.json");
    std::fs::write(&payload, PAYLOAD).unwrap();

    let mut group = c.benchmark_group("exec");
    let mut file = std::fs::File::create(dir.path().join("floor")).unwrap();
    group.bench_function("floor/fsync", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                file.write_all(b"0123456789abcdef\n").unwrap();
                let started = Instant::now();
                file.sync_data().unwrap();
                let took = started.elapsed();
                TIMES.lock().unwrap().push(("fsync", took));
                total += took;
            }
            total
        });
    });
    group.bench_function("direct/true", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| timed("true", Command::new("true").stdin(Stdio::null())))
                .sum()
        });
    });
    group.bench_function("binary/--version", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    timed(
                        "approval-gate --version",
                        Command::new(bin())
                            .arg("--version")
                            .stdin(Stdio::null())
                            .stdout(Stdio::null()),
                    )
                })
                .sum()
        });
    });
    // The binary's start, the store's open (with its recovery pass) and one read: what any
    // command on the store costs before it does its own work.
    let shown = approved(&gate);
    group.bench_function("binary/show", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    timed(
                        "approval-gate show",
                        Command::new(bin())
                            .arg("--dir")
                            .arg(&store)
                            .args(["show", shown.as_str(), "--json"])
                            .stdin(Stdio::null())
                            .stdout(Stdio::null()),
                    )
                })
                .sum()
        });
    });
    group.bench_function("exec/true", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let id = approved(&gate);
                    timed("exec -- true", &mut exec_command(&store, &payload, id))
                })
                .sum()
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = exec
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn report() {
    let times = TIMES.lock().unwrap().clone();
    let mut medians = Vec::new();
    for what in [
        "fsync",
        "true",
        "approval-gate --version",
        "approval-gate show",
        "exec -- true",
    ] {
        let mut at: Vec<Duration> = times
            .iter()
            .filter(|(w, _)| *w == what)
            .map(|(_, d)| *d)
            .collect();
        if at.is_empty() {
            return;
        }
        at.sort_unstable();
        let (p50, p90) = (percentile(&at, 50), percentile(&at, 90));
        eprintln!(
            "{what}: p50 {:.0} µs, p90 {:.0} µs over {} runs",
            p50.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            at.len()
        );
        medians.push(p50);
    }
    let added = medians[4].saturating_sub(medians[1]);
    eprintln!(
        "exec adds {:.0} µs (p50) over running the command directly ({:.1}× the fsync median)",
        added.as_secs_f64() * 1e6,
        added.as_secs_f64() / medians[0].as_secs_f64()
    );
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
