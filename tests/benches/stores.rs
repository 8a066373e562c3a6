//! The directory store and the PostgreSQL store side by side, in one run (issue 11).
//!
//! `cargo bench -p approval-gate-tests --bench stores`. Results and the machine they came from
//! are in `docs/benchmarks.md`.
//!
//! The PostgreSQL store runs on a private cluster on a free loopback port
//! ([`Cluster::start`]), durable (fsync and synchronous commits on, as PostgreSQL ships), so
//! that both stores make every step durable before it returns. The directory store goes in
//! `APPROVAL_GATE_BENCH_DIR` if set, else the system temp dir. Each group below gets a store
//! of each kind of its own; the queue caps are raised so that they never bite.
//!
//! - `floor/*`: what neither store can beat, same run: one `fdatasync` of a small file next to
//!   the directory store; one durable commit of a one-row insert, and one `SELECT 1` round
//!   trip, on the PostgreSQL cluster (prepared once, as the best a client can do).
//! - `execute_approved/{dir,postgres}`: one `execute_approved` of a request filed and
//!   approved just before (untimed).
//! - `cycles/{dir,postgres}/{1,4,16}`: whole request → approve → consume cycles from 1, 4 and
//!   16 threads, each with a `Gate` of its own (its own connections or file descriptors);
//!   timed from the first thread's start to the last one's end, so criterion's throughput is
//!   cycles per second.
//! - `decision_latency/{dir,postgres}`: a thread waits on a request with a `Watch` started
//!   once per store (inotify for the directory store, LISTEN/NOTIFY for PostgreSQL); about
//!   10 ms later another `Gate` approves it. Timed from just before `approve` is called to
//!   the wait's return.
//!
//! Criterion's figures are means over its samples; the summary printed to stderr at the end
//! gives the percentiles of the single operations (every timed one, warm-up included), each
//! cycles iteration's rate, and whether the two targets were met (PostgreSQL at 16
//! clients at least 5× the directory store; decision latency p50 at most 5 ms).
#![allow(missing_docs)]

use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use approval_gate::{
    Binding, Decision, EffectiveStatus, Error, Gate, Grant, Limits, Location, NewRequest,
    RequestId, Waited, Watch,
};
use approval_gate_tests::pg::{Cluster, connect, run_sql};
use criterion::{Criterion, SamplingMode, Throughput};

/// Client counts of the `cycles` group.
const CLIENTS: [usize; 3] = [1, 4, 16];
/// How long the waiter is left blocked before the decision.
const BLOCKED_FOR: Duration = Duration::from_millis(10);
/// Longest wait for a decision: a wait that needs it has failed.
const WAIT_AT_MOST: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    Postgres,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Dir => "dir",
            Self::Postgres => "postgres",
        }
    }

    /// Cycles per client and iteration of the `cycles` group, so that an iteration takes
    /// roughly 0.2–1 s on the machine of `docs/benchmarks.md`.
    fn cycles_per_client(self, clients: usize) -> usize {
        match (self, clients) {
            (_, 1) => 40,
            (Self::Dir, 4) => 15,
            (Self::Dir, _) => 4,
            (Self::Postgres, 4) => 20,
            (Self::Postgres, _) => 6,
        }
    }
}

/// One store of one group.
struct Store {
    kind: Kind,
    location: Location,
    /// The temporary directory holding a directory store.
    root: Option<tempfile::TempDir>,
}

impl Store {
    /// Both kinds, each new, for the group `group`.
    fn both(cluster: &Cluster, group: &str) -> [Self; 2] {
        [Self::dir(), Self::postgres(cluster, group)]
    }

    fn dir() -> Self {
        let root = std::env::var_os("APPROVAL_GATE_BENCH_DIR")
            .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
        let dir = tempfile::tempdir_in(root).unwrap();
        Self {
            kind: Kind::Dir,
            location: Location::Dir(dir.path().join("gate")),
            root: Some(dir),
        }
    }

    /// A new database on the cluster, with the schema.
    fn postgres(cluster: &Cluster, group: &str) -> Self {
        let admin = cluster.url();
        let database = format!("bench_{group}");
        run_sql(admin, &format!("CREATE DATABASE {database}"));
        let (server, _) = admin.rsplit_once('/').expect("a URL ending in /database");
        let url = format!("{server}/{database}");
        // The database holds the store's caps itself: raised so that they never bite.
        let caps = Limits::default()
            .max_pending(1_000_000)
            .max_requests(1_000_000);
        approval_gate::postgres::init_with_limits(&url, &caps).unwrap();
        Self {
            kind: Kind::Postgres,
            location: Location::parse(&url).unwrap(),
            root: None,
        }
    }

    /// A gate of its own on this store: its own connections or file descriptors.
    fn open(&self) -> Gate {
        Gate::builder()
            .store(self.location.clone())
            .limits(
                Limits::default()
                    .max_pending(1_000_000)
                    .max_requests(1_000_000),
            )
            .open()
            .unwrap()
    }

    fn name(&self) -> &'static str {
        self.kind.name()
    }
}

