//! A running `approval-gate serve`, and what a browser does with it.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use approval_gate::{Gate, Policy, RequestId};
use approval_gate_tests::http::{Client, Response, free_port};
use approval_gate_tests::webauthn::{Made, SoftPasskey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::json;

use crate::smtp_run::built;

/// The CLI with none of the operator's settings from the environment.
pub(crate) fn cli() -> Command {
    let mut command = Command::new(built("approval-gate"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("APPROVAL_GATE_") {
            command.env_remove(name);
        }
    }
    // No config file of the machine running the tests either.
    command.env("XDG_CONFIG_HOME", "/nonexistent/approval-gate-tests");
    command
}

/// Starts `passkey enroll PRINCIPAL` on a free loopback port with `extra` arguments; the
/// running command (stdout piped), the link it printed, and the code the terminal shows for
/// the human to type on the page (if it shows one). The rest of its stderr is drained.
pub(crate) fn enroll_link_and_code(
    principal: &str,
    extra: &[&str],
) -> (Child, String, Option<String>) {
    let mut child = cli()
        .args(["passkey", "enroll", principal, "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    let link = loop {
        printed.clear();
        assert!(
            stderr.read_line(&mut printed).unwrap() > 0,
            "no link printed"
        );
        if let Some(at) = printed.find("http://localhost:") {
            break printed[at..].trim().to_owned();
        }
    };
    // The rest of the message, up to its last line.
    let mut code = None;
    loop {
        printed.clear();
        assert!(
            stderr.read_line(&mut printed).unwrap() > 0,
            "the message ended early"
        );
        if let Some(at) = printed.find("type this code there: ") {
            code = Some(printed[at + 22..].trim().to_owned());
        }
        if printed.contains("relying party") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, link, code)
}

/// A store, its approvers file, and a server over both.
pub(crate) struct Served {
    pub(crate) _tmp: tempfile::TempDir,
    /// A directory or a `postgres://` URL.
    pub(crate) store: String,
    pub(crate) approvers: PathBuf,
    pub(crate) origin: String,
    child: Child,
    lines: mpsc::Receiver<String>,
}

/// A fresh store, and an approvers file trusting `passkeys` on `http://localhost:PORT` for a
/// free `PORT`: the directory holding both, the store, the file and the port.
fn fresh(passkeys: &[&SoftPasskey]) -> (tempfile::TempDir, String, PathBuf, u16) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let approvers = tmp.path().join("approvers");
    let port = free_port();
    let origin = format!("http://localhost:{port}");
    let lines: Vec<String> = passkeys
        .iter()
        .map(|p| p.allowed_signers_line(&origin))
        .collect();
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    Gate::open(&store).unwrap();
    (tmp, store.display().to_string(), approvers, port)
}

impl Served {
    /// Serves a fresh store whose approvers file trusts `passkeys` on the page's origin,
    /// with `quorum` (`*=N`).
    pub(crate) fn start(passkeys: &[&SoftPasskey], quorum: u32) -> Self {
        let (tmp, store, approvers, port) = fresh(passkeys);
        Self::start_on(tmp, store, approvers, &format!("*={quorum}"), port, &[])
    }

    /// Serves `store` with `approvers`, the `quorum` table (`smtp.send=2,*=1`), on
    /// `http://localhost:PORT` (which the approvers file names), with `extra` arguments to
    /// `serve`.
    pub(crate) fn start_on(
        tmp: tempfile::TempDir,
        store: String,
        approvers: PathBuf,
        quorum: &str,
        port: u16,
        extra: &[&str],
    ) -> Self {
        Self::launch(tmp, store, approvers, quorum, port, extra, cli())
    }

    /// [`Served::start`], with at most `files` open files for the server (`prlimit`), as a
    /// machine with a low limit has.
    pub(crate) fn start_with_open_files(
        passkeys: &[&SoftPasskey],
        quorum: u32,
        files: u32,
    ) -> Self {
        let (tmp, store, approvers, port) = fresh(passkeys);
        let plain = cli();
        let mut limited = Command::new("prlimit");
        limited
            .arg(format!("--nofile={files}:{files}"))
            .arg("--")
            .arg(plain.get_program());
        for (name, value) in plain.get_envs() {
            match value {
                Some(value) => limited.env(name, value),
                None => limited.env_remove(name),
            };
        }
        Self::launch(
            tmp,
            store,
            approvers,
            &format!("*={quorum}"),
            port,
            &[],
            limited,
        )
    }

    fn launch(
        tmp: tempfile::TempDir,
        store: String,
        approvers: PathBuf,
        quorum: &str,
        port: u16,
        extra: &[&str],
        mut command: Command,
    ) -> Self {
        let mut child = command
            .args(["--store", &store])
            .arg("--approvers")
            .arg(&approvers)
            .args(["--quorum", quorum])
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (send, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("serve: {line}");
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Self {
            _tmp: tmp,
            store,
            approvers,
            origin: String::new(),
            child,
            lines,
        };
        let line = served.wait_for_line("serving ");
        line.split(' ')
            .nth(2)
            .unwrap()
            .clone_into(&mut served.origin);
        served
    }

    /// The next line of stderr holding `needle`.
    pub(crate) fn wait_for_line(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("serve never printed {needle:?}: {e}"),
            }
        }
    }

    /// A browser with no session.
    pub(crate) fn client(&self) -> Client {
        Client::new(&self.origin)
    }

    /// The executor's gate: the same store, holding the approvers file as its policy.
    pub(crate) fn executor(&self, quorum: u32) -> Gate {
        let policy = Policy::load_allowed_signers(&self.approvers)
            .unwrap()
            .require("*", quorum)
            .unwrap();
        open(Gate::builder().policy(policy), &self.store)
    }

    /// A plain gate over the store, as the agent has.
    pub(crate) fn agent(&self) -> Gate {
        open(Gate::builder(), &self.store)
    }
}

/// Opens `store` (a directory or a `postgres://` URL) off any async runtime.
fn open(builder: approval_gate::GateBuilder, store: &str) -> Gate {
    let location = approval_gate::Location::parse(store).unwrap();
    approval_gate_tests::pg::on_own_thread(move || builder.store(location).open().unwrap())
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Signs `client` in with `passkey`; the response of the last step.
pub(crate) fn sign_in(client: &mut Client, passkey: &SoftPasskey) -> Response {
    let begin = client.post_json("/signin/begin", &json!({}), "");
    assert_eq!(begin.status, 200, "{}", begin.body);
    let challenge = B64
        .decode(begin.json()["challenge"].as_str().unwrap())
        .unwrap();
    let made = passkey.made(&client.origin.clone());
    let finished = client.post_json("/signin/finish", &passkey.assertion(&challenge, &made), "");
    if let (Some(key), Some(session)) = (
        finished_key(&finished),
        client.cookies.get("__Host-approval-gate-session"),
    ) {
        page_keys().insert(session.clone(), key);
    }
    finished
}

/// The page key a successful sign-in hands to the page's script (which keeps it in the
/// origin's own storage): never in a cookie, never in a page.
fn finished_key(finished: &Response) -> Option<String> {
    if finished.status != 200 {
        return None;
    }
    finished.json()["key"].as_str().map(str::to_owned)
}

/// The page key of each session signed in by [`sign_in`], by session cookie: what the page's
/// script holds in the origin's storage.
fn page_keys() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<String, String>> {
    static KEYS: std::sync::Mutex<std::collections::BTreeMap<String, String>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    KEYS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The value of `attribute` on the first element that has it in `html`.
pub(crate) fn attribute(html: &str, attribute: &str) -> Option<String> {
    let start = html.find(&format!("{attribute}=\""))? + attribute.len() + 2;
    let end = html[start..].find('"')? + start;
    Some(html[start..end].to_owned())
}

/// The page key (the CSRF token) of the signed-in session of `client`, as its page's script
/// holds it.
pub(crate) fn csrf(client: &mut Client) -> String {
    let session = client
        .cookies
        .get("__Host-approval-gate-session")
        .expect("a signed-in client");
    page_keys()
        .get(session)
        .expect("a session signed in by sign_in")
        .clone()
}

/// The approve button's challenge for the signed-in approver of `client`.
pub(crate) fn challenge(client: &mut Client, id: RequestId) -> Vec<u8> {
    let page = client.get(&format!("/requests/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let text = attribute(&page.body, "data-challenge").expect("an approve button");
    B64.decode(text).unwrap()
}

/// Approves `id` as the browser would: the page's challenge, signed as `made` says.
pub(crate) fn approve(
    client: &mut Client,
    passkey: &SoftPasskey,
    id: RequestId,
    made: &Made,
) -> Response {
    let challenge = challenge(client, id);
    let token = csrf(client);
    client.post_json(
        &format!("/requests/{id}/approve"),
        &passkey.assertion(&challenge, made),
        &token,
    )
}
