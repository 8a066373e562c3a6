//! How long a human's decision, made in another process, takes to end a library wait.
//!
//! `cargo bench -p approval-gate --bench wait`. Results are in `docs/benchmarks.md`.
//!
//! Each iteration files a request, starts a helper process (this benchmark binary run again)
//! that approves it a moment later, and waits with [`Watch::wait_for_decision`] (blocking) or
//! [`Watch::wait_for_decision_async`] (on a tokio current-thread runtime). The time measured
//! runs from the helper calling the library's `approve` to the wait returning here. The
//! summary also gives the wait's return relative to `approve` returning (everything
//! fsynced), the instant `approval-gate-mcp`'s `wait_latency` measures from: negative when
//! the wait saw the decision before its audit line was durable, which is usual, since the
//! decision is visible once its record is renamed into place.
#![allow(missing_docs)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use approval_gate::{Decision, EffectiveStatus, Gate, NewRequest, RequestId, Waited, Watch};
use criterion::{Criterion, criterion_group};

/// Set (to `<store>\n<id>`) when this binary runs as the deciding human.
const DECIDE_ENV: &str = "APPROVAL_GATE_BENCH_DECIDE";
/// The helper decides this long after starting, so the wait is blocked by then.
const DECIDE_AFTER: Duration = Duration::from_millis(20);

fn unix_nanos(time: SystemTime) -> u64 {
    u64::try_from(time.duration_since(UNIX_EPOCH).unwrap().as_nanos()).unwrap()
}

/// The helper: approve, then report when the approval was durable.
fn decide(task: &str) {
    let (store, id) = task.split_once('\n').expect("store and id");
    let gate = Gate::open(store).unwrap();
    let id: RequestId = id.parse().unwrap();
    std::thread::sleep(DECIDE_AFTER);
    let called = unix_nanos(SystemTime::now());
    gate.approve(id, &Decision::by("bench")).unwrap();
    let durable = unix_nanos(SystemTime::now());
    // The parent reads this line from the helper's stdout.
    std::io::stdout()
        .write_all(format!("{called} {durable}\n").as_bytes())
        .unwrap();
}

#[derive(Clone, Copy)]
enum Form {
    Blocking,
    Async,
}

struct Bench {
    gate: Gate,
    watch: Watch,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn start() -> Self {
        let root = std::env::var_os("APPROVAL_GATE_BENCH_DIR")
            .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
        let dir = tempfile::tempdir_in(root).unwrap();
        let gate = Gate::open(dir.path().join("store")).unwrap();
        let watch = gate.watch();
        assert_eq!(
            watch.polling(),
            None,
            "no file watcher: the figure would be the fallback's"
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Self {
            gate,
            watch,
            runtime,
            _dir: dir,
        }
    }

    /// One decision: from `approve` called to the wait's return, and the wait's return
    /// relative to `approve` returning (signed nanoseconds).
    fn once(&self, form: Form) -> (Duration, i128) {
        let gate = &self.gate;
        let id = gate
            .request_approval(NewRequest::new("bench action", "latency"))
            .unwrap()
            .request
            .id();
        let helper = Command::new(std::env::current_exe().unwrap())
            .env(DECIDE_ENV, format!("{}\n{id}", gate.location()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let timeout = Duration::from_secs(60);
        let waited = match form {
            Form::Blocking => self.watch.wait_for_decision(id, timeout),
            Form::Async => self
                .runtime
                .block_on(self.watch.wait_for_decision_async(id, timeout)),
        };
        let returned = SystemTime::now();
        let Ok(Waited::Decided(report)) = waited else {
            panic!("the wait did not see the decision: {waited:?}");
        };
        assert_eq!(
            report.effective_status(),
            EffectiveStatus::ApprovedUnconsumed
        );
        let output = helper.wait_with_output().unwrap();
        assert!(output.status.success(), "the deciding helper failed");
        let stamps = String::from_utf8(output.stdout).unwrap();
        let (called, durable) = stamps.trim().split_once(' ').unwrap();
        let (called, durable): (u64, u64) = (called.parse().unwrap(), durable.parse().unwrap());
        let returned = unix_nanos(returned);
        (
            Duration::from_nanos(returned.saturating_sub(called)),
            i128::from(returned) - i128::from(durable),
        )
    }
}

/// Per decision: the bench, the latency from `approve` called, the offset from it returning.
static LATENCIES: Mutex<Vec<(&str, Duration, i128)>> = Mutex::new(Vec::new());

fn wait_latency(c: &mut Criterion) {
    let bench = Bench::start();
    for (name, form) in [
        ("decision_to_wait_return", Form::Blocking),
        ("decision_to_async_wait_return", Form::Async),
    ] {
        c.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (latency, after_durable) = bench.once(form);
                    LATENCIES
                        .lock()
                        .unwrap()
                        .push((name, latency, after_durable));
                    total += latency;
                }
                total
            });
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = wait_latency
}

fn report() {
    let all = LATENCIES.lock().unwrap().clone();
    for name in ["decision_to_wait_return", "decision_to_async_wait_return"] {
        let mut latencies: Vec<Duration> = all
            .iter()
            .filter(|(n, ..)| *n == name)
            .map(|(_, d, _)| *d)
            .collect();
        let mut offsets: Vec<i128> = all
            .iter()
            .filter(|(n, ..)| *n == name)
            .map(|(.., o)| *o)
            .collect();
        if latencies.is_empty() {
            continue;
        }
        latencies.sort();
        offsets.sort_unstable();
        let at = |percent: usize| (latencies.len() - 1) * percent / 100;
        let micros = |nanos: i128| format!("{} µs", nanos / 1000);
        eprintln!(
            "{name} over {} decisions: from `approve` called: min {:?}, median {:?}, p95 {:?}, \
             max {:?}; relative to `approve` returned: min {}, median {}, p95 {}, max {}",
            latencies.len(),
            latencies[at(0)],
            latencies[at(50)],
            latencies[at(95)],
            latencies[at(100)],
            micros(offsets[at(0)]),
            micros(offsets[at(50)]),
            micros(offsets[at(95)]),
            micros(offsets[at(100)]),
        );
    }
}

fn main() {
    if let Ok(task) = std::env::var(DECIDE_ENV) {
        decide(&task);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
