//! A small Chrome DevTools Protocol client driving Debian's headless Chromium: a browser,
//! browser contexts (separate cookies and storage: one per approver), pages in them, and the
//! pages' virtual WebAuthn authenticators.
//!
//! Everything blocks and is bounded: every command and every wait has a timeout, and waits are
//! on events (a response, `Page.lifecycleEvent`, a promise in the page that a
//! `MutationObserver` resolves), never on sleeps. Failures panic with what Chromium said.
//!
//! Chromium runs in a process group of its own, in a fresh directory: its profile, its
//! `TMPDIR` (where it would leave sockets and shared memory files in /tmp when killed) and its
//! `HOME` (caches, and the crash handlers' database). Dropping the [`Browser`] kills the group,
//! reaps Chromium, waits for its stderr to close (every process holding it, the crash handlers
//! in their sessions of their own too, has exited) and removes the directory; a watchdog
//! shell, reading a pipe only this process holds, kills the group and removes the directory
//! if the test process dies without dropping it.
//!
//! Without Chromium the browser tests skip with a note, except in CI (`CI` set), where they
//! fail: `.ci/run` installs Debian's `chromium`.

mod connection;
mod page;
mod webauthn;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Value, json};
use tempfile::TempDir;

pub(crate) use connection::CdpError;
use connection::{Connection, stderr_tail};
pub(crate) use page::Page;
pub(crate) use webauthn::Authenticator;

/// The environment variable naming the Chromium binary (default `/usr/bin/chromium`).
pub(crate) const ENV: &str = "APPROVAL_GATE_TEST_CHROMIUM";

/// The bound on Chromium's start, a command's answer and a page load. Generous: a run on two
/// busy cores is slow, and a hang fails all the same.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Chromium's flags: headless, nothing that reaches the network on its own, and background
/// pages (the other approver's) that keep their timers running at full speed.
///
/// Not `--disable-crashpad-for-testing`, although Chromium then starts its two
/// `chrome_crashpad_handler`s in sessions of their own, outside the process group: with it,
/// Chromium 156's network service crashes at start ("FD ownership violation") and no page
/// loads. The handlers exit when Chromium does.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--password-store=basic",
    "--remote-debugging-port=0",
];

/// A headless Chromium and the one DevTools connection to it.
pub(crate) struct Browser {
    connection: Arc<Connection>,
    reader: Option<JoinHandle<()>>,
    // Dropped after the connection is shut: kills and reaps Chromium, removes its directory.
    process: Process,
}

impl Browser {
    /// Starts Chromium and connects to it; `None` (after saying so on stderr) if Chromium is
    /// not installed and this is not CI.
    ///
    /// # Panics
    ///
    /// In CI without Chromium; if Chromium does not print its DevTools endpoint within
    /// [`TIMEOUT`] (with Chromium's stderr); if the connection fails.
    pub(crate) fn launch() -> Option<Self> {
        let binary = chromium()?;
        let dir = tempfile::Builder::new()
            .prefix("ag-chromium")
            .tempdir()
            .expect("a temporary directory for Chromium");
        let [profile, tmp, home] = ["profile", "tmp", "home"].map(|name| dir.path().join(name));
        for made in [&tmp, &home] {
            std::fs::create_dir(made).expect("Chromium's TMPDIR and HOME");
        }
        let mut child = Command::new(&binary)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .env("TMPDIR", &tmp)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let stderr = child.stderr.take().expect("Chromium's stderr is piped");
        let mut process = Process::new(child, dir);
        let (endpoint, log) = watch_stderr(stderr);
        process.stderr_closed = Some(log.closed);
        let url = match endpoint.recv_timeout(TIMEOUT) {
            Ok(url) => url,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "Chromium ({}) printed no `DevTools listening on ws://…` within {TIMEOUT:?}\n{}",
                binary.display(),
                stderr_tail(&log.text)
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!(
                "Chromium ({}) exited before it listened for DevTools: {}\n{}",
                binary.display(),
                process.wait_status(),
                stderr_tail(&log.text)
            ),
        };
        let (connection, reader) = Connection::open(&url, Arc::clone(&log.text), TIMEOUT)
            .unwrap_or_else(|e| {
                panic!(
                    "connect to Chromium's DevTools at {url}: {e}\n{}",
                    stderr_tail(&log.text)
                )
            });
        Some(Self {
            connection,
            reader: Some(reader),
            process,
        })
    }

