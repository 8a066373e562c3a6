//! One websocket to the browser endpoint, shared by every session on it (flattened sessions:
//! a target's messages carry its `sessionId`), and the reader thread that hands responses to
//! their callers by id and events to their subscribers by session and method.
//!
//! The socket is split in two: the reader thread owns a `WebSocket` reading one clone of the
//! TCP stream, callers write commands through another `WebSocket` over a second clone, behind
//! a mutex. The reader only ever writes to answer a ping or a close, which Chromium's
//! DevTools server does not send.

use std::collections::HashMap;
use std::fmt;
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

/// What went wrong with a command: Chromium's own error, an exception in the page, no answer
/// in time, or no browser any more.
#[derive(Debug, Clone)]
pub(crate) enum CdpError {
    /// The protocol's error response to `method`.
    Protocol {
        method: String,
        code: i64,
        message: String,
    },
    /// Script evaluated in the page threw (or its promise rejected): the exception's text.
    Exception(String),
    /// No answer (or no event) within the bound; with the end of Chromium's stderr.
    Timeout {
        what: String,
        after: Duration,
        stderr: String,
    },
    /// The connection is gone: Chromium exited or closed it. Says why, with Chromium's stderr.
    Closed(String),
}

impl fmt::Display for CdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Protocol {
                method,
                code,
                message,
            } => write!(f, "{method} failed: {message} (code {code})"),
            Self::Exception(text) => write!(f, "the page threw: {text}"),
            Self::Timeout {
                what,
                after,
                stderr,
            } => write!(f, "{what}: no answer within {after:?}\n{stderr}"),
            Self::Closed(why) => write!(f, "the DevTools connection is closed: {why}"),
        }
    }
}

impl std::error::Error for CdpError {}

/// A console message, log entry or uncaught exception of one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsoleEntry {
    /// `error`, `warning`, `info`, `log`, `debug`… (`error` for an uncaught exception).
    pub(crate) level: String,
    /// Where it came from: `console-api`, `exception`, or the Log domain's source
    /// (`security` for CSP violations, `network`, `javascript`, `violation`…).
    pub(crate) source: String,
    pub(crate) text: String,
}

impl fmt::Display for ConsoleEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} {}] {}", self.level, self.source, self.text)
    }
}

type Reply = Result<Value, CdpError>;

struct Subscriber {
    key: u64,
    session: Option<String>,
    methods: Vec<String>,
    events: Sender<Value>,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, (String, Sender<Reply>)>,
    subscribers: Vec<Subscriber>,
    console: HashMap<String, Vec<ConsoleEntry>>,
    closed: Option<String>,
}

