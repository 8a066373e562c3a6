//! Notification latency: from a request filed (the library's `Gate` on a directory store) to
//! its signed webhook received by a local HTTP receiver, with `approval-gate notify` running
//! as a child process (issue 40 asks p50 < 50 ms on the file store).
//!
//! The notifier wakes on the store's change hint (inotify), reads the queue, claims the
//! message in its ledger, signs and POSTs it; the time is taken by the receiver when the
//! body has arrived, before it answers (so the ledger's synced `delivered` line is not in
//! it). Requests are filed one at a time, each after the previous one was received, and
//! denied once received (so the queue stays as short as in use).
//!
//! ```text
//! cargo bench -p approval-gate-cli --bench notify
//! ```
//!
//! `APPROVAL_GATE_BENCH_CLI` names another `approval-gate` binary to measure.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use approval_gate::{Decision, Gate, NewRequest};
use approval_gate_tests::receiver::Receiver;

const WARM_UP: usize = 20;
const RUNS: usize = 300;

fn bin() -> std::ffi::OsString {
    std::env::var_os("APPROVAL_GATE_BENCH_CLI")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_approval-gate").into())
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let gate = Gate::open(&store).unwrap();
    let receiver = Receiver::accepting();
    let key = tmp.path().join("webhook.key");
    std::fs::write(&key, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n").unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "public_url = \"https://approvals.example.com\"\n[notify.channels.ops]\n\
             type = \"webhook\"\nurl = \"{}\"\nsecret = {{ file = \"{}\" }}\n",
            receiver.url(),
            key.display()
        ),
    )
    .unwrap();
    let mut command = Command::new(bin());
    command
        .arg("--dir")
        .arg(&store)
        .arg("--config")
        .arg(&config)
        .arg("notify")
        .env("XDG_CONFIG_HOME", tmp.path())
        .env("HOME", tmp.path());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("APPROVAL_GATE_") {
            command.env_remove(name);
        }
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Started once it says so; its later lines (one per delivery) are drained.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("channel(s) on"), "{line}");
    std::thread::spawn(move || for _ in stderr.lines() {});

    let mut times = Vec::with_capacity(RUNS);
    for n in 0..WARM_UP + RUNS {
        let filed = Instant::now();
        let id = gate
            .request_approval(NewRequest::new(format!("deploy {n}"), "the bench"))
            .unwrap()
            .request
            .id();
        let arrived = receiver.wait_for(n + 1)[n].at;
        if n >= WARM_UP {
            times.push(arrived.duration_since(filed));
        }
        // Decided, as a human would: the queue stays short, as it is in use.
        gate.deny(id, &Decision::by("bench")).unwrap();
    }
    let _ = child.kill();
    let _ = child.wait();
    times.sort();
    eprintln!(
        "notify: filed -> webhook received, {RUNS} requests: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        percentile(&times, 50).as_secs_f64() * 1e3,
        percentile(&times, 90).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
    );
}