    /// Chromium's process group (its pid).
    pub(crate) fn process_group(&self) -> u32 {
        self.process.chromium.id()
    }

    /// The directory Chromium's profile, `TMPDIR` and `HOME` are in; removed on close.
    pub(crate) fn directory(&self) -> &Path {
        self.process.dir.path()
    }

    /// Chromium's product and version, `Chrome/156.0.…` (`Browser.getVersion`).
    pub(crate) fn version(&self) -> String {
        let version = self.call("Browser.getVersion", json!({}));
        version["product"].as_str().unwrap_or_default().to_owned()
    }

    /// A new browser context: cookies, storage and permissions of its own, as in a separate
    /// profile. Two approvers are two contexts.
    pub(crate) fn new_context(&self) -> Context {
        let created = self.call("Target.createBrowserContext", json!({}));
        let id = created["browserContextId"]
            .as_str()
            .expect("Target.createBrowserContext returns a browserContextId")
            .to_owned();
        Context(Arc::new(ContextId {
            connection: Arc::clone(&self.connection),
            id,
        }))
    }

    /// Any command on the browser's own session; panics with Chromium's error.
    pub(crate) fn call(&self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Any command on the browser's own session.
    pub(crate) fn try_call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.connection.call(None, method, params, TIMEOUT)
    }

    /// Closes the browser as dropping it does, and checks that Chromium's processes are gone:
    /// all of them, not only the one that was started.
    ///
    /// # Panics
    ///
    /// If a process of Chromium's still holds its stderr [`TIMEOUT`] after the kill.
    pub(crate) fn close(mut self) {
        let group = self.process.chromium.id();
        assert!(
            self.stop(),
            "Chromium's process group {group} was killed, yet its stderr is still open {TIMEOUT:?} \
             later: some process of it lives on"
        );
    }

    /// Shuts the connection, kills Chromium's group, reaps Chromium and joins the reader;
    /// whether every holder of Chromium's stderr is gone.
    fn stop(&mut self) -> bool {
        self.connection.shut_down();
        let gone = self.process.kill();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        gone
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.reader.is_some() && !self.stop() {
            eprintln!(
                "warning: Chromium's process group {} was killed, yet its stderr is still open \
                 {TIMEOUT:?} later",
                self.process.chromium.id()
            );
        }
    }
}

/// A browser context (`Target.createBrowserContext`); disposed of when it and its pages are
/// all dropped (a page keeps its context: `browser.new_context().new_page()` is fine).
pub(crate) struct Context(Arc<ContextId>);

/// What disposes of the context when the last of it and its pages is dropped.
pub(crate) struct ContextId {
    connection: Arc<Connection>,
    id: String,
}

impl Context {
    /// A new page (tab) in this context, attached over the flattened session protocol, with
    /// the Page, Runtime and Log domains on: its loads can be waited for and its console is
    /// collected from the start.
    pub(crate) fn new_page(&self) -> Page {
        let context = &self.0;
        let call = |method: &str, params: Value| {
            context
                .connection
                .call(None, method, params, TIMEOUT)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let created = call(
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context.id }),
        );
        let target = created["targetId"]
            .as_str()
            .expect("Target.createTarget returns a targetId")
            .to_owned();
        let attached = call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        let session = attached["sessionId"]
            .as_str()
            .expect("Target.attachToTarget returns a sessionId")
            .to_owned();
        Page::attached(Arc::clone(context), target, session)
    }
}

impl Drop for ContextId {
    fn drop(&mut self) {
        self.connection.send_and_forget(
            None,
            "Target.disposeBrowserContext",
            json!({ "browserContextId": self.id }),
        );
    }
}

/// The Chromium binary, or `None` (having said why) to skip.
fn chromium() -> Option<PathBuf> {
    let binary = match std::env::var_os(ENV) {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            assert!(
                path.exists(),
                "{ENV} names {}, which does not exist",
                path.display()
            );
            return Some(path);
        }
        _ => PathBuf::from("/usr/bin/chromium"),
    };
    if binary.exists() {
        return Some(binary);
    }
    let missing = format!(
        "Chromium is not installed ({} is missing, {ENV} is not set)",
        binary.display()
    );
    assert!(
        std::env::var_os("CI").is_none(),
        "{missing}: the browser tests never skip in CI, and .ci/run installs Debian's chromium"
    );
    eprintln!("skipping a browser test: {missing}; install Debian's chromium to run it");
    None
}

