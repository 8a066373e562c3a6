//! rmcp's own stdio transport, with a strict reader in front of it.
//!
//! rmcp's [`AsyncRwTransport`] writes every message: one JSON line each, through its own
//! codec and writer. Only reading is ours, because rmcp's reader parses each line straight
//! into `serde_json::Value`s, which silently keep the last of two equal keys, and stays
//! silent on a line that is not JSON. Here each line is judged by [`super::inbound`] before
//! rmcp sees it:
//!
//! - a line that cannot be served gets a JSON-RPC error, and the server keeps serving;
//! - a `tools/call` carries the exact text of its `payload` argument along;
//! - end of input trips a cancellation token, so long waits end at once instead of holding
//!   the exit back.
//!
//! Lines are framed by tokio-util's [`FramedRead`] with a [`Decoder`] that bounds their
//! length and, unlike tokio-util's `LinesCodec`, reports an oversized line as a line (an
//! error would end the stream).

use std::io;

use futures_util::StreamExt;
use rmcp::model::{ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use super::inbound::{Inbound, classify};

/// Longest accepted line. Far above any legitimate call (a payload is at most 64 KiB of JSON
/// text, every text field at most 4 KiB), far below anything that strains memory.
pub(crate) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The server side of the protocol over `input` and `output`, one JSON-RPC message per line.
pub(crate) struct StrictTransport<R, W: AsyncWrite> {
    lines: FramedRead<R, Lines>,
    /// rmcp's transport, used only to write: its reader reads nothing.
    output: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
    /// Error replies to refused lines, sent off `receive`, which rmcp may cancel at any await.
    replies: JoinSet<()>,
    /// Until the first request, stray notifications and responses are dropped: rmcp ends
    /// the session if anything but a request opens it.
    seen_request: bool,
    ended: CancellationToken,
}

impl<R, W> StrictTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(input: R, output: W) -> Self {
        Self {
            lines: FramedRead::new(input, Lines::default()),
            output: AsyncRwTransport::new_server(tokio::io::empty(), output),
            replies: JoinSet::new(),
            seen_request: false,
            ended: CancellationToken::new(),
        }
    }

    /// Cancelled when the input ends.
    pub(crate) fn input_ended(&self) -> CancellationToken {
        self.ended.clone()
    }

    fn reply(&mut self, id: Option<RequestId>, error: ErrorData) {
        tracing::debug!(?id, code = error.code.0, problem = %error.message, "refusing a line");
        let send = self
            .output
            .send(TxJsonRpcMessage::<RoleServer>::error(error, id));
        while self.replies.try_join_next().is_some() {}
        self.replies.spawn(async move {
            if let Err(e) = send.await {
                tracing::warn!("cannot send an error reply: {e}");
            }
        });
    }
}

impl<R, W> Transport<RoleServer> for StrictTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        self.output.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Cancel-safe: a frame leaves the reader's buffer only when it is returned here.
            let line = match self.lines.next().await {
                Some(Ok(Line::Text(line))) => line,
                Some(Ok(Line::Oversized)) => {
                    self.reply(
                        None,
                        ErrorData::invalid_request(
                            format!("message refused: longer than {MAX_LINE_BYTES} bytes"),
                            None,
                        ),
                    );
                    continue;
                }
                Some(Err(e)) => {
                    tracing::warn!("cannot read input: {e}");
                    self.ended.cancel();
                    return None;
                }
                None => {
                    self.ended.cancel();
                    return None;
                }
            };
            match classify(&line) {
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
        while self.replies.join_next().await.is_some() {}
        self.output.close().await
    }
}

/// One input line, or the news that one was too long (and skipped).
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(BytesMut),
    Oversized,
}

/// Splits input at `\n`, keeping at most [`MAX_LINE_BYTES`] of any line in memory.
#[derive(Debug, Default)]
struct Lines {
    /// How far the buffer is known to hold no newline.
    searched: usize,
    /// Set while skipping the rest of an oversized line.
    discarding: bool,
}

impl Decoder for Lines {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        loop {
            let newline = buf[self.searched..].iter().position(|&b| b == b'\n');
            match (newline, self.discarding) {
                (Some(at), true) => {
                    buf.advance(self.searched + at + 1);
                    self.searched = 0;
                    self.discarding = false;
                }
                (Some(at), false) => {
                    let line = buf.split_to(self.searched + at + 1);
                    self.searched = 0;
                    if line.len() > MAX_LINE_BYTES {
                        return Ok(Some(Line::Oversized));
                    }
                    return Ok(Some(Line::Text(line)));
                }
                (None, true) => {
                    buf.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                (None, false) if buf.len() > MAX_LINE_BYTES => {
                    buf.clear();
                    self.searched = 0;
                    self.discarding = true;
                    return Ok(Some(Line::Oversized));
                }
                (None, false) => {
                    self.searched = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        match self.decode(buf)? {
            Some(line) => Ok(Some(line)),
            // A last line without its newline is still a line.
            None if !buf.is_empty() => {
                self.searched = 0;
                Ok(Some(Line::Text(buf.split())))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], chunk: usize) -> Vec<Line> {
        let mut lines = Lines::default();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(line) = lines.decode(&mut buf).unwrap() {
                out.push(line);
            }
        }
        while let Some(line) = lines.decode_eof(&mut buf).unwrap() {
            out.push(line);
        }
        out
    }

    fn text(line: &str) -> Line {
        Line::Text(BytesMut::from(line))
    }

    #[test]
    fn splits_lines_in_any_chunking() {
        for chunk in [1, 3, 1024] {
            assert_eq!(
                decode_all(b"a\n\nbc\r\nlast", chunk),
                [text("a\n"), text("\n"), text("bc\r\n"), text("last")],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn skips_oversized_lines_and_keeps_going() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\nok\n");
        for chunk in [64 * 1024, MAX_LINE_BYTES + 20] {
            assert_eq!(
                decode_all(&input, chunk),
                [Line::Oversized, text("ok\n")],
                "chunk {chunk}"
            );
        }
        let mut exact = vec![b'y'; MAX_LINE_BYTES - 1];
        exact.push(b'\n');
        assert_eq!(decode_all(&exact, 4096).len(), 1);
        assert_ne!(decode_all(&exact, 4096)[0], Line::Oversized);
    }
}