/// The connection: the writing half of the websocket and the state the reader fills in.
pub(crate) struct Connection {
    writer: Mutex<WebSocket<TcpStream>>,
    state: Arc<Mutex<State>>,
    next_id: AtomicU64,
    stderr: Arc<Mutex<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Connects to `ws://HOST:PORT/PATH` (the browser endpoint Chromium printed) and starts the
    /// reader thread. `stderr` is Chromium's stderr so far, quoted when the connection fails.
    pub(crate) fn open(
        url: &str,
        stderr: Arc<Mutex<String>>,
        timeout: Duration,
    ) -> Result<(Arc<Self>, JoinHandle<()>), String> {
        let address = url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| format!("not a ws:// URL: {url}"))?;
        let stream = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        // Bounded handshake; then the reader blocks for as long as the browser lives.
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        // Screenshots of long pages come as one large message.
        let config = WebSocketConfig::default()
            .max_message_size(Some(1 << 30))
            .max_frame_size(Some(1 << 30));
        let (reader, _response) =
            tungstenite::client::client_with_config(url, stream, Some(config))
                .map_err(|e| format!("websocket handshake with {url}: {e}"))?;
        reader
            .get_ref()
            .set_read_timeout(None)
            .map_err(|e| e.to_string())?;
        let write_half = reader.get_ref().try_clone().map_err(|e| e.to_string())?;
        let writer = WebSocket::from_raw_socket(write_half, Role::Client, Some(config));
        let state = Arc::new(Mutex::new(State::default()));
        let thread = {
            let state = Arc::clone(&state);
            std::thread::Builder::new()
                .name("cdp-reader".into())
                .spawn(move || read_loop(reader, &state))
                .map_err(|e| e.to_string())?
        };
        let connection = Arc::new(Self {
            writer: Mutex::new(writer),
            state,
            next_id: AtomicU64::new(1),
            stderr,
        });
        Ok((connection, thread))
    }

    /// Sends `method` on `session` (the browser's own session if `None`) and waits up to
    /// `timeout` for its response.
    pub(crate) fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        let (id, replies) = self.send(session, method, params)?;
        match replies.recv_timeout(timeout) {
            Ok(reply) => reply,
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.state).pending.remove(&id);
                Err(CdpError::Timeout {
                    what: method.to_owned(),
                    after: timeout,
                    stderr: self.stderr_tail(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.closed()),
        }
    }

    /// Sends `method` without waiting for its response (for clean-ups in `Drop`, which must
    /// not block on a browser that may be gone); errors are ignored.
    pub(crate) fn send_and_forget(&self, session: Option<&str>, method: &str, params: Value) {
        if let Ok((id, _replies)) = self.send(session, method, params) {
            lock(&self.state).pending.remove(&id);
        }
    }

    fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<(u64, Receiver<Reply>), CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, replies) = mpsc::channel();
        {
            let mut state = lock(&self.state);
            if state.closed.is_some() {
                drop(state);
                return Err(self.closed());
            }
            state.pending.insert(id, (method.to_owned(), sender));
        }
        let mut message = serde_json::Map::new();
        message.insert("id".into(), id.into());
        message.insert("method".into(), method.into());
        message.insert("params".into(), params);
        if let Some(session) = session {
            message.insert("sessionId".into(), session.into());
        }
        let sent = lock(&self.writer).send(Message::text(Value::Object(message).to_string()));
        if let Err(error) = sent {
            let mut state = lock(&self.state);
            state.pending.remove(&id);
            state
                .closed
                .get_or_insert_with(|| format!("sending {method}: {error}"));
            drop(state);
            return Err(self.closed());
        }
        Ok((id, replies))
    }

    /// Events named in `methods` on `session`, from now on, in the order they arrive.
    pub(crate) fn subscribe(&self, session: Option<&str>, methods: &[&str]) -> Subscription<'_> {
        static KEYS: AtomicU64 = AtomicU64::new(0);
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        let (sender, events) = mpsc::channel();
        let mut state = lock(&self.state);
        // On a closed connection the sender is dropped here: `next` fails at once.
        if state.closed.is_none() {
            state.subscribers.push(Subscriber {
                key,
                session: session.map(str::to_owned),
                methods: methods.iter().map(|&m| m.to_owned()).collect(),
                events: sender,
            });
        }
        drop(state);
        Subscription {
            connection: self,
            key,
            events,
        }
    }

    /// What `session` has logged so far (console, Log domain, uncaught exceptions).
    pub(crate) fn console(&self, session: &str) -> Vec<ConsoleEntry> {
        lock(&self.state)
            .console
            .get(session)
            .cloned()
            .unwrap_or_default()
    }

    /// Drops what `session` logged (its page is closed).
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.state).console.remove(session);
    }

    /// The error for a closed connection: why, and the end of Chromium's stderr.
    pub(crate) fn closed(&self) -> CdpError {
        let why = lock(&self.state)
            .closed
            .clone()
            .unwrap_or_else(|| "the reader stopped".to_owned());
        CdpError::Closed(format!("{why}\n{}", self.stderr_tail()))
    }

    /// The last lines of Chromium's stderr, for failure messages.
    pub(crate) fn stderr_tail(&self) -> String {
        stderr_tail(&self.stderr)
    }

    /// Ends the connection: the reader thread sees the socket shut and stops.
    pub(crate) fn shut_down(&self) {
        let writer = lock(&self.writer);
        let _ = writer.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// The last 4 KiB of Chromium's stderr, without the D-Bus complaints of a machine with no bus.
pub(crate) fn stderr_tail(stderr: &Mutex<String>) -> String {
    let all = lock(stderr);
    let useful: Vec<&str> = all.lines().filter(|line| !line.contains("dbus")).collect();
    let text = useful.join("\n");
    let start = text.len().saturating_sub(4096);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    format!(
        "Chromium's stderr (D-Bus lines left out) ends:\n{}",
        &text[start..]
    )
}

/// Events of one subscription; unsubscribes when dropped.
pub(crate) struct Subscription<'c> {
    connection: &'c Connection,
    key: u64,
    events: Receiver<Value>,
}

