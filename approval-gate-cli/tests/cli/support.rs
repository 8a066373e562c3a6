//! A store in a temporary directory, the CLI binary, and checks on its output bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use approval_gate::{
    CanonicalPayload, Clock, Gate, ManualClock, NewRequest, Request, SystemClock, Timestamp,
};
use tempfile::TempDir;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_approval-gate");

/// Strings an agent could use to make a human see something other than what will run.
pub(crate) const HOSTILE: &[&str] = &[
    "\x1b[2J\x1b[Hscreen cleared",
    "\x1b[1A\x1b[2K\x1b[10;10Hcursor moved",
    "\x1b]0;innocent title\x07title set",
    "\x1b]52;c;cm0gLXJmIH4=\x07clipboard written",
    "\x1bP+q544e\x1b\\device control string",
    "send $5 to bob\rapproved: send $5 to bob",
    "delete all\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08one file",
    "amount \u{202e}0001\u{202c} usd, \u{2066}isolated\u{2069} \u{200f}rlm",
    "zero\u{200b}width\u{200c}join\u{200d}word\u{2060}bom\u{feff}",
    "tags\u{e0001}\u{e0041}\u{e0042}\u{e007f} variation\u{fe0f}\u{e0100}",
    "8-bit csi \u{9b}2J and nel \u{85} and st \u{9c}",
    "del \x7f and bell \x07 and vt \x0b ff \x0c",
    "lines\nbreak\u{2028}here\u{2029}and\ttab",
    "hangul filler\u{3164}\u{115f}\u{ffa0} soft\u{ad}hyphen cgj\u{34f}",
];

/// An independent statement of what must never reach a terminal raw (apart from `\n`, and
/// `\r` right before `\n` where a terminal driver adds it).
pub(crate) fn forbidden(c: char) -> bool {
    let code = u32::from(c);
    code < 0x20
        || (0x7f..=0x9f).contains(&code)
        || [
            0xad, 0x34f, 0x61c, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2028, 0x2029, 0x3164, 0xfeff,
            0xffa0,
        ]
        .contains(&code)
        || (0x180b..=0x180f).contains(&code)
        || (0x200b..=0x200f).contains(&code)
        || (0x202a..=0x202e).contains(&code)
        || (0x2060..=0x206f).contains(&code)
        || (0xfe00..=0xfe0f).contains(&code)
        || (0xfff9..=0xfffb).contains(&code)
        || (0x1d173..=0x1d17a).contains(&code)
        || (0xe0000..=0xe007f).contains(&code)
        || (0xe0100..=0xe01ef).contains(&code)
}

