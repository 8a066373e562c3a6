//! Newline-delimited JSON-RPC over a byte stream (stdio), stricter than rmcp's own.
//!
//! rmcp's stdio transport stays silent on a line that is not JSON, and its messages hold
//! `serde_json::Value`s, which silently keep the last of two equal keys. Here:
//!
//! - every line that cannot be served gets a JSON-RPC error, and the server keeps serving;
//! - each line is judged strictly before rmcp sees it ([`super::inbound`]);
//! - output goes through one writer task, so no reply is ever cut short or interleaved;
//! - end of input trips a cancellation token, so long waits end at once instead of holding
//!   the exit back.

use std::io;
use std::time::Duration;

use rmcp::model::{ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::inbound::{Inbound, classify};

/// Longest accepted line. Far above any legitimate call (a payload is at most 64 KiB of JSON
/// text, every text field at most 4 KiB), far below anything that strains memory.
pub(crate) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// How long closing waits for queued output to reach a reader that may have gone away.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The server side of the protocol over `input` and `output`, one JSON-RPC message per line.
pub(crate) struct LineTransport<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    /// Set while skipping the rest of an oversized line.
    discarding: bool,
    /// Until the first request, stray notifications and responses are dropped: rmcp ends
    /// the session if anything but a request opens it.
    seen_request: bool,
    output: Option<mpsc::UnboundedSender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    ended: CancellationToken,
}

impl<R: AsyncRead + Unpin + Send> LineTransport<R> {
    /// Starts the writer task; must be called inside a tokio runtime.
    pub(crate) fn new<W>(input: R, output: W) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            input: BufReader::new(input),
            line: Vec::new(),
            discarding: false,
            seen_request: false,
            output: Some(tx),
            writer: Some(tokio::spawn(write_lines(output, rx))),
            ended: CancellationToken::new(),
        }
    }

    /// Cancelled when the input ends.
    pub(crate) fn input_ended(&self) -> CancellationToken {
        self.ended.clone()
    }

    fn enqueue(&self, line: Vec<u8>) -> io::Result<()> {
        self.output
            .as_ref()
            .and_then(|tx| tx.send(line).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "output is closed"))
    }

    fn reply(&self, id: Option<RequestId>, error: ErrorData) {
        tracing::debug!(?id, code = error.code.0, message = %error.message, "refusing a line");
        let message = TxJsonRpcMessage::<RoleServer>::error(error, id);
        if let Err(e) = encode(&message).and_then(|line| self.enqueue(line)) {
            tracing::warn!("cannot send an error reply: {e}");
        }
    }

    /// Reads one line into `self.line`, never buffering more than [`MAX_LINE_BYTES`].
    ///
    /// Cancel-safe, as rmcp polls `receive` inside a `select!`: bytes move from the reader's
    /// buffer into `self.line` with no await in between, so a dropped call loses nothing.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (consumed, step) = {
                let available = match self.input.fill_buf().await {
                    Ok(available) => available,
                    Err(e) => return LineRead::Failed(e),
                };
                if available.is_empty() {
                    return if self.line.is_empty() || self.discarding {
                        LineRead::End
                    } else {
                        // A last line without its newline is still a line.
                        LineRead::Line
                    };
                }
                let newline = available.iter().position(|&b| b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let step = if self.discarding {
                    if newline.is_some() {
                        Step::EndDiscard
                    } else {
                        Step::More
                    }
                } else if self.line.len() + take > MAX_LINE_BYTES {
                    self.line.clear();
                    if newline.is_some() {
                        Step::Oversized
                    } else {
                        Step::OversizedDiscard
                    }
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    if newline.is_some() {
                        Step::Line
                    } else {
                        Step::More
                    }
                };
                (take, step)
            };
            self.input.consume(consumed);
            match step {
                Step::Line => return LineRead::Line,
                Step::More => {}
                Step::EndDiscard => self.discarding = false,
                Step::Oversized => return LineRead::Oversized,
                Step::OversizedDiscard => {
                    self.discarding = true;
                    return LineRead::Oversized;
                }
            }
        }
    }
}

enum LineRead {
    Line,
    Oversized,
    End,
    Failed(io::Error),
}

enum Step {
    Line,
    More,
    EndDiscard,
    Oversized,
    OversizedDiscard,
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        std::future::ready(encode(&item).and_then(|line| self.enqueue(line)))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized => {
                    self.reply(
                        None,
                        ErrorData::invalid_request(
                            format!("message refused: longer than {MAX_LINE_BYTES} bytes"),
                            None,
                        ),
                    );
                    continue;
                }
                LineRead::End => {
                    self.ended.cancel();
                    return None;
                }
                LineRead::Failed(e) => {
                    tracing::warn!("cannot read input: {e}");
                    self.ended.cancel();
                    return None;
                }
            }
            let inbound = classify(&self.line);
            self.line.clear();
            match inbound {
                Inbound::Message(message) => {
                    if matches!(*message, JsonRpcMessage::Request(_)) {
                        self.seen_request = true;
                    } else if !self.seen_request {
                        tracing::debug!("dropping a message that arrived before any request");
                        continue;
                    }
                    return Some(*message);
                }
                Inbound::Refuse(id, error) => self.reply(id, error),
                Inbound::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // Dropping the sender lets the writer drain what is queued and stop.
        self.output = None;
        if let Some(writer) = self.writer.take()
            && tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, writer)
                .await
                .is_err()
        {
            tracing::warn!("output not drained within {CLOSE_FLUSH_TIMEOUT:?}");
        }
        Ok(())
    }
}

fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    // serde_json escapes every control character, so the line holds no newline of its own.
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        let written = match output.write_all(&line).await {
            Ok(()) if lines.is_empty() => output.flush().await,
            other => other,
        };
        if let Err(e) = written {
            tracing::warn!("cannot write output: {e}");
            return;
        }
    }
}