struct StderrLog {
    text: Arc<Mutex<String>>,
    /// Disconnected when the pipe is closed: every process that held it has exited.
    closed: mpsc::Receiver<()>,
}

/// Reads Chromium's stderr to its end on a thread of its own (a full pipe would stall
/// Chromium), keeping the text for failure messages and sending the DevTools endpoint once.
fn watch_stderr(stderr: ChildStderr) -> (mpsc::Receiver<String>, StderrLog) {
    const PREFIX: &str = "DevTools listening on ";
    let text = Arc::new(Mutex::new(String::new()));
    let (sender, endpoint) = mpsc::channel();
    let (at_end, closed) = mpsc::channel::<()>();
    {
        let text = Arc::clone(&text);
        std::thread::Builder::new()
            .name("chromium-stderr".into())
            .spawn(move || {
                let _at_end = at_end;
                let mut sender = Some(sender);
                let mut lines = BufReader::new(stderr);
                let mut line = Vec::new();
                while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    let decoded = String::from_utf8_lossy(&line);
                    if let Some(url) = decoded.trim_end().strip_prefix(PREFIX)
                        && let Some(sender) = sender.take()
                    {
                        let _ = sender.send(url.to_owned());
                    }
                    let mut text = text.lock().unwrap_or_else(PoisonError::into_inner);
                    // The start and the end are what explain a failure; keep at most 1 MiB.
                    if text.len() < 1 << 20 {
                        text.push_str(&decoded);
                    }
                    line.clear();
                }
            })
            .expect("spawn the thread reading Chromium's stderr");
    }
    (endpoint, StderrLog { text, closed })
}

/// Chromium's process group, its watchdog and its directory.
struct Process {
    chromium: Child,
    watchdog: Option<Child>,
    stderr_closed: Option<mpsc::Receiver<()>>,
    reaped: bool,
    dir: TempDir,
}

impl Process {
    /// Takes charge of `chromium` (the leader of its own process group) and starts its
    /// watchdog: a shell in a group of its own (so a ^C to the tests does not stop it first)
    /// that blocks reading a pipe whose only writer is this process, and kills the group when
    /// the read ends, which is when this process exits however it exits; then it removes
    /// Chromium's directory. (`kill -KILL -PGID`: dash's `kill` takes no `--`.)
    fn new(chromium: Child, dir: TempDir) -> Self {
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(r#"read -r _; kill -KILL "-$1" 2>/dev/null; rm -rf -- "$2""#)
            .arg("ag-chromium-watchdog")
            .arg(chromium.id().to_string())
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        let mut process = Self {
            chromium,
            watchdog: None,
            stderr_closed: None,
            reaped: false,
            dir,
        };
        match watchdog {
            Ok(watchdog) => process.watchdog = Some(watchdog),
            Err(e) => {
                process.kill();
                panic!("start Chromium's watchdog (sh): {e}");
            }
        }
        process
    }

    /// Waits for Chromium (which has exited or is exiting) and says how it ended.
    fn wait_status(&mut self) -> String {
        self.reaped = true;
        match self.chromium.wait() {
            Ok(status) => status.to_string(),
            Err(e) => format!("(wait failed: {e})"),
        }
    }

    /// Kills the watchdog, then Chromium's whole group (renderers, GPU and network
    /// processes, zygotes), and reaps Chromium; then waits (up to [`TIMEOUT`]) for its stderr
    /// to close, which it does when the last process holding it has died. Whether it closed.
    fn kill(&mut self) -> bool {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        if !self.reaped {
            // The group's id is Chromium's pid, which stays taken until Chromium is reaped.
            let group =
                Pid::from_raw(self.chromium.id().cast_signed()).expect("a child's pid is positive");
            let _ = kill_process_group(group, Signal::KILL);
            let _ = self.wait_status();
        }
        self.stderr_closed.take().is_none_or(|closed| {
            matches!(
                closed.recv_timeout(TIMEOUT),
                Err(mpsc::RecvTimeoutError::Disconnected)
            )
        })
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}