/// Panics if `bytes` hold anything a terminal could act on or a human could not see.
pub(crate) fn assert_clean(what: &str, bytes: &[u8]) {
    assert!(
        !bytes.contains(&0x1b),
        "{what}: raw ESC in {:?}",
        lossy(bytes)
    );
    let text = std::str::from_utf8(bytes)
        .unwrap_or_else(|e| panic!("{what}: not UTF-8 ({e}): {:?}", lossy(bytes)));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let allowed = c == '\n' || (c == '\r' && chars.peek() == Some(&'\n'));
        assert!(
            allowed || !forbidden(c),
            "{what}: raw U+{:04X} in {text:?}",
            u32::from(c)
        );
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A store in its own temporary directory.
pub(crate) struct Store {
    _tmp: TempDir,
    pub(crate) path: PathBuf,
}

impl Store {
    pub(crate) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store");
        Gate::open(&path).unwrap();
        Self { _tmp: tmp, path }
    }

    /// The directory holding the store, for files a test needs beside it.
    pub(crate) fn scratch(&self) -> &Path {
        self.path.parent().unwrap()
    }

    pub(crate) fn gate(&self) -> Gate {
        Gate::open(&self.path).unwrap()
    }

    /// A gate whose clock stands `ago` in the past.
    pub(crate) fn gate_ago(&self, ago: Duration) -> Gate {
        let clock = ManualClock::new(SystemClock.now().saturating_sub(ago));
        Gate::builder().dir(&self.path).clock(clock).open().unwrap()
    }

    pub(crate) fn ask(&self, action: &str) -> Request {
        self.gate()
            .request_approval(NewRequest::new(action, "the test needs it"))
            .unwrap()
            .request
    }

    /// A request with every agent-supplied field set.
    pub(crate) fn ask_full(&self, action: &str, payload: &str) -> Request {
        let ask = NewRequest::new(action, "the invoice is due")
            .requested_by("billing-agent")
            .operation("smtp.send")
            .payload(CanonicalPayload::from_json_text(payload).unwrap());
        self.gate().request_approval(ask).unwrap().request
    }

    /// Runs the CLI on this store without colour and without a terminal.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("the CLI runs")
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("--dir")
            .arg(&self.path)
            .args(args)
            .env_remove("APPROVAL_GATE_DIR")
            .env("NO_COLOR", "1")
            .env("TERM", "dumb");
        operator_settings_of_this_test_only(&mut command, self.scratch());
        command
    }

    /// Every file and directory of the store with its contents.
    pub(crate) fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let relative = path.strip_prefix(root).unwrap().to_owned();
                if path.is_dir() {
                    into.insert(relative, None);
                    walk(root, &path, into);
                } else {
                    into.insert(relative, Some(std::fs::read(&path).unwrap()));
                }
            }
        }
        let mut all = BTreeMap::new();
        walk(&self.path, &self.path, &mut all);
        all
    }

    /// Checks that nothing but the audit log (and the journal its lines go through) changed since `before`, and returns what the
    /// lines added since say: each one's event, request id and refusal code. A refused
    /// decision leaves a `decision_refused` line and changes no record.
    pub(crate) fn lines_since(
        &self,
        before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    ) -> Vec<(approval_gate::AuditEvent, String, String)> {
        let changed = Self::changed(before, &self.snapshot());
        assert!(
            changed
                .iter()
                .all(|p| p == "audit.jsonl" || p == "audit.head" || p == "journal.wal"),
            "a refusal changed {changed:?}"
        );
        let old = before
            .get(Path::new("audit.jsonl"))
            .and_then(|c| c.as_ref())
            .map_or(0, |c| String::from_utf8_lossy(c).lines().count());
        self.gate()
            .audit_records()
            .unwrap()
            .into_iter()
            .skip(old)
            .map(|r| {
                let reason = r.details.get("reason").and_then(|v| v.as_str());
                (
                    r.event,
                    r.id.to_string(),
                    reason.unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// The paths whose presence or contents differ between two snapshots.
    pub(crate) fn changed(
        before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
        after: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    ) -> Vec<String> {
        let mut paths: Vec<_> = before.keys().chain(after.keys()).collect();
        paths.sort();
        paths.dedup();
        paths
            .into_iter()
            .filter(|p| before.get(*p) != after.get(*p))
            .map(|p| p.display().to_string())
            .collect()
    }
}

/// The operator's environment of the machine running the tests never reaches the binary;
/// its default config file is `<config_home>/approval-gate/config.toml`.
pub(crate) fn operator_settings_of_this_test_only(command: &mut Command, config_home: &Path) {
    for name in [
        "APPROVAL_GATE_STORE",
        "APPROVAL_GATE_CONFIG",
        "APPROVAL_GATE_MAX_PENDING",
        "APPROVAL_GATE_MAX_REQUESTS",
        "APPROVAL_GATE_DEFAULT_TTL",
        "APPROVAL_GATE_APPROVERS",
        "APPROVAL_GATE_QUORUM",
        "APPROVAL_GATE_SIGNING_KEY",
        "APPROVAL_GATE_SYSTEM_POLICY",
        "APPROVAL_GATE_PUBLIC_URL",
    ] {
        command.env_remove(name);
    }
    command.env("XDG_CONFIG_HOME", config_home);
}

/// Parses a successful run's stdout as JSON.
pub(crate) fn json(output: &Output) -> serde_json::Value {
    assert_success(output);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", lossy(&output.stdout)))
}

pub(crate) fn stdout(output: &Output) -> String {
    lossy(&output.stdout)
}

pub(crate) fn stderr(output: &Output) -> String {
    lossy(&output.stderr)
}

pub(crate) fn assert_success(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

/// Asserts the exit code and that stderr holds `message`.
pub(crate) fn assert_exit(output: &Output, code: i32, message: &str) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
    assert!(
        stderr(output).contains(message),
        "expected {message:?} on stderr, got {}",
        stderr(output)
    );
}

/// Milliseconds from now until `then` on the system clock (negative if past).
pub(crate) fn millis_until(then: Timestamp) -> i64 {
    SystemClock.now().millis_until(then)
}

/// Runs `approve` in a pty and types the code it asks for, if it asks; its exit code,
/// whether it asked, and everything it printed.
pub(crate) fn approve(command: Command) -> (i32, bool, String) {
    let mut session =
        rexpect::session::spawn_command(command, Some(20_000)).expect("spawn in a pty");
    let mut printed = String::new();
    let asked = match session.exp_regex(r"Type [0-9a-f]{8} to approve \(anything else cancels\): ")
    {
        Ok((before, prompt)) => {
            printed.push_str(&before);
            printed.push_str(&prompt);
            session.send_line(&prompt[5..13]).unwrap();
            true
        }
        Err(_) => false,
    };
    printed.push_str(&session.exp_eof().unwrap_or_default());
    let code = match session.process().wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => code,
        other => panic!("approve did not exit normally: {other:?}\n{printed}"),
    };
    (code, asked, printed)
}

/// `nobody`'s uid, and whether this process may act as it (`setpriv` needs root): tests of a
/// second local account run only then, as in CI.
pub(crate) fn nobody() -> Option<u32> {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: a second local account needs root (CI runs as root)");
        return None;
    }
    let out = Command::new("id").args(["-u", "nobody"]).output().unwrap();
    assert!(out.status.success(), "no user nobody");
    Some(lossy(&out.stdout).trim().parse().unwrap())
}

/// `program` run as the account `nobody` (its own uid, gid and no groups), with this
/// process's environment.
pub(crate) fn as_nobody(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(program);
    command
}
