//! A durable `request_approval` through the MCP server, at 0, 100 and 1,000 pending
//! requests, against this machine's fsync floor in the same run.
//!
//! One `approval-gate-mcp` per queue length serves a directory store already holding that
//! many pending requests (the caps raised to let them in). Each iteration files one request
//! over stdio with rmcp's client and times the call from sending it to its answer; the
//! request is then denied through the library, untimed, so the queue stays at its length.
//! The summary gives the median and p90 of every filing, and each as a multiple of the
//! median `fdatasync` of a small file on the same disk, appended to (its length, so its
//! metadata, changes each time) and, beside it, overwritten in place (the journal's kind of
//! sync: nothing but the data changes); and the median time to create a file there, which on
//! some disks costs more than an fsync.
//!
//! ```text
//! cargo bench -p approval-gate-mcp --bench filing
//! ```
//!
//! Then filers at once: 1 and 16 `request_approval` calls sent together over one session
//! to one server (at 0 pending), the time from sending them to the last answer, and the rate
//! each gives; the target of group commit is 16 at once filing at least 4 times the rate of
//! one.
//!
//! The store lives in a temporary directory under `APPROVAL_GATE_BENCH_DIR` if set (the
//! system's temporary directory otherwise): put it on the disk you mean to measure.
//! `APPROVAL_GATE_BENCH_MCP` names another server binary to measure (an earlier build, for a
//! before-and-after in one run).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use approval_gate::{Decision, Gate, Limits, NewRequest, RequestId};
use criterion::{BenchmarkId, Criterion, criterion_group};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// Filers at once.
const AT_ONCE: [usize; 2] = [1, 16];
/// Queue lengths filed at.
const PENDING: [usize; 3] = [0, 100, 1_000];
/// Caps high enough for the longest queue and every request a run files.
const MAX_PENDING: usize = 2_000;
const MAX_REQUESTS: usize = 1_000_000;
/// Files created for the floor of file creation.
const CREATED_FILES: usize = 2_000;

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("APPROVAL_GATE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

struct Server {
    runtime: tokio::runtime::Runtime,
    client: RunningService<RoleClient, ()>,
    gate: Gate,
    filed: usize,
    dir: tempfile::TempDir,
}

impl Server {
    fn start(pending: usize) -> Self {
        let dir = bench_dir();
        let store: PathBuf = dir.path().join("store");
        let limits = Limits::default()
            .max_pending(MAX_PENDING)
            .max_requests(MAX_REQUESTS);
        let gate = Gate::builder().dir(&store).limits(limits).open().unwrap();
        for n in 0..pending {
            gate.request_approval(NewRequest::new(format!("queued {n}"), "filing bench"))
                .unwrap();
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(async {
            let server = std::env::var_os("APPROVAL_GATE_BENCH_MCP")
                .unwrap_or_else(|| env!("CARGO_BIN_EXE_approval-gate-mcp").into());
            let mut command = tokio::process::Command::new(server);
            command
                .env("APPROVAL_GATE_DIR", &store)
                .env("APPROVAL_GATE_MAX_PENDING", MAX_PENDING.to_string())
                .env("APPROVAL_GATE_MAX_REQUESTS", MAX_REQUESTS.to_string())
                .env_remove("APPROVAL_GATE_LOG");
            let transport = TokioChildProcess::new(command).unwrap();
            ().serve(transport).await.unwrap()
        });
        Self {
            runtime,
            client,
            gate,
            filed: 0,
            dir,
        }
    }

    /// Files one request over MCP; the time from sending the call to its answer.
    fn file(&mut self) -> (Duration, RequestId) {
        self.filed += 1;
        let Value::Object(arguments) = json!({
            "action": format!("filed {}", self.filed),
            "reason": "filing bench",
        }) else {
            unreachable!()
        };
        let params = CallToolRequestParams::new("request_approval").with_arguments(arguments);
        let started = Instant::now();
        let result = self
            .runtime
            .block_on(self.client.peer().call_tool(params))
            .unwrap();
        let took = started.elapsed();
        assert_ne!(result.is_error, Some(true), "filing failed: {result:?}");
        let answer = result.structured_content.expect("structured answer");
        let id = answer["id"].as_str().expect("an id").parse().unwrap();
        (took, id)
    }

    /// Files `n` requests over MCP at once; the time from sending them to the last answer.
    fn file_at_once(&mut self, n: usize) -> (Duration, Vec<RequestId>) {
        let calls: Vec<_> = (0..n)
            .map(|_| {
                self.filed += 1;
                let Value::Object(arguments) = json!({
                    "action": format!("filed {}", self.filed),
                    "reason": "filing bench, at once",
                }) else {
                    unreachable!()
                };
                CallToolRequestParams::new("request_approval").with_arguments(arguments)
            })
            .collect();
        let peer = self.client.peer().clone();
        let started = Instant::now();
        let results = self
            .runtime
            .block_on(futures_util::future::join_all(calls.into_iter().map(
                |params| {
                    let peer = peer.clone();
                    async move { peer.call_tool(params).await }
                },
            )));
        let took = started.elapsed();
        let ids = results
            .into_iter()
            .map(|result| {
                let result = result.unwrap();
                assert_ne!(result.is_error, Some(true), "filing failed: {result:?}");
                let answer = result.structured_content.expect("structured answer");
                answer["id"].as_str().expect("an id").parse().unwrap()
            })
            .collect();
        (took, ids)
    }

    /// Stops the server; its store is handed back, to be removed only once every run is
    /// done (removing thousands of files frees as many inodes, which on ext4 without a
    /// journal slow the file creations of the next run for half a minute).
    fn stop(self) -> tempfile::TempDir {
        self.runtime
            .block_on(async { self.client.cancel().await.unwrap() });
        self.dir
    }
}

/// Every filing's time, by queue length.
static TIMES: Mutex<Vec<(usize, Duration)>> = Mutex::new(Vec::new());
/// Every batch's time, by filers at once.
static BATCHES: Mutex<Vec<(usize, Duration)>> = Mutex::new(Vec::new());
/// Every `fdatasync` timed for the floor.
static FLOOR: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
/// Every `fdatasync` of an overwrite (a file whose length does not change) timed for the floor.
static OVERWRITE_FLOOR: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
/// Every file creation timed for the floor.
static CREATES: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

fn filing(c: &mut Criterion) {
    let mut group = c.benchmark_group("filing");
    let floor_dir = bench_dir();
    let file = std::fs::File::create(floor_dir.path().join("floor")).unwrap();
    group.bench_function("floor/fsync", |b| {
        b.iter_custom(|iterations| {
            timed_syncs(iterations, &FLOOR, &file, |file| {
                (&*file).write_all(b"0123456789abcdef\n").unwrap();
            })
        });
    });
    // The journal's own kind of sync: blocks already written, overwritten, so that the
    // file's length (its metadata) does not change.
    let overwritten = std::fs::File::create(floor_dir.path().join("overwritten")).unwrap();
    group.bench_function("floor/fsync_overwrite", |b| {
        b.iter_custom(|iterations| {
            timed_syncs(iterations, &OVERWRITE_FLOOR, &overwritten, |file| {
                std::os::unix::fs::FileExt::write_all_at(file, b"0123456789abcdef\n", 0).unwrap();
            })
        });
    });
    let mut stores = Vec::new();
    for pending in PENDING {
        let mut server = Server::start(pending);
        group.bench_with_input(
            BenchmarkId::new("mcp_request_approval", pending),
            &pending,
            |b, &pending| {
                b.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let (took, id) = server.file();
                        TIMES.lock().unwrap().push((pending, took));
                        total += took;
                        server.gate.deny(id, &Decision::by("bench")).unwrap();
                    }
                    total
                });
            },
        );
        stores.push(server.stop());
    }
    for n in AT_ONCE {
        let mut server = Server::start(0);
        group.throughput(criterion::Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("mcp_filers_at_once", n), &n, |b, &n| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (took, ids) = server.file_at_once(n);
                    BATCHES.lock().unwrap().push((n, took));
                    total += took;
                    for id in ids {
                        server.gate.deny(id, &Decision::by("bench")).unwrap();
                    }
                }
                total
            });
        });
        stores.push(server.stop());
    }
    // Creating a file costs more than an fsync on some disks (on this machine's, from 15 µs
    // to 0.9 ms depending on where the directory's inodes are allocated), and a filing
    // creates one (its record's temporary file). A fixed number, timed one by one after the
    // servers have run: criterion would make a few hundred thousand on a fast disk, whose
    // removal at the end frees as many inodes, and on ext4 without a journal each inode freed
    // in the last half minute slows every creation after it (the next run's filings too).
    let created = floor_dir.path().join("created");
    std::fs::create_dir(&created).unwrap();
    for n in 0..CREATED_FILES {
        let path = created.join(n.to_string());
        let started = Instant::now();
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap(),
        );
        CREATES.lock().unwrap().push(started.elapsed());
    }
    group.finish();
    drop(stores);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = filing
}

