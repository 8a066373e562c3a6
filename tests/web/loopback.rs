//! A tiny HTTP/1.1 server on a loopback port for testing the harness itself: GET only, one
//! response per connection, each connection on a thread of its own (Chromium opens
//! connections it may never use, which must not hold up the others).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crate::cdp::TIMEOUT;

/// A response: status, extra headers, content type and body.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

impl Response {
    /// A 200 with `body` as `content_type`.
    pub(crate) fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// `self` with the header `name: value` added.
    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// The server; stops accepting when dropped.
pub(crate) struct Loopback {
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Serves `site`, which maps a request target (path and query) to a response, on a free
    /// port of 127.0.0.1.
    pub(crate) fn start(site: impl Fn(&str) -> Response + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("the bound address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let site = Arc::new(site);
        let accept = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let site = Arc::clone(&site);
                    std::thread::spawn(move || serve(&stream, &*site));
                }
            })
        };
        Self {
            port,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://localhost:PORT`: `localhost`, a secure context for WebAuthn.
    pub(crate) fn origin(&self) -> String {
        format!("http://localhost:{}", self.port)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(stream: &TcpStream, site: &dyn Fn(&str) -> Response) {
    // A connection Chromium opened ahead and never used ends here, not never.
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    // The rest of the head, up to the empty line; GET requests have no body.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let mut parts = request_line.split_whitespace();
    let response = match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => site(target),
        _ => Response {
            status: 405,
            content_type: "text/plain",
            headers: Vec::new(),
            body: b"GET only".to_vec(),
        },
    };
    let reason = match response.status {
        200 => "OK",
        404 => "Not Found",
        _ => "Other",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&response.body);
}
