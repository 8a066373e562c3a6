//! Another local account on this host, as the agent: a `python3` process run as `nobody`
//! when the tests run as root (as in CI's container), otherwise as the current account,
//! saying so (the attack is still made by a process of its own, but not across accounts).
//! Every wait on it is bounded by what it prints.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Once, mpsc};

use approval_gate_tests::http::{Client, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::cdp::TIMEOUT;

/// `nobody`'s user and group.
const NOBODY: u32 = 65_534;

/// A `python3 -c SCRIPT ARGS…` of the other account, its standard input ours to write and
/// its standard output read line by line. Dropped, its standard input closes and it is
/// killed and reaped.
pub(crate) struct Python {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Python {
    /// Starts `script` with `args` as the other account.
    ///
    /// # Panics
    ///
    /// If `python3` cannot be run.
    pub(crate) fn start(script: &str, args: &[&str]) -> Self {
        let mut command = Command::new("python3");
        command
            .arg("-c")
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if rustix::process::geteuid().is_root() {
            // Without supplementary groups: std drops them when root sets a uid.
            command.uid(NOBODY).gid(NOBODY);
        } else {
            static NOTE: Once = Once::new();
            NOTE.call_once(|| {
                eprintln!(
                    "note: the tests do not run as root, so the agent's processes run as this \
                     account, not as nobody"
                );
            });
        }
        let mut child = command.spawn().expect("python3 runs");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// The next line it prints.
    ///
    /// # Panics
    ///
    /// If it ends first, or prints nothing within [`TIMEOUT`].
    pub(crate) fn line(&self) -> String {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the other account's python3 ended (its stderr is above)")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the other account's python3 printed nothing within {TIMEOUT:?}")
            }
        }
    }

    /// Writes `line` to its standard input.
    ///
    /// # Panics
    ///
    /// If it has closed it.
    pub(crate) fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("its standard input is open");
        writeln!(stdin, "{line}").expect("write to the other account's python3");
        stdin.flush().expect("write to the other account's python3");
    }
}

impl Drop for Python {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Makes each request it reads (`ADDR BASE64`) on a socket of its own and prints all the
/// server answered, in base64.
const RELAY: &str = r"
import base64, socket, sys
for line in sys.stdin:
    addr, request = line.split()
    host, port = addr.rsplit(':', 1)
    with socket.create_connection((host.strip('[]'), int(port)), timeout=60) as s:
        s.sendall(base64.b64decode(request))
        answer = b''
        while chunk := s.recv(65536):
            answer += chunk
    print(base64.b64encode(answer).decode(), flush=True)
";

/// An HTTP client whose every request the other account makes: [`Client`]'s request, byte
/// for byte (its cookies, headers and body), sent and answered on the other account's own
/// socket.
pub(crate) struct AgentClient {
    /// What is sent: the origin, the address, the cookies.
    pub(crate) client: Client,
    relay: Python,
}

impl AgentClient {
    /// The other account's client of `client`'s server.
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            relay: Python::start(RELAY, &[]),
        }
    }

    /// [`Client::get`], made by the other account.
    pub(crate) fn get(&mut self, path: &str) -> Response {
        self.send("GET", path, &[], None)
    }

    /// [`Client::post_json`], made by the other account.
    pub(crate) fn post_json(
        &mut self,
        path: &str,
        body: &serde_json::Value,
        csrf: &str,
    ) -> Response {
        let origin = self.client.origin.clone();
        self.send(
            "POST",
            path,
            &[
                ("Origin", &origin),
                ("Content-Type", "application/json"),
                ("X-CSRF-Token", csrf),
            ],
            Some(body.to_string().as_bytes()),
        )
    }

    /// [`Client::post_form`], made by the other account.
    pub(crate) fn post_form(&mut self, path: &str, form: &str) -> Response {
        let origin = self.client.origin.clone();
        self.send(
            "POST",
            path,
            &[
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            Some(form.as_bytes()),
        )
    }

    /// [`Client::send`], made by the other account.
    pub(crate) fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        let relay = &mut self.relay;
        self.client
            .send_through(method, path, headers, body, |addr, request| {
                relay.say(&format!("{addr} {}", B64.encode(request)));
                B64.decode(relay.line())
                    .expect("the other account's answer in base64")
            })
    }
}
