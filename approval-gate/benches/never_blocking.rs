//! How late a 1 ms ticker runs on a current-thread tokio runtime while 1,000 filings run on
//! the same runtime: with `request_approval_async` (the store's work on a thread of its own)
//! and, for comparison in the same run, with the blocking `request_approval` called from an
//! async task, which holds the only thread through every fsync.
//!
//! ```text
//! cargo bench -p approval-gate --bench never_blocking
//! ```
//!
//! A ticker's lateness is how much longer than 1 ms each `sleep(1 ms)` took; the summary
//! gives its median, p99 and maximum over the whole run, and the same for the ticker alone
//! on an idle runtime, the floor set by the timer's 1 ms resolution. The store lives in a temporary
//! directory under `APPROVAL_GATE_BENCH_DIR` if set, else the system's temporary directory.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use approval_gate::{Gate, Limits, NewRequest};

const FILINGS: usize = 1_000;
const TICK: Duration = Duration::from_millis(1);

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("APPROVAL_GATE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

#[derive(Clone, Copy)]
enum Filing {
    Async,
    Blocking,
    /// No filings: the ticker alone, for as long as the async filings took. Its lateness is
    /// the timer's own (tokio's timer has a 1 ms resolution, so a 1 ms sleep ends on the next
    /// whole millisecond or later).
    Idle(Duration),
}

/// Files [`FILINGS`] requests one after another on a current-thread runtime with a 1 ms
/// ticker beside them; every tick's lateness, and how long the filings took.
fn run(filing: Filing) -> (Vec<Duration>, Duration) {
    let dir = bench_dir();
    let gate = Gate::builder()
        .dir(dir.path().join("store"))
        .limits(Limits::default().max_pending(FILINGS + 1))
        .open()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let late = Rc::new(RefCell::new(Vec::new()));
    let local = tokio::task::LocalSet::new();
    let took = local.block_on(&runtime, async {
        let done = Rc::new(std::cell::Cell::new(false));
        let ticker = tokio::task::spawn_local({
            let (late, done) = (Rc::clone(&late), Rc::clone(&done));
            async move {
                while !done.get() {
                    let started = Instant::now();
                    tokio::time::sleep(TICK).await;
                    late.borrow_mut()
                        .push(started.elapsed().saturating_sub(TICK));
                }
            }
        });
        // Let the ticker start before the filings do.
        tokio::task::yield_now().await;
        let started = Instant::now();
        if let Filing::Idle(duration) = filing {
            tokio::time::sleep(duration).await;
        }
        for n in 0..FILINGS {
            let new = NewRequest::new(format!("filing {n}"), "never blocking");
            match filing {
                Filing::Async => drop(gate.request_approval_async(new).await.unwrap()),
                Filing::Blocking => drop(gate.request_approval(new).unwrap()),
                Filing::Idle(_) => break,
            }
            // What an agent's loop does between filings: let other tasks run.
            tokio::task::yield_now().await;
        }
        let took = started.elapsed();
        done.set(true);
        ticker.await.unwrap();
        took
    });
    let late = late.borrow().clone();
    (late, took)
}

fn summary(name: &str, mut late: Vec<Duration>, took: Duration) {
    late.sort_unstable();
    let at = |percent: usize| late[(late.len() - 1) * percent / 100].as_secs_f64() * 1e3;
    eprintln!(
        "{name}: {FILINGS} filings in {:.2} s; 1 ms ticker, {} ticks: late by median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        took.as_secs_f64(),
        late.len(),
        at(50),
        at(99),
        at(100),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter naming neither variant runs both.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    if wanted("request_approval_async") {
        let (late, took) = run(Filing::Async);
        summary("request_approval_async", late, took);
        let (late, _) = run(Filing::Idle(took));
        summary(
            "no filings, the ticker alone (the timer's floor)",
            late,
            took,
        );
    }
    if wanted("request_approval_blocking") {
        let (late, took) = run(Filing::Blocking);
        summary("request_approval_blocking (for comparison)", late, took);
    }
}