/// A new action text, never used before in this run: no request is ever deduplicated.
fn unique_action(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{what} {}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn file(gate: &Gate, action: &str) -> RequestId {
    gate.request_approval(NewRequest::new(action, "bench"))
        .unwrap()
        .request
        .id()
}

/// Every timed operation: the bench's name, and how long it took.
static SAMPLES: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());
/// Every `cycles` iteration: the bench's name, and its cycles per second.
static RATES: Mutex<Vec<(String, f64)>> = Mutex::new(Vec::new());
/// Every decision: the bench's name, and when the wait returned relative to `approve`
/// returning, in signed nanoseconds.
static OFFSETS: Mutex<Vec<(String, i128)>> = Mutex::new(Vec::new());

fn floors(c: &mut Criterion, cluster: &Cluster) {
    let mut group = c.benchmark_group("floor");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    let dir = Store::dir();
    let root = dir.root.as_ref().expect("a directory store has a root");
    let file = std::fs::File::create(root.path().join("floor")).unwrap();
    group.bench_function("fsync", |b| {
        b.iter(|| {
            file.write_all_at(b"x", 0).unwrap();
            file.sync_data().unwrap();
        });
    });
    let admin = cluster.url();
    run_sql(admin, "CREATE DATABASE bench_floor");
    let (server, _) = admin.rsplit_once('/').expect("a URL ending in /database");
    let mut client = connect(&format!("{server}/bench_floor"));
    client.batch_execute("CREATE TABLE floor (x int)").unwrap();
    let insert = client.prepare("INSERT INTO floor VALUES ($1)").unwrap();
    let one = client.prepare("SELECT 1").unwrap();
    group.bench_function("postgres_commit", |b| {
        b.iter(|| client.execute(&insert, &[&1_i32]).unwrap());
    });
    group.bench_function("postgres_round_trip", |b| {
        b.iter(|| client.query_one(&one, &[]).unwrap());
    });
    group.finish();
}

fn execute_approved(c: &mut Criterion, cluster: &Cluster) {
    let mut group = c.benchmark_group("execute_approved");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for store in Store::both(cluster, "execute") {
        let gate = store.open();
        let name = format!("execute_approved/{}", store.name());
        group.bench_function(store.name(), |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let action = unique_action("execute");
                    let id = file(&gate, &action);
                    gate.approve(id, &Decision::by("bench")).unwrap();
                    let binding = Binding::new(action);
                    let start = Instant::now();
                    gate.execute_approved(id, &binding, |_grant: &Grant<serde_json::Value>| {
                        Ok::<_, Error>(())
                    })
                    .unwrap();
                    let took = start.elapsed();
                    SAMPLES.lock().unwrap().push((name.clone(), took));
                    total += took;
                }
                total
            });
        });
    }
    group.finish();
}

/// One client's share of a `cycles` iteration.
fn cycle(gate: &Gate, count: usize) {
    for _ in 0..count {
        let action = unique_action("cycle");
        let id = file(gate, &action);
        gate.approve(id, &Decision::by("bench")).unwrap();
        let _grant = gate
            .consume::<serde_json::Value>(id, &Binding::new(action))
            .unwrap();
    }
}

fn cycles(c: &mut Criterion, cluster: &Cluster) {
    let mut group = c.benchmark_group("cycles");
    // One iteration lasts long enough that every sample is one iteration.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for store in Store::both(cluster, "cycles") {
        for clients in CLIENTS {
            let gates: Vec<Gate> = (0..clients).map(|_| store.open()).collect();
            let per_client = store.kind.cycles_per_client(clients);
            let total_cycles = u32::try_from(clients * per_client).unwrap();
            let name = format!("cycles/{}/{clients}", store.name());
            group.throughput(Throughput::Elements(u64::from(total_cycles)));
            group.bench_function(format!("{}/{clients}", store.name()), |b| {
                b.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let start = Instant::now();
                        std::thread::scope(|scope| {
                            for gate in &gates {
                                scope.spawn(move || cycle(gate, per_client));
                            }
                        });
                        let took = start.elapsed();
                        RATES
                            .lock()
                            .unwrap()
                            .push((name.clone(), f64::from(total_cycles) / took.as_secs_f64()));
                        total += took;
                    }
                    total
                });
            });
        }
    }
    group.finish();
}

/// One decision: file, wait in another thread, approve from `decider`. From `approve` called
/// to the wait's return, and that return relative to `approve` returning (signed nanoseconds).
fn decide_once(filer: &Gate, decider: &Gate, watch: &Watch) -> (Duration, i128) {
    let id = file(filer, &unique_action("decide"));
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            let waited = watch.wait_for_decision(id, WAIT_AT_MOST);
            (waited, Instant::now())
        });
        std::thread::sleep(BLOCKED_FOR);
        let called = Instant::now();
        decider.approve(id, &Decision::by("bench")).unwrap();
        let approved = Instant::now();
        let (waited, returned) = waiting.join().unwrap();
        match waited {
            Ok(Waited::Decided(report)) => assert_eq!(
                report.effective_status(),
                EffectiveStatus::ApprovedUnconsumed
            ),
            other => panic!("the wait did not see the decision: {other:?}"),
        }
        let latency = returned
            .checked_duration_since(called)
            .expect("a wait cannot see a decision before it is made");
        let offset = match returned.checked_duration_since(approved) {
            Some(after) => i128::try_from(after.as_nanos()).unwrap(),
            None => -i128::try_from(approved.duration_since(returned).as_nanos()).unwrap(),
        };
        (latency, offset)
    })
}

