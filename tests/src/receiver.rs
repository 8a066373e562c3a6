//! A local HTTP/1.1 receiver for the notifier's tests: it records every request that reaches
//! it and answers each by the test's script, so a test can fail deliveries, hold one open, and
//! wait until the requests it expects have arrived.
//!
//! ```no_run
//! use approval_gate_tests::receiver::{Receiver, Reply};
//! // Fails the first two attempts of each webhook-id, accepts the third.
//! let receiver = Receiver::start(|request, earlier| {
//!     let key = request.header("webhook-id");
//!     let tries = earlier.iter().filter(|r| r.header("webhook-id") == key).count();
//!     if tries < 2 { Reply::Status(503) } else { Reply::Status(204) }
//! });
//! let url = receiver.url(); // http://127.0.0.1:PORT/
//! // ... start the notifier with a webhook channel on `url`, file requests ...
//! let seen = receiver.wait_for(3);
//! assert_eq!(seen[2].reply, Reply::Status(204));
//! ```
//!
//! Every connection has its own thread, so a held connection holds up no other. Waits are
//! bounded by [`WAIT_BOUND`]: a wait that runs out fails the test, saying what was received.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The longest a wait may take before it fails the test: far longer than any healthy run
/// needs, so it bounds a hang without timing anything.
pub const WAIT_BOUND: Duration = Duration::from_secs(60);

/// The longest request body the receiver reads.
const MAX_BODY: usize = 1 << 20;

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Answer with this status (and an empty body).
    Status(u16),
    /// Answer nothing and keep the connection open until [`Receiver::release`] (or the
    /// receiver is dropped), then close it without an answer.
    Hold,
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its place in arrival order, from 0.
    pub index: usize,
    /// `POST`, `GET`, ...
    pub method: String,
    /// The request target, e.g. `/hook?x=1`.
    pub path: String,
    /// Headers, names lowercased; a repeated header keeps its last value.
    pub headers: BTreeMap<String, String>,
    /// The body, as sent.
    pub body: Vec<u8>,
    /// When its body had been read.
    pub at: Instant,
    /// How the script said to answer it.
    pub reply: Reply,
}

impl Received {
    /// A header's value (`name` lowercase).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The body as UTF-8 text.
    ///
    /// # Panics
    ///
    /// If it is not UTF-8.
    #[must_use]
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("a UTF-8 body")
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// If it is not JSON.
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Whether it was answered 2xx: the sender had it delivered.
    #[must_use]
    pub fn accepted(&self) -> bool {
        matches!(self.reply, Reply::Status(200..=299))
    }
}

/// The test's script: given a request and every request before it, how to answer.
type Script = dyn Fn(&Received, &[Received]) -> Reply + Send + Sync;