impl Subscription<'_> {
    /// The next event (the whole message: `method`, `params`), waiting until `deadline`;
    /// `what` names the wait in the timeout error.
    pub(crate) fn next(&self, deadline: Instant, what: &str) -> Result<Value, CdpError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(left) {
            Ok(event) => Ok(event),
            Err(RecvTimeoutError::Timeout) => Err(CdpError::Timeout {
                what: what.to_owned(),
                after: left,
                stderr: self.connection.stderr_tail(),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(self.connection.closed()),
        }
    }
}

impl Drop for Subscription<'_> {
    fn drop(&mut self) {
        lock(&self.connection.state)
            .subscribers
            .retain(|subscriber| subscriber.key != self.key);
    }
}

fn read_loop(mut socket: WebSocket<TcpStream>, state: &Mutex<State>) {
    let why = loop {
        match socket.read() {
            Ok(Message::Text(text)) => match serde_json::from_str::<Value>(text.as_str()) {
                Ok(message) => dispatch(state, message),
                Err(error) => break format!("Chromium sent something that is not JSON: {error}"),
            },
            Ok(Message::Close(frame)) => {
                break format!("Chromium closed the websocket ({frame:?})");
            }
            Ok(_) => {}
            Err(error) => break format!("reading the websocket: {error}"),
        }
    };
    let mut state = lock(state);
    state.closed.get_or_insert(why);
    // Dropping the senders wakes every caller and subscriber with `Disconnected`.
    state.pending.clear();
    state.subscribers.clear();
}

fn dispatch(state: &Mutex<State>, mut message: Value) {
    let mut state = lock(state);
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        if let Some((method, reply)) = state.pending.remove(&id) {
            let outcome = match message.get_mut("error") {
                Some(error) => Err(CdpError::Protocol {
                    method,
                    code: error["code"].as_i64().unwrap_or_default(),
                    message: {
                        let text = error["message"].as_str().unwrap_or_default();
                        match error.get("data").and_then(Value::as_str) {
                            Some(data) => format!("{text} ({data})"),
                            None => text.to_owned(),
                        }
                    },
                }),
                None => Ok(message["result"].take()),
            };
            let _ = reply.send(outcome);
        }
        return;
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return;
    };
    let session = message.get("sessionId").and_then(Value::as_str);
    if let (Some(session), Some(entry)) = (session, console_entry(method, &message["params"])) {
        state
            .console
            .entry(session.to_owned())
            .or_default()
            .push(entry);
    }
    let wanted: Vec<usize> = (0..state.subscribers.len())
        .filter(|&i| {
            let subscriber = &state.subscribers[i];
            subscriber.session.as_deref() == session
                && subscriber.methods.iter().any(|m| m == method)
        })
        .collect();
    for i in wanted {
        let _ = state.subscribers[i].events.send(message.clone());
    }
}

/// The console entry an event stands for, if it is one.
fn console_entry(method: &str, params: &Value) -> Option<ConsoleEntry> {
    let string = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    match method {
        "Runtime.consoleAPICalled" => {
            let text = params["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| match arg.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => string(&arg["description"]),
                })
                .collect::<Vec<_>>()
                .join(" ");
            let level = match params["type"].as_str() {
                Some("warning") => "warning".to_owned(),
                Some("error" | "assert") => "error".to_owned(),
                Some(other) => other.to_owned(),
                None => String::new(),
            };
            Some(ConsoleEntry {
                level,
                source: "console-api".to_owned(),
                text,
            })
        }
        "Runtime.exceptionThrown" => Some(ConsoleEntry {
            level: "error".to_owned(),
            source: "exception".to_owned(),
            text: exception_text(&params["exceptionDetails"]),
        }),
        "Log.entryAdded" => {
            let entry = &params["entry"];
            let mut text = string(&entry["text"]);
            if let Some(url) = entry.get("url").and_then(Value::as_str) {
                text = format!("{text} ({url})");
            }
            Some(ConsoleEntry {
                level: string(&entry["level"]),
                source: string(&entry["source"]),
                text,
            })
        }
        _ => None,
    }
}

/// The text of `Runtime.ExceptionDetails`: the exception's description (message and stack)
/// where there is one, else the protocol's summary.
pub(crate) fn exception_text(details: &Value) -> String {
    let exception = &details["exception"];
    if let Some(description) = exception.get("description").and_then(Value::as_str) {
        return description.to_owned();
    }
    if let Some(value) = exception.get("value") {
        return format!("{} {value}", details["text"].as_str().unwrap_or("Uncaught"));
    }
    details["text"].as_str().unwrap_or_default().to_owned()
}
