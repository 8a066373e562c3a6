//! A small HTTP/1.1 client for the web server's tests: one request per connection, every
//! header chosen by the test (a forged request is a request with the wrong headers), and a
//! cookie jar that keeps what the server sets.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// A port free on both loopback addresses just now (`127.0.0.1` and `[::1]`, both of which
/// `serve` holds for `http://localhost:PORT`), for a server whose origin must be known before
/// it starts (the approvers file names it).
///
/// # Panics
///
/// If no loopback port can be bound.
#[must_use]
pub fn free_port() -> u16 {
    use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};
    loop {
        let v4 = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a loopback port");
        let port = v4.local_addr().expect("its address").port();
        if TcpListener::bind((Ipv6Addr::LOCALHOST, port)).is_ok() {
            return port;
        }
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers, names lowercased; repeated ones joined by `\n`.
    pub headers: BTreeMap<String, String>,
    /// The body as text.
    pub body: String,
}

impl Response {
    /// A header's value.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// If it is not JSON.
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// A client for one server, with the cookies it was given.
#[derive(Debug, Clone)]
pub struct Client {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The `Host` and `Origin` a browser at the server's origin would send.
    pub host: String,
    /// `http://localhost:PORT`.
    pub origin: String,
    /// Cookies set by the server, by name.
    pub cookies: BTreeMap<String, String>,
}

impl Client {
    /// A client of the server at `origin` (`http://localhost:PORT`), connecting to loopback.
    ///
    /// # Panics
    ///
    /// If `origin` has no port.
    #[must_use]
    pub fn new(origin: &str) -> Self {
        let host = origin.trim_start_matches("http://").to_owned();
        let port = host.rsplit_once(':').expect("a port").1;
        Self {
            addr: format!("127.0.0.1:{port}"),
            host,
            origin: origin.to_owned(),
            cookies: BTreeMap::new(),
        }
    }

    /// GET `path` as a browser on this origin.
    #[must_use]
    pub fn get(&mut self, path: &str) -> Response {
        self.send("GET", path, &[], None)
    }

    /// POST JSON to `path` with this origin's `Origin` and `csrf` as `X-CSRF-Token`.
    #[must_use]
    pub fn post_json(&mut self, path: &str, body: &serde_json::Value, csrf: &str) -> Response {
        let origin = self.origin.clone();
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

    /// POST a form to `path` with this origin's `Origin`.
    #[must_use]
    pub fn post_form(&mut self, path: &str, form: &str) -> Response {
        let origin = self.origin.clone();
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

    /// Any request, with exactly `headers` besides `Host`, the cookies and the length.
    ///
    /// # Panics
    ///
    /// If the server cannot be reached or answers something that is not HTTP.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        self.send_through(method, path, headers, body, |addr, request| {
            let mut stream = TcpStream::connect(addr).expect("connect to the server");
            stream
                .set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            stream.write_all(request).unwrap();
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).expect("read the response");
            raw
        })
    }

    /// [`Client::send`], the request carried by `exchange`: given the server's address and
    /// the whole request, it returns all the server answered (for a request that another
    /// process makes, byte for byte this client's).
    ///
    /// # Panics
    ///
    /// If the answer is not HTTP.
    pub fn send_through(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        exchange: impl FnOnce(&str, &[u8]) -> Vec<u8>,
    ) -> Response {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.host
        );
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            let _ = write!(request, "Cookie: {}\r\n", jar.join("; "));
        }
        for (name, value) in headers {
            let _ = write!(request, "{name}: {value}\r\n");
        }
        let body = body.unwrap_or_default();
        let _ = write!(request, "Content-Length: {}\r\n\r\n", body.len());
        let mut request = request.into_bytes();
        request.extend_from_slice(body);
        let raw = exchange(&self.addr, &request);
        let response = parse(&raw);
        if let Some(set) = response.header("set-cookie") {
            for line in set.lines() {
                let pair = line.split(';').next().unwrap_or_default();
                if let Some((name, value)) = pair.split_once('=') {
                    if value.is_empty() {
                        self.cookies.remove(name);
                    } else {
                        self.cookies.insert(name.to_owned(), value.to_owned());
                    }
                }
            }
        }
        response
    }
}

fn parse(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim().to_owned();
            headers
                .entry(name)
                .and_modify(|old| {
                    old.push('\n');
                    old.push_str(&value);
                })
                .or_insert(value);
        }
    }
    let body = if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let rest = &body[end + 2..];
        match size {
            Some(size) if size > 0 && rest.len() >= size => {
                out.extend_from_slice(&rest[..size]);
                body = rest[size..].strip_prefix(b"\r\n").unwrap_or(&rest[size..]);
            }
            _ => break,
        }
    }
    out
}
