//! `approval-gate-mcp` cold start: from spawning the binary to its answer to `initialize`,
//! next to the floor of spawning a process that does nothing (`true`), and the server's peak
//! memory (`VmHWM`) once it has answered.
//!
//! ```text
//! cargo bench -p approval-gate-mcp --bench cold_start
//! APPROVAL_GATE_BENCH_MCP=<another build's approval-gate-mcp> cargo bench -p approval-gate-mcp --bench cold_start
//! ```
//!
//! `APPROVAL_GATE_BENCH_MCP` times another build of the server (an older commit's, say) in the
//! same session, so two builds are compared on the same machine state.
#![allow(missing_docs, clippy::print_stderr)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

/// Highest peak resident set seen, in KiB.
static PEAK_KIB: Mutex<u64> = Mutex::new(0);

fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One cold start: spawn, send `initialize`, read the answer, note the peak memory, close.
fn start_once(store: &std::path::Path) -> Duration {
    let begin = Instant::now();
    let binary = std::env::var_os("APPROVAL_GATE_BENCH_MCP")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_approval-gate-mcp").into());
    let mut child = Command::new(binary)
        .env("APPROVAL_GATE_DIR", store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn approval-gate-mcp");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INITIALIZE}").unwrap();
    let mut answer = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    let elapsed = begin.elapsed();
    assert!(
        answer.contains("\"serverInfo\""),
        "not an initialize answer: {answer}"
    );
    if let Some(kib) = peak_kib(child.id()) {
        let mut peak = PEAK_KIB.lock().unwrap();
        *peak = (*peak).max(kib);
    }
    drop(stdin);
    child.wait().unwrap();
    elapsed
}

fn cold_start(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut group = c.benchmark_group("cold_start");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("floor_spawn_true", |b| {
        b.iter(|| Command::new("true").status().unwrap());
    });
    group.bench_function("initialize_answered", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| start_once(&store)).sum());
    });
    group.finish();
}

criterion_group!(benches, cold_start);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    eprintln!(
        "approval-gate-mcp peak memory after initialize (VmHWM): {} KiB",
        PEAK_KIB.lock().unwrap()
    );
}
