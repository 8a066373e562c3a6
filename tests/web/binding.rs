//! Where `serve` and `passkey enroll` listen: every address their `http://localhost:PORT`
//! resolves to (`127.0.0.1` and `[::1]`, which Chromium tries first), or they do not start.
//! Another local account that holds either address first would get the human's traffic on
//! the page's own origin.

use std::io::{BufRead as _, BufReader};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use approval_gate_tests::http::{Client, free_port};
use approval_gate_tests::webauthn::SoftPasskey;

use crate::account::Python;
use crate::server::cli;

/// Another local account's listener on `addr` (see [`crate::account`]), holding the address
/// until dropped (its standard input closes: the script ends).
struct Squatter {
    _held: Python,
}

/// The squatter's start: the address from its arguments.
const SQUAT: &str = r"
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
family = socket.AF_INET6 if ':' in host else socket.AF_INET
";

/// Listens, answering nothing, until its standard input closes.
const HOLD: &str = r"
s = socket.socket(family)
s.bind((host, port))
s.listen(16)
print('ready', flush=True)
sys.stdin.read()
";

/// Serves a page of its own, titled `squatted`, for any path.
const PAGE: &str = r"
import http.server
class Server(http.server.HTTPServer):
    address_family = family
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'<title>squatted</title><h1>squatted</h1>'
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = Server((host, port), Page)
print('ready', flush=True)
server.serve_forever()
";

impl Squatter {
    /// Listens on `addr`, answering nothing.
    fn hold(addr: SocketAddr) -> Self {
        Self::run(addr, HOLD)
    }

    /// Serves a page of its own on `addr`.
    fn serve(addr: SocketAddr) -> Self {
        Self::run(addr, PAGE)
    }

    fn run(addr: SocketAddr, body: &str) -> Self {
        let script = format!("{SQUAT}{body}");
        let squatter = Python::start(&script, &[&addr.ip().to_string(), &addr.port().to_string()]);
        assert_eq!(
            squatter.line(),
            "ready",
            "the squatter could not bind {addr}"
        );
        Self { _held: squatter }
    }
}

/// An approvers file trusting one passkey on `http://localhost:PORT`, in `dir`.
fn approvers(dir: &Path, port: u16) -> std::path::PathBuf {
    let alice = SoftPasskey::new(1, "alice@example.com", "localhost");
    let path = dir.join("approvers");
    let line = alice.allowed_signers_line(&format!("http://localhost:{port}"));
    std::fs::write(&path, line + "\n").unwrap();
    path
}

/// `serve` on `ip` and `port`, over a store and an approvers file in `dir`.
fn serve(dir: &Path, ip: &str, port: u16) -> Command {
    let mut command = cli();
    command
        .arg("--store")
        .arg(dir.join("store"))
        .arg("--approvers")
        .arg(approvers(dir, port))
        .args(["serve", "--listen", &format!("{ip}:{port}")]);
    command
}

/// `passkey enroll` on `listen`.
fn enroll(listen: &str) -> Command {
    let mut command = cli();
    command.args(["passkey", "enroll", "alice@example.com", "--listen", listen]);
    command
}

/// Runs `command` until it says it serves (then it is returned, running) or exits (its exit
/// code and stderr).
#[allow(
    clippy::zombie_processes,
    reason = "the child is returned running, or waited for once it has ended"
)]
fn started(mut command: Command, says: &str) -> Result<Child, (Option<i32>, String)> {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            let code = child.wait().unwrap().code();
            return Err((code, printed));
        }
        printed.push_str(&line);
        if line.contains(says) {
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return Ok(child);
        }
    }
}

/// Asserts `command` refuses to start because `held` is another's.
fn refuses(command: Command, says: &str, held: SocketAddr) {
    match started(command, says) {
        Ok(mut child) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("it started although another account holds {held}");
        }
        Err((code, stderr)) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains(&held.to_string()), "{stderr}");
            assert!(stderr.contains("in use"), "{stderr}");
        }
    }
}

#[test]
fn serve_refuses_to_start_when_another_account_holds_ipv6_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let held = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
    let _squatter = Squatter::hold(held);
    refuses(serve(dir.path(), "127.0.0.1", port), "serving ", held);
    assert!(
        !dir.path().join("store").exists(),
        "a refused start opens no store"
    );
}

#[test]
fn serve_refuses_to_start_when_another_account_holds_ipv4_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let held = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let _squatter = Squatter::hold(held);
    refuses(serve(dir.path(), "[::1]", port), "serving ", held);
}

#[test]
fn enroll_refuses_to_start_when_another_account_holds_either_loopback() {
    let port = free_port();
    let held = SocketAddr::from((Ipv6Addr::LOCALHOST, port));
    let squatter = Squatter::hold(held);
    refuses(enroll(&format!("127.0.0.1:{port}")), "open this link", held);
    drop(squatter);
    let port = free_port();
    let held = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let _squatter = Squatter::hold(held);
    refuses(enroll(&format!("[::1]:{port}")), "open this link", held);
}

/// The page answers on both loopback addresses of its origin.
fn answers_on_both(origin_port: u16, path: &str, status: u16) {
    for addr in [
        format!("127.0.0.1:{origin_port}"),
        format!("[::1]:{origin_port}"),
    ] {
        let mut browser = Client::new(&format!("http://localhost:{origin_port}"));
        browser.addr.clone_from(&addr);
        let page = browser.get(path);
        assert_eq!(page.status, status, "{addr}: {}", page.body);
    }
}

#[test]
fn serve_and_enroll_listen_on_both_loopback_addresses_of_localhost() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut served = started(serve(dir.path(), "127.0.0.1", port), "serving ")
        .unwrap_or_else(|(code, stderr)| panic!("serve did not start ({code:?}): {stderr}"));
    answers_on_both(port, "/signin", 200);
    served.kill().unwrap();
    served.wait().unwrap();

    let port = free_port();
    let mut enrolling = started(enroll(&format!("[::1]:{port}")), "open this link")
        .unwrap_or_else(|(code, stderr)| panic!("enroll did not start ({code:?}): {stderr}"));
    // No token: not found, from either address (the server answered, not a squatter).
    answers_on_both(port, "/enroll/not-the-token", 404);
    enrolling.kill().unwrap();
    enrolling.wait().unwrap();
}

/// The attack as the human meets it: another account serves a page on `[::1]:P`, `serve`
/// is started on `127.0.0.1:P` and prints `http://localhost:P`, and the human's Chromium
/// (which tries `[::1]` first) opens it. Either `serve` refuses to start, or what the browser
/// shows at the printed address is `serve`'s own page; never the squatter's.
#[test]
fn the_humans_browser_never_reaches_a_squatter_on_the_printed_address() {
    let Some(browser) = crate::cdp::Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _squatter = Squatter::serve(SocketAddr::from((Ipv6Addr::LOCALHOST, port)));
    match started(serve(dir.path(), "127.0.0.1", port), "serving ") {
        Err((code, stderr)) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("in use"), "{stderr}");
        }
        Ok(mut served) => {
            let page = browser.new_context().new_page();
            page.navigate(&format!("http://localhost:{port}/signin"));
            let title = page.eval("document.title");
            let _ = served.kill();
            let _ = served.wait();
            assert_ne!(
                title.as_str(),
                Some("squatted"),
                "the human's browser got the squatter's page at serve's address"
            );
        }
    }
    browser.close();
}
