//! A run of `cargo run --example smtp` for the tests that drive it (the CLI in a terminal,
//! signed approvals, TLS, the web page): started against a fresh store and a loopback SMTP
//! server, read until it has filed its request, then waited for.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use approval_gate::RequestId;

use crate::smtp_sink::SmtpSink;

/// A binary `cargo test --workspace` built next to this test: the CLI, or an example.
pub(crate) fn built(relative: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let path = profile_dir.join(relative);
    assert!(
        path.exists(),
        "{} is missing: run the suite with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}

/// One run of the example.
pub(crate) struct Run {
    _tmp: tempfile::TempDir,
    pub(crate) store: PathBuf,
    pub(crate) sink: SmtpSink,
    child: Child,
    pub(crate) id: RequestId,
    output: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Starts the example against a fresh store and a plain loopback SMTP server; returns once it
/// has filed its request.
pub(crate) fn start(args: &[&str]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = format!("smtp://{}", sink.addr());
    start_with(args, tmp, sink, &[("SMTP_URL", url.as_ref())])
}

/// Starts the example with a store in `tmp`, `sink` to inspect afterwards and `env` (which
/// names the relay); returns once it has filed its request.
pub(crate) fn start_with(
    args: &[&str],
    tmp: tempfile::TempDir,
    sink: SmtpSink,
    env: &[(&str, &OsStr)],
) -> Run {
    let store = tmp.path().join("store");
    let mut child = Command::new(built("examples/smtp"))
        .args(args)
        .env("APPROVAL_GATE_DIR", &store)
        .env_remove("SMTP_URL")
        .env_remove("SMTP_CA_FILE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut output = Vec::new();
    let id = loop {
        let line = lines.next().expect("the example ended early").unwrap();
        output.push(line.clone());
        if let Some(rest) = line.strip_prefix("requested approval ") {
            break rest[..12].parse::<RequestId>().unwrap();
        }
    };
    // Keep reading in the background so the example never blocks on a full pipe.
    let output = Arc::new(Mutex::new(output));
    let sink_output = Arc::clone(&output);
    let reader = std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            sink_output.lock().unwrap().push(line);
        }
    });
    Run {
        _tmp: tmp,
        store,
        sink,
        child,
        id,
        output,
        reader: Some(reader),
    }
}

impl Run {
    /// Waits for the example; its exit code, the messages delivered, and everything it
    /// printed.
    pub(crate) fn finish(&mut self) -> (i32, Vec<PathBuf>, String) {
        let status = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        let printed = self.output.lock().unwrap().join("\n");
        let mut delivered: Vec<_> = std::fs::read_dir(self.sink.outbox())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .collect();
        delivered.sort();
        (status.code().unwrap_or(-1), delivered, printed)
    }
}
