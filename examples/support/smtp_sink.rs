//! A minimal SMTP server on loopback that writes every message it receives to an outbox
//! directory, one `.eml` file each: enough for `lettre` to deliver to, with no set-up.
//!
//! It speaks EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP and QUIT, in plain text by default. Given
//! a TLS acceptor it serves TLS from the first byte ([`Security::Implicit`], like port 465) or
//! after STARTTLS ([`Security::StartTls`], like port 587), and then also AUTH PLAIN and LOGIN,
//! remembering every login it saw. Like a careful relay, it refuses AUTH and mail before TLS in
//! STARTTLS mode, and hangs up on a client that sends anything after STARTTLS before the
//! handshake (a man in the middle injecting plaintext). It is a demo and test sink, not a mail
//! server.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One client's bytes: a TCP stream, or TLS over one.
pub(crate) trait Stream: Read + Write + Send {}

impl<T: Read + Write + Send> Stream for T {}

/// Wraps an accepted TCP stream in server-side TLS. The sink carries no TLS stack of its own
/// (the example never serves TLS); whoever starts a TLS sink supplies this.
pub(crate) type Accept = Arc<dyn Fn(TcpStream) -> io::Result<Box<dyn Stream>> + Send + Sync>;

/// How clients reach the sink.
#[derive(Clone)]
pub(crate) enum Security {
    /// Plain SMTP: no TLS, no AUTH.
    Plain,
    /// TLS from the first byte (`smtps://`).
    Implicit(Accept),
    /// Plain until STARTTLS, which must come before AUTH or MAIL (`smtp://...?tls=required`).
    StartTls(Accept),
}

/// A user name and password a client authenticated with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Login {
    pub(crate) user: String,
    pub(crate) password: String,
}

/// A running sink.
pub(crate) struct SmtpSink {
    addr: SocketAddr,
    outbox: PathBuf,
    logins: Arc<Mutex<Vec<Login>>>,
}

/// What one session's threads share.
struct Shared {
    outbox: PathBuf,
    security: Security,
    counter: AtomicU64,
    logins: Arc<Mutex<Vec<Login>>>,
}

impl SmtpSink {
    /// Binds `127.0.0.1` on a free port and serves plain SMTP in background threads, writing
    /// messages into `outbox` (created if needed).
    pub(crate) fn start(outbox: &Path) -> io::Result<Self> {
        Self::start_with(outbox, Security::Plain)
    }

    /// Like [`SmtpSink::start`], reached as `security` says.
    pub(crate) fn start_with(outbox: &Path, security: Security) -> io::Result<Self> {
        std::fs::create_dir_all(outbox)?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let logins = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            outbox: outbox.to_path_buf(),
            security,
            counter: AtomicU64::new(0),
            logins: Arc::clone(&logins),
        });
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = session(&stream, &shared);
                });
            }
        });
        Ok(Self {
            addr,
            outbox: outbox.to_path_buf(),
            logins,
        })
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where delivered messages are written.
    pub(crate) fn outbox(&self) -> &Path {
        &self.outbox
    }

    /// Every login clients made, in order.
    pub(crate) fn logins(&self) -> Vec<Login> {
        self.logins.lock().unwrap().clone()
    }
}

type Connection = BufReader<Box<dyn Stream>>;

fn reply(conn: &mut Connection, text: &str) -> io::Result<()> {
    let out = conn.get_mut();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\r\n")?;
    out.flush()
}

fn read_line(conn: &mut Connection) -> io::Result<Option<String>> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end().to_owned()))
}

