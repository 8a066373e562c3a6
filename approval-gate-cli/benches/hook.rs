//! What `approval-gate hook` costs a tool call that matches no pattern: the price every
//! unguarded call of a harness pays once the hook is installed (the issue asks p50 < 5 ms).
//!
//! Each run spawns `approval-gate hook claude-code --config F` with Claude Code's documented
//! `Write` sample on stdin, against a `[hooks]` table that guards `Bash` commands only, and
//! times it from spawn to exit (stdin written, the empty answer read). The same run times
//! `approval-gate --version` (the binary's own start and exit) for comparison.
//!
//! ```text
//! cargo bench -p approval-gate-cli --bench hook
//! ```
//!
//! `APPROVAL_GATE_BENCH_CLI` names another `approval-gate` binary to measure.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SAMPLE: &str = include_str!("../tests/cli/hooks/claude-code-pretooluse-write.json");
const RULES: &str =
    "[hooks]\ncommands = [\"git push*\", \"rm -rf*\"]\ntools = [\"mcp__*__send*\"]\n";
const WARM_UP: usize = 20;
const RUNS: usize = 300;

fn bin() -> std::ffi::OsString {
    std::env::var_os("APPROVAL_GATE_BENCH_CLI")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_approval-gate").into())
}

fn command(args: &[&std::ffi::OsStr], home: &std::path::Path) -> Command {
    let mut command = Command::new(bin());
    command
        .args(args)
        .env("XDG_CONFIG_HOME", home)
        .env("HOME", home);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("APPROVAL_GATE_") {
            command.env_remove(name);
        }
    }
    command
}

/// One run from spawn to exit, with `input` on stdin; its stdout must be `expected`.
fn once(mut command: Command, input: &str, expected: &[u8]) -> Duration {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    assert!(output.status.success(), "{:?}", output.status);
    if expected.is_empty() {
        assert!(
            output.stdout.is_empty(),
            "an answer to a call no pattern matches"
        );
    } else {
        assert!(output.stdout.starts_with(expected));
    }
    took
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn measure(what: &str, run: &dyn Fn() -> Duration) -> Duration {
    for _ in 0..WARM_UP {
        run();
    }
    let mut times: Vec<Duration> = (0..RUNS).map(|_| run()).collect();
    times.sort_unstable();
    let (p50, p90) = (percentile(&times, 50), percentile(&times, 90));
    eprintln!(
        "{what}: p50 {:.0} µs, p90 {:.0} µs over {RUNS} runs",
        p50.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
    p50
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that names neither measurement skips both.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| "hook no-match".contains(f.as_str())) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, RULES).unwrap();
    let store = dir.path().join("store");
    let version = measure("approval-gate --version", &|| {
        once(
            command(&["--version".as_ref()], dir.path()),
            "",
            b"approval-gate",
        )
    });
    let hook = measure("hook claude-code, no pattern matches", &|| {
        let args: [&std::ffi::OsStr; 6] = [
            "--config".as_ref(),
            config.as_os_str(),
            "--dir".as_ref(),
            store.as_os_str(),
            "hook".as_ref(),
            "claude-code".as_ref(),
        ];
        once(command(&args, dir.path()), SAMPLE, b"")
    });
    eprintln!(
        "the hook adds {:.0} µs (p50) over the binary's start and exit; target: p50 under 5 ms",
        hook.saturating_sub(version).as_secs_f64() * 1e6
    );
    assert!(
        !store.exists(),
        "a call no pattern matches must not even open the store"
    );
}