struct State {
    received: Vec<Received>,
    released: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    script: Box<Script>,
    stopping: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running receiver on `127.0.0.1`, stopped when dropped.
pub struct Receiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Receiver {
    /// Starts a receiver on a free loopback port that answers each request as `script` says.
    /// `script` is given the request and every earlier one (in arrival order), and runs under
    /// the receiver's lock: keep it quick.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound.
    #[must_use]
    pub fn start(script: impl Fn(&Received, &[Received]) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                received: Vec::new(),
                released: false,
            }),
            changed: Condvar::new(),
            script: Box::new(script),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&accepting);
                thread::spawn(move || serve(&shared, stream));
            }
        });
        Self { addr, shared }
    }

    /// A receiver that accepts everything with 204.
    #[must_use]
    pub fn accepting() -> Self {
        Self::start(|_, _| Reply::Status(204))
    }

    /// `http://127.0.0.1:PORT/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Every request received so far, in arrival order.
    #[must_use]
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    /// Waits until at least `n` requests have arrived; returns all received.
    ///
    /// # Panics
    ///
    /// If they have not within [`WAIT_BOUND`].
    #[must_use]
    pub fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait_until(&format!("{n} requests"), |received| received.len() >= n)
    }

    /// Waits until `done` holds of the requests received; returns them. `what` names the
    /// awaited state in the failure.
    ///
    /// # Panics
    ///
    /// If it does not hold within [`WAIT_BOUND`].
    pub fn wait_until(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + WAIT_BOUND;
        let mut state = self.shared.lock();
        loop {
            if done(&state.received) {
                return state.received.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the receiver waited {WAIT_BOUND:?} for {what}; it had {} request(s): {:?}",
                state.received.len(),
                state
                    .received
                    .iter()
                    .map(|r| (
                        r.method.as_str(),
                        r.path.as_str(),
                        r.header("webhook-id"),
                        r.reply
                    ))
                    .collect::<Vec<_>>()
            );
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Closes every held connection, and every later [`Reply::Hold`] at once, unanswered.
    pub fn release(&self) {
        self.shared.lock().released = true;
        self.shared.changed.notify_all();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.release();
        // Wakes the accept loop so it sees `stopping`.
        drop(TcpStream::connect(self.addr));
    }
}

/// Serves one connection: requests one after another (keep-alive) until it closes.
fn serve(shared: &Shared, stream: TcpStream) {
    let Ok(write) = stream.try_clone() else {
        return;
    };
    let mut write = write;
    let mut read = BufReader::new(stream);
    while let Some(mut request) = read_request(&mut read) {
        let reply = {
            let mut state = shared.lock();
            request.index = state.received.len();
            request.reply = (shared.script)(&request, &state.received);
            state.received.push(request);
            shared.changed.notify_all();
            state.received.last().map_or(Reply::Hold, |r| r.reply)
        };
        match reply {
            Reply::Status(status) => {
                let answer = format!(
                    "HTTP/1.1 {status} {}\r\ncontent-length: 0\r\n\r\n",
                    reason(status)
                );
                if write.write_all(answer.as_bytes()).is_err() {
                    return;
                }
            }
            Reply::Hold => {
                let mut state = shared.lock();
                while !state.released {
                    state = shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                drop(state);
                let _ = write.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}

/// The next request (its index and reply still to be set), or `None` at the connection's end
/// or on anything this small server does not read (chunked bodies included).
fn read_request(read: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    if read.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers
        .get("content-length")
        .map_or(Some(0), |v| v.parse().ok())?;
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    read.read_exact(&mut body).ok()?;
    Some(Received {
        index: 0,
        method,
        path,
        headers,
        body,
        at: Instant::now(),
        reply: Reply::Hold,
    })
}

/// The reason phrase of the few statuses tests answer.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str, key: &str, body: &str) -> Option<u16> {
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "POST /hook HTTP/1.1\r\nHost: x\r\nWebhook-Id: {key}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let mut read = BufReader::new(stream);
        read.read_line(&mut answer).ok()?;
        answer.split_whitespace().nth(1)?.parse().ok()
    }

    #[test]
    fn it_records_requests_and_answers_by_the_script() {
        let receiver = Receiver::start(|request, earlier| {
            let tries = earlier
                .iter()
                .filter(|r| r.header("webhook-id") == request.header("webhook-id"))
                .count();
            Reply::Status(if tries < 2 { 503 } else { 204 })
        });
        let url = receiver.url();
        assert_eq!(post(&url, "a", "{}"), Some(503));
        assert_eq!(post(&url, "a", "{}"), Some(503));
        assert_eq!(post(&url, "b", "{}"), Some(503));
        assert_eq!(post(&url, "a", "{\"x\":1}"), Some(204));
        let seen = receiver.wait_for(4);
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[3].index, 3);
        assert_eq!(seen[3].method, "POST");
        assert_eq!(seen[3].path, "/hook");
        assert_eq!(seen[3].header("webhook-id"), Some("a"));
        assert_eq!(seen[3].json()["x"], 1);
        assert!(seen[3].accepted());
        assert!(!seen[0].accepted());
    }

    #[test]
    fn a_held_request_is_closed_unanswered_when_released() {
        let receiver = Receiver::start(|_, _| Reply::Hold);
        let url = receiver.url();
        let sender = thread::spawn(move || post(&url, "k", ""));
        let seen = receiver.wait_for(1);
        assert_eq!(seen[0].reply, Reply::Hold);
        receiver.release();
        assert_eq!(sender.join().unwrap(), None);
    }
}