fn session(tcp: &TcpStream, shared: &Shared) -> io::Result<()> {
    let (mut conn, mut tls): (Connection, bool) = match &shared.security {
        Security::Implicit(accept) => (BufReader::new(accept(tcp.try_clone()?)?), true),
        Security::Plain | Security::StartTls(_) => {
            (BufReader::new(Box::new(tcp.try_clone()?)), false)
        }
    };
    // Only STARTTLS mode has a phase in which mail and passwords must wait for TLS.
    let needs_starttls = matches!(shared.security, Security::StartTls(_));
    let mut from = String::new();
    let mut to: Vec<String> = Vec::new();
    reply(&mut conn, "220 approval-gate-sink ESMTP ready")?;
    loop {
        let Some(command) = read_line(&mut conn)? else {
            return Ok(());
        };
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let before_tls = needs_starttls && !tls;
        match verb.as_str() {
            "EHLO" => {
                let mut lines = vec!["approval-gate-sink"];
                if before_tls {
                    lines.push("STARTTLS");
                }
                if tls {
                    lines.push("AUTH PLAIN LOGIN");
                }
                let last = lines.len() - 1;
                let mut text = String::new();
                for (i, line) in lines.iter().enumerate() {
                    let sep = if i == last { ' ' } else { '-' };
                    let _ = write!(text, "250{sep}{line}\r\n");
                }
                reply(&mut conn, text.trim_end())?;
            }
            "HELO" => reply(&mut conn, "250 approval-gate-sink")?,
            "STARTTLS" if before_tls => {
                if !conn.buffer().is_empty() {
                    // Bytes sent before the handshake would be read as if they came over TLS.
                    reply(
                        &mut conn,
                        "501 5.5.2 nothing may follow STARTTLS before TLS",
                    )?;
                    return Ok(());
                }
                reply(&mut conn, "220 2.0.0 ready to start TLS")?;
                let Security::StartTls(accept) = &shared.security else {
                    unreachable!("before_tls holds only in STARTTLS mode")
                };
                conn = BufReader::new(accept(tcp.try_clone()?)?);
                tls = true;
                // RFC 3207: everything learnt before TLS is forgotten.
                from.clear();
                to.clear();
            }
            "AUTH" | "MAIL" | "RCPT" | "DATA" if before_tls => {
                reply(&mut conn, "530 5.7.0 must issue a STARTTLS command first")?;
            }
            "AUTH" if tls => match authenticate(&mut conn, &command)? {
                Some(login) => {
                    shared.logins.lock().unwrap().push(login);
                    reply(&mut conn, "235 2.7.0 authentication succeeded")?;
                }
                None => reply(&mut conn, "501 5.5.2 cannot decode the credentials")?,
            },
            "MAIL" => {
                from.clear();
                from.push_str(argument(&command));
                to.clear();
                reply(&mut conn, "250 OK")?;
            }
            "RCPT" => {
                to.push(argument(&command).to_owned());
                reply(&mut conn, "250 OK")?;
            }
            "DATA" => {
                reply(&mut conn, "354 end data with <CR><LF>.<CR><LF>")?;
                let Some(body) = read_data(&mut conn)? else {
                    return Ok(());
                };
                deliver(shared, &from, &to, &body)?;
                reply(&mut conn, "250 OK queued")?;
            }
            "RSET" => {
                from.clear();
                to.clear();
                reply(&mut conn, "250 OK")?;
            }
            "NOOP" => reply(&mut conn, "250 OK")?,
            "QUIT" => {
                reply(&mut conn, "221 bye")?;
                return Ok(());
            }
            _ => reply(&mut conn, "502 command not implemented")?,
        }
    }
}

/// Reads the message after DATA up to the lone dot; `None` if the client hung up first.
fn read_data(conn: &mut Connection) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    loop {
        let mut data = Vec::new();
        if conn.read_until(b'\n', &mut data)? == 0 {
            return Ok(None);
        }
        if data == b".\r\n" || data == b".\n" {
            return Ok(Some(body));
        }
        // Undo the client's dot-stuffing.
        let data = data.strip_prefix(b".").unwrap_or(&data);
        body.extend_from_slice(data);
    }
}

fn deliver(shared: &Shared, from: &str, to: &[String], body: &[u8]) -> io::Result<()> {
    let n = shared.counter.fetch_add(1, Ordering::SeqCst);
    let name = format!("{}-{n}.eml", std::process::id());
    let mut envelope = format!("X-Envelope-From: {from}\r\n");
    for rcpt in to {
        let _ = write!(envelope, "X-Envelope-To: {rcpt}\r\n");
    }
    let tmp = shared.outbox.join(format!(".{name}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(envelope.as_bytes())?;
    file.write_all(body)?;
    file.sync_all()?;
    std::fs::rename(&tmp, shared.outbox.join(&name))
}

/// Runs `AUTH PLAIN` (with or without an initial response) or `AUTH LOGIN`; `None` if the
/// client's answers do not decode.
fn authenticate(conn: &mut Connection, command: &str) -> io::Result<Option<Login>> {
    let mut words = command.split_whitespace().skip(1);
    let mechanism = words.next().unwrap_or_default().to_ascii_uppercase();
    let initial = words.next().map(str::to_owned);
    match mechanism.as_str() {
        "PLAIN" => {
            let response = if let Some(response) = initial {
                response
            } else {
                reply(conn, "334 ")?;
                read_line(conn)?.unwrap_or_default()
            };
            // authorization identity NUL user NUL password
            let Some(text) = base64(&response).and_then(|b| String::from_utf8(b).ok()) else {
                return Ok(None);
            };
            let mut parts = text.split('\0').skip(1);
            Ok(match (parts.next(), parts.next()) {
                (Some(user), Some(password)) => Some(Login {
                    user: user.to_owned(),
                    password: password.to_owned(),
                }),
                _ => None,
            })
        }
        "LOGIN" => {
            reply(conn, "334 VXNlcm5hbWU6")?;
            let user = read_line(conn)?.unwrap_or_default();
            reply(conn, "334 UGFzc3dvcmQ6")?;
            let password = read_line(conn)?.unwrap_or_default();
            let decode = |s: &str| base64(s).and_then(|b| String::from_utf8(b).ok());
            Ok(decode(&user)
                .zip(decode(&password))
                .map(|(user, password)| Login { user, password }))
        }
        _ => Ok(None),
    }
}

/// Standard base64 with padding, as SMTP AUTH uses it.
fn base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

/// What follows the colon of `MAIL FROM:<a>` or `RCPT TO:<b>`.
fn argument(command: &str) -> &str {
    command.split_once(':').map_or("", |(_, rest)| rest.trim())
}