fn decision_latency(c: &mut Criterion, cluster: &Cluster) {
    let mut group = c.benchmark_group("decision_latency");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for store in Store::both(cluster, "decision") {
        // The waiting side files; the deciding side is another gate, on connections of its own.
        let filer = store.open();
        let decider = store.open();
        let watch = filer.watch();
        assert_eq!(
            watch.polling(),
            None,
            "no change events: the figure would be the fallback's"
        );
        // Let the watcher (the LISTEN session) come up before the first wait.
        std::thread::sleep(Duration::from_millis(300));
        let name = format!("decision_latency/{}", store.name());
        group.bench_function(store.name(), |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (latency, offset) = decide_once(&filer, &decider, &watch);
                    SAMPLES.lock().unwrap().push((name.clone(), latency));
                    OFFSETS.lock().unwrap().push((name.clone(), offset));
                    total += latency;
                }
                total
            });
        });
    }
    group.finish();
}

/// The value at `percent` of sorted `values` (nearest rank below).
fn at<T: Copy>(sorted: &[T], percent: usize) -> T {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn median_rate(rates: &[(String, f64)], name: &str) -> Option<f64> {
    let mut of: Vec<f64> = rates
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, r)| *r)
        .collect();
    if of.is_empty() {
        return None;
    }
    of.sort_by(f64::total_cmp);
    Some(at(&of, 50))
}

/// Percentiles of the single operations, each iteration's cycles per second, and the issue's
/// two targets.
fn report() {
    let samples = SAMPLES.lock().unwrap().clone();
    let offsets = OFFSETS.lock().unwrap().clone();
    let rates = RATES.lock().unwrap().clone();
    eprintln!("\n--- single operations (every timed one, warm-up included)");
    for group in ["execute_approved", "decision_latency"] {
        for kind in [Kind::Dir, Kind::Postgres] {
            let name = format!("{group}/{}", kind.name());
            let mut of: Vec<Duration> = samples
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, d)| *d)
                .collect();
            if of.is_empty() {
                continue;
            }
            of.sort();
            eprint!(
                "{name}: {} operations: p50 {:?}, p90 {:?}, max {:?}",
                of.len(),
                at(&of, 50),
                at(&of, 90),
                at(&of, 100),
            );
            let mut after: Vec<i128> = offsets
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, o)| *o)
                .collect();
            if after.is_empty() {
                eprintln!();
            } else {
                after.sort_unstable();
                eprintln!(
                    "; the wait's return relative to `approve` returning: p50 {} µs, p90 {} µs",
                    at(&after, 50) / 1000,
                    at(&after, 90) / 1000,
                );
            }
        }
    }
    eprintln!("--- cycles per second, per iteration");
    for kind in [Kind::Dir, Kind::Postgres] {
        for clients in CLIENTS {
            let name = format!("cycles/{}/{clients}", kind.name());
            let mut of: Vec<f64> = rates
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, r)| *r)
                .collect();
            if of.is_empty() {
                continue;
            }
            of.sort_by(f64::total_cmp);
            eprintln!(
                "{name}: {} iterations of {} cycles: median {:.0}/s, min {:.0}/s, max {:.0}/s",
                of.len(),
                clients * kind.cycles_per_client(clients),
                at(&of, 50),
                at(&of, 0),
                at(&of, 100),
            );
        }
    }
    eprintln!("--- targets");
    if let (Some(dir), Some(pg)) = (
        median_rate(&rates, "cycles/dir/16"),
        median_rate(&rates, "cycles/postgres/16"),
    ) {
        let ratio = pg / dir;
        eprintln!(
            "16 clients: postgres {pg:.0}/s is {ratio:.2}x the directory store's {dir:.0}/s \
             (target at least 5x): {}",
            if ratio >= 5.0 { "met" } else { "missed" }
        );
    }
    let mut decisions: Vec<Duration> = samples
        .iter()
        .filter(|(n, _)| n == "decision_latency/postgres")
        .map(|(_, d)| *d)
        .collect();
    if !decisions.is_empty() {
        decisions.sort();
        let p50 = at(&decisions, 50);
        eprintln!(
            "LISTEN/NOTIFY decision latency p50 {p50:?} (target at most 5 ms): {}",
            if p50 <= Duration::from_millis(5) {
                "met"
            } else {
                "missed"
            }
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let cluster = Cluster::start(true);
    let settings: Vec<String> = connect(cluster.url())
        .query(
            "SELECT name || '=' || setting FROM pg_settings \
             WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'server_version') \
             ORDER BY name",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    eprintln!("PostgreSQL cluster: {}", settings.join(", "));
    floors(&mut c, &cluster);
    execute_approved(&mut c, &cluster);
    cycles(&mut c, &cluster);
    decision_latency(&mut c, &cluster);
    c.final_summary();
    report();
}