/// `iterations` times: `write` to `file` (untimed), then its `fdatasync`, timed into `into`.
fn timed_syncs(
    iterations: u64,
    into: &Mutex<Vec<Duration>>,
    file: &std::fs::File,
    write: impl Fn(&std::fs::File),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        write(file);
        let started = Instant::now();
        file.sync_data().unwrap();
        let took = started.elapsed();
        into.lock().unwrap().push(took);
        total += took;
    }
    total
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn report() {
    let mut floor = FLOOR.lock().unwrap().clone();
    if floor.is_empty() {
        return;
    }
    floor.sort_unstable();
    let fsync = percentile(&floor, 50);
    eprintln!(
        "floor: fdatasync median {:.0} µs over {} syncs",
        fsync.as_secs_f64() * 1e6,
        floor.len()
    );
    let mut overwrite = OVERWRITE_FLOOR.lock().unwrap().clone();
    overwrite.sort_unstable();
    let overwrite = (!overwrite.is_empty()).then(|| {
        let median = percentile(&overwrite, 50);
        eprintln!(
            "floor: fdatasync of an overwrite median {:.0} µs over {} syncs",
            median.as_secs_f64() * 1e6,
            overwrite.len()
        );
        median
    });
    let mut creates = CREATES.lock().unwrap().clone();
    creates.sort_unstable();
    if !creates.is_empty() {
        eprintln!(
            "floor: file creation median {:.0} µs over {} files",
            percentile(&creates, 50).as_secs_f64() * 1e6,
            creates.len()
        );
    }
    report_at_once(fsync);
    let times = TIMES.lock().unwrap().clone();
    for pending in PENDING {
        let mut at: Vec<Duration> = times
            .iter()
            .filter(|(p, _)| *p == pending)
            .map(|(_, d)| *d)
            .collect();
        if at.is_empty() {
            continue;
        }
        at.sort_unstable();
        let (p50, p90) = (percentile(&at, 50), percentile(&at, 90));
        eprintln!(
            "request_approval over MCP at {pending} pending, {} filings: p50 {:.0} µs ({:.1}× fsync), p90 {:.0} µs ({:.1}× fsync)",
            at.len(),
            p50.as_secs_f64() * 1e6,
            p50.as_secs_f64() / fsync.as_secs_f64(),
            p90.as_secs_f64() * 1e6,
            p90.as_secs_f64() / fsync.as_secs_f64(),
        );
        if let Some(overwrite) = overwrite {
            eprintln!(
                "  against the overwrite floor: p50 {:.1}×",
                p50.as_secs_f64() / overwrite.as_secs_f64()
            );
        }
    }
}

/// The rate of each number of filers at once, from its median batch, and 16's against 1's.
fn report_at_once(fsync: Duration) {
    let batches = BATCHES.lock().unwrap().clone();
    let mut rates = Vec::new();
    for n in AT_ONCE {
        let mut at: Vec<Duration> = batches
            .iter()
            .filter(|(k, _)| *k == n)
            .map(|(_, d)| *d)
            .collect();
        if at.is_empty() {
            continue;
        }
        at.sort_unstable();
        let p50 = percentile(&at, 50);
        let rate = f64::from(u32::try_from(n).unwrap_or(u32::MAX)) / p50.as_secs_f64();
        eprintln!(
            "{n} filers at once over one MCP session, {} batches: median batch {:.0} µs ({:.1}× fsync), {rate:.0} filings/s",
            at.len(),
            p50.as_secs_f64() * 1e6,
            p50.as_secs_f64() / fsync.as_secs_f64(),
        );
        rates.push(rate);
    }
    if let [one, many] = rates[..] {
        eprintln!(
            "{} at once file {:.2}× the rate of one",
            AT_ONCE[1],
            many / one
        );
    }
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
