//! How long a human's decision, made in another process, takes to reach a pending
//! `wait_for_approval`.
//!
//! Each iteration files a request, starts `wait_for_approval` on a running
//! `approval-gate-mcp` (over stdio, with rmcp's client), waits until the wait reports
//! progress (it is then watching), and has a separate process decide the request. Criterion
//! times from starting that process to the wait's answer arriving here (process start-up and
//! the decision's fsyncs included); the summary gives the answer's arrival relative to the
//! decision being durable (the deciding process reads the clock right after the library's
//! `approve` returned, everything fsynced), negative when the answer came first, as it
//! usually does: a decision is visible once its record is renamed into place, before its
//! audit line is made durable. The Node predecessor polled every 5 s, about 2.5 s on average.
//!
//! ```text
//! cargo bench -p approval-gate-mcp --bench wait_latency
//! ```
//!
//! The deciding process is this benchmark binary run again as a helper (the human CLI's
//! `approve` needs a terminal and a typed confirmation). To decide with the human CLI's
//! `deny` instead, set `APPROVAL_GATE_BENCH_CLI` to the `approval-gate` binary; the time then
//! runs from spawning it, so it includes the CLI's start-up.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use approval_gate::{Decision, Gate, NewRequest, RequestId};
use criterion::{Criterion, criterion_group};
use rmcp::model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Set (to `<store>\n<id>`) when this binary runs as the deciding human.
const DECIDE_ENV: &str = "APPROVAL_GATE_BENCH_DECIDE";
/// The human CLI, to decide with `approval-gate deny` instead of the library helper.
const CLI_ENV: &str = "APPROVAL_GATE_BENCH_CLI";

#[derive(Clone)]
struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

fn unix_nanos(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// The helper: approve, then report when the approval was durable.
fn decide(task: &str) {
    let (store, id) = task.split_once('\n').expect("store and id");
    let gate = Gate::open(store).unwrap();
    let id: RequestId = id.parse().unwrap();
    gate.approve(id, &Decision::by("bench")).unwrap();
    let durable = SystemTime::now();
    // The parent reads this line from the helper's stdout.
    std::io::Write::write_all(
        &mut std::io::stdout(),
        format!("{}\n", unix_nanos(durable)).as_bytes(),
    )
    .unwrap();
}

/// Runs the decision in another process; returns when it became durable (or, with the CLI,
/// when the CLI was started).
fn decide_elsewhere(store: &Path, id: RequestId) -> SystemTime {
    if let Some(cli) = std::env::var_os(CLI_ENV) {
        let started = SystemTime::now();
        let status = Command::new(cli)
            .env("APPROVAL_GATE_DIR", store)
            .args(["deny", id.as_str(), "benchmark"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "approval-gate deny failed: {status}");
        return started;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .env(DECIDE_ENV, format!("{}\n{id}", store.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "the deciding helper failed");
    let nanos: u64 = String::from_utf8(output.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

struct Bench {
    runtime: tokio::runtime::Runtime,
    client: RunningService<RoleClient, Client>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    gate: Gate,
    store: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let gate = Gate::open(&store).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (tx, progress) = mpsc::unbounded_channel();
        let client = runtime.block_on(async {
            let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_approval-gate-mcp"));
            command
                .env("APPROVAL_GATE_DIR", &store)
                .env_remove("APPROVAL_GATE_LOG");
            let transport = TokioChildProcess::new(command).unwrap();
            Client { progress: tx }.serve(transport).await.unwrap()
        });
        Self {
            runtime,
            client,
            progress,
            gate,
            store,
            _dir: dir,
        }
    }

    /// One decision: from starting the deciding process to the answer, and the answer's
    /// arrival relative to the decision being durable.
    fn once(&mut self) -> (Duration, i128) {
        let id = self
            .gate
            .request_approval(NewRequest::new("bench action", "latency"))
            .unwrap()
            .request
            .id();
        let Value::Object(arguments) = json!({ "id": id.to_string(), "timeoutSeconds": 60 }) else {
            unreachable!()
        };
        let params = CallToolRequestParams::new("wait_for_approval").with_arguments(arguments);
        self.runtime.block_on(async {
            let handle = self
                .client
                .peer()
                .send_cancellable_request(
                    ClientRequest::CallToolRequest(Request::new(params)),
                    PeerRequestOptions::no_options(),
                )
                .await
                .unwrap();
            // The wait reports progress once it is watching the request.
            loop {
                let progress = self.progress.recv().await.unwrap();
                if progress.progress_token == handle.progress_token {
                    break;
                }
            }
            let store = self.store.clone();
            let spawned = SystemTime::now();
            let decide = tokio::task::spawn_blocking(move || decide_elsewhere(&store, id));
            // The answer's arrival is taken as it happens, not after the helper has exited:
            // the wait usually answers before the decision's audit line is durable.
            let answered = async {
                handle.await_response().await.unwrap();
                SystemTime::now()
            };
            let (durable, answered) = tokio::join!(async { decide.await.unwrap() }, answered);
            let nanos = |time: SystemTime| i128::try_from(unix_nanos(time)).unwrap();
            (
                answered.duration_since(spawned).unwrap_or_default(),
                nanos(answered) - nanos(durable),
            )
        })
    }
}

/// Per decision: how far the answer arrived after the decision became durable (signed
/// nanoseconds: negative when it arrived before the deciding process's `approve` returned).
static LATENCIES: Mutex<Vec<i128>> = Mutex::new(Vec::new());

fn wait_latency(c: &mut Criterion) {
    let mut bench = Bench::start();
    c.bench_function("decision_to_wait_answer", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let (latency, after_durable) = bench.once();
                LATENCIES.lock().unwrap().push(after_durable);
                total += latency;
            }
            total
        });
    });
    bench
        .runtime
        .block_on(async { bench.client.cancel().await.unwrap() });
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
    let mut latencies = LATENCIES.lock().unwrap().clone();
    if latencies.is_empty() {
        return;
    }
    latencies.sort_unstable();
    let at = |percent: usize| {
        let nanos = latencies[(latencies.len() - 1) * percent / 100];
        format!("{} µs", nanos / 1000)
    };
    let from = if std::env::var_os(CLI_ENV).is_some() {
        "`approval-gate deny` started"
    } else {
        "decision durable"
    };
    eprintln!(
        "wait answer relative to {from}, over {} decisions: min {}, median {}, p95 {}, max {} \
         (the Node predecessor polled every 5 s: about 2.5 s on average)",
        latencies.len(),
        at(0),
        at(50),
        at(95),
        at(100),
    );
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
