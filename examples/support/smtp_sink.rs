//! A minimal SMTP server on loopback that writes every message it receives to an outbox
//! directory, one `.eml` file each: enough for `lettre` to deliver to, with no set-up.
//!
//! It speaks only what a plain (no TLS, no AUTH) client needs: EHLO/HELO, MAIL, RCPT, DATA,
//! RSET, NOOP, QUIT. It is a demo and test sink, not a mail server.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A running sink.
pub(crate) struct SmtpSink {
    addr: SocketAddr,
    outbox: PathBuf,
}

impl SmtpSink {
    /// Binds `127.0.0.1` on a free port and serves in background threads, writing messages
    /// into `outbox` (created if needed).
    pub(crate) fn start(outbox: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(outbox)?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let counter = Arc::new(AtomicU64::new(0));
        let dir = outbox.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let dir = dir.clone();
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    let _ = session(stream, &dir, &counter);
                });
            }
        });
        Ok(Self {
            addr,
            outbox: outbox.to_path_buf(),
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
}

fn session(stream: TcpStream, outbox: &Path, counter: &AtomicU64) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    let mut lines = BufReader::new(stream);
    let mut from = String::new();
    let mut to: Vec<String> = Vec::new();
    out.write_all(b"220 approval-gate-sink ESMTP ready\r\n")?;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_owned();
        let verb = command.get(..4).unwrap_or(&command).to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" | "HELO" => out.write_all(b"250 approval-gate-sink\r\n")?,
            "MAIL" => {
                from.clear();
                from.push_str(argument(&command));
                to.clear();
                out.write_all(b"250 OK\r\n")?;
            }
            "RCPT" => {
                to.push(argument(&command).to_owned());
                out.write_all(b"250 OK\r\n")?;
            }
            "DATA" => {
                out.write_all(b"354 end data with <CR><LF>.<CR><LF>\r\n")?;
                let mut body = Vec::new();
                loop {
                    let mut data = Vec::new();
                    if lines.read_until(b'\n', &mut data)? == 0 {
                        return Ok(());
                    }
                    if data == b".\r\n" || data == b".\n" {
                        break;
                    }
                    // Undo the client's dot-stuffing.
                    let data = data.strip_prefix(b".").unwrap_or(&data);
                    body.extend_from_slice(data);
                }
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let name = format!("{}-{n}.eml", std::process::id());
                let mut envelope = format!("X-Envelope-From: {from}\r\n");
                for rcpt in &to {
                    let _ = write!(envelope, "X-Envelope-To: {rcpt}\r\n");
                }
                let tmp = outbox.join(format!(".{name}.tmp"));
                let mut file = std::fs::File::create(&tmp)?;
                file.write_all(envelope.as_bytes())?;
                file.write_all(&body)?;
                file.sync_all()?;
                std::fs::rename(&tmp, outbox.join(&name))?;
                out.write_all(b"250 OK queued\r\n")?;
            }
            "RSET" => {
                from.clear();
                to.clear();
                out.write_all(b"250 OK\r\n")?;
            }
            "NOOP" => out.write_all(b"250 OK\r\n")?,
            "QUIT" => {
                out.write_all(b"221 bye\r\n")?;
                return Ok(());
            }
            _ => out.write_all(b"502 command not implemented\r\n")?,
        }
    }
}

/// What follows the colon of `MAIL FROM:<a>` or `RCPT TO:<b>`.
fn argument(command: &str) -> &str {
    command.split_once(':').map_or("", |(_, rest)| rest.trim())
}
