//! The server's connections: each one's TLS handshake and request head within a time limit,
//! heads as large as a browser sends, and a cap on how many are open that keeps the approver
//! served.
//!
//! At the cap, a new connection closes the oldest one that is waiting for a request (one
//! that never sent a whole request, or is idle between two): a browser opens a new one for
//! its next request, while idle sockets of another local process are what gets closed. An
//! event stream is closed only when no connection waits; a request being answered never is.
//! The cap stays below the process's open-file limit, so the server never runs out of files.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;

/// How long a client may take over its TLS handshake, and over each request's head and
/// body.
pub(crate) const REQUEST_TIME: Duration = Duration::from_secs(10);
/// The largest request head taken: what a browser sends for one host at most (Chromium keeps
/// up to 180 cookies of 4 kB for a host, some 740 kB, any port of the host may set them), with
/// room to spare. Foreign cookies are ignored; a cookie bomb set from another port must not
/// make every request fail.
pub(crate) const MAX_HEAD: usize = 1 << 20;
/// The largest request body taken: forms and passkey assertions are a few kB.
const MAX_BODY: usize = 64 * 1024;
/// Connections open at most, when the open-file limit allows.
const MAX_CONNECTIONS: usize = 256;
/// Open files kept for everything else: the store, the change feed, the runtime.
const FILES_RESERVED: u64 = 64;

/// The cap for this process: [`MAX_CONNECTIONS`], or fewer under a low open-file limit.
pub(crate) fn max_connections() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    cap_for(limit)
}

fn cap_for(open_files: Option<u64>) -> usize {
    match open_files {
        Some(files) => {
            let room = usize::try_from(files.saturating_sub(FILES_RESERVED)).unwrap_or(usize::MAX);
            room.clamp(8, MAX_CONNECTIONS)
        }
        None => MAX_CONNECTIONS,
    }
}

const WAITING: u8 = 0;
const ANSWERING: u8 = 1;
const STREAMING: u8 = 2;
const CLOSING: u8 = 3;

/// One open connection: what it is doing, and how to close it.
#[derive(Debug, Default)]
struct Connection {
    state: AtomicU8,
    close: Notify,
}

/// The open connections, by the order they were accepted.
#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Arc<Connection>>,
}

impl Table {
    /// Makes room for a new connection under `cap`: the one to close first, if any. `None`
    /// for the new connection itself when nothing may be closed (every one is answering).
    fn admit(&mut self, cap: usize) -> Option<(u64, Arc<Connection>, Option<Arc<Connection>>)> {
        let live = self
            .open
            .values()
            .filter(|c| c.state.load(Ordering::Acquire) != CLOSING)
            .count();
        let mut victim = None;
        if live >= cap {
            let oldest = |wanted: u8| {
                self.open
                    .values()
                    .find(|c| c.state.load(Ordering::Acquire) == wanted)
                    .cloned()
            };
            let closing = oldest(WAITING).or_else(|| oldest(STREAMING))?;
            closing.state.store(CLOSING, Ordering::Release);
            victim = Some(closing);
        }
        let id = self.next;
        self.next += 1;
        let connection = Arc::new(Connection::default());
        self.open.insert(id, Arc::clone(&connection));
        Some((id, connection, victim))
    }
}

/// Removes a connection from the table when its task ends, however it ends.
struct Gone(Arc<Mutex<Table>>, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open
            .remove(&self.1);
    }
}

/// Serves `router` on every listener of `listeners` (the addresses of one origin), through
/// TLS if `tls` is given, with at most `cap` connections over them all; never returns.
pub(crate) async fn serve(
    listeners: Vec<TcpListener>,
    tls: Option<TlsAcceptor>,
    router: Router,
    cap: usize,
) -> std::io::Result<()> {
    let table = Arc::new(Mutex::new(Table::default()));
    // Aborted when this future is dropped (the server stops).
    let mut loops = tokio::task::JoinSet::new();
    for tcp in listeners {
        let (tls, router, table) = (tls.clone(), router.clone(), Arc::clone(&table));
        loops.spawn(accept(tcp, tls, router, cap, table));
    }
    while loops.join_next().await.is_some() {}
    Err(std::io::Error::other("no address to listen on"))
}

async fn accept(
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    cap: usize,
    table: Arc<Mutex<Table>>,
) {
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of files or memory, for a moment: try again soon, serve the rest now.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let admitted = table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit(cap);
        let Some((id, connection, victim)) = admitted else {
            drop(stream);
            continue;
        };
        if let Some(victim) = victim {
            victim.close.notify_one();
            // Let it close before the next accept: its file is what the next one needs.
            tokio::task::yield_now().await;
        }
        let gone = Gone(Arc::clone(&table), id);
        let (router, tls) = (router.clone(), tls.clone());
        tokio::spawn(async move {
            let _gone = gone;
            let served = serve_one(stream, peer, tls, router, Arc::clone(&connection));
            tokio::select! {
                () = served => {}
                () = connection.close.notified() => {}
            }
        });
    }
}

async fn serve_one(
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    router: Router,
    connection: Arc<Connection>,
) {
    match tls {
        Some(acceptor) => match tokio::time::timeout(REQUEST_TIME, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => http(stream, peer, router, connection).await,
            Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
        },
        None => http(stream, peer, router, connection).await,
    }
}

/// HTTP/1.1 on one connection, with a time limit on each request's head.
async fn http<I>(io: I, peer: SocketAddr, router: Router, connection: Arc<Connection>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(router);
    let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (service, connection) = (service.clone(), Arc::clone(&connection));
        async move { Ok::<_, Infallible>(answer(request, peer, &service, &connection).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_TIME)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(io), handler)
        .await;
    if let Err(error) = served {
        tracing::debug!(%peer, %error, "connection ended");
    }
}

/// One request: its body read whole within the time limit (a request is complete only
/// then), then answered by the router.
async fn answer(
    request: Request<Incoming>,
    peer: SocketAddr,
    service: &TowerToHyperService<Router>,
    connection: &Connection,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let body = axum::body::to_bytes(Body::new(body), MAX_BODY);
    let body = match tokio::time::timeout(REQUEST_TIME, body).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the request is too large\n").into_response();
        }
        Err(_) => {
            return (StatusCode::REQUEST_TIMEOUT, "the request took too long\n").into_response();
        }
    };
    parts.extensions.insert(ConnectInfo(peer));
    let _ =
        connection
            .state
            .compare_exchange(WAITING, ANSWERING, Ordering::AcqRel, Ordering::Acquire);
    let request = Request::from_parts(parts, Body::from(body));
    let response = match hyper::service::Service::call(service, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"));
    let _ = connection.state.compare_exchange(
        ANSWERING,
        if streaming { STREAMING } else { WAITING },
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_stays_below_the_open_file_limit() {
        assert_eq!(cap_for(None), MAX_CONNECTIONS);
        assert_eq!(cap_for(Some(1_048_576)), MAX_CONNECTIONS);
        assert_eq!(cap_for(Some(256)), 192);
        assert_eq!(cap_for(Some(10)), 8);
    }

    #[test]
    fn at_the_cap_the_oldest_waiting_connection_goes_first_then_a_stream() {
        let mut table = Table::default();
        let (_, streaming, none) = table.admit(3).unwrap();
        assert!(none.is_none());
        streaming.state.store(STREAMING, Ordering::Release);
        let (_, answering, _) = table.admit(3).unwrap();
        answering.state.store(ANSWERING, Ordering::Release);
        let (_, waiting, _) = table.admit(3).unwrap();
        let (_, _, victim) = table.admit(3).unwrap();
        assert!(Arc::ptr_eq(&victim.unwrap(), &waiting), "the waiting one");
        assert_eq!(waiting.state.load(Ordering::Acquire), CLOSING);
        // The new one now waits too; closing ones are not counted.
        let (_, newest, victim) = table.admit(3).unwrap();
        assert!(!Arc::ptr_eq(victim.as_ref().unwrap(), &newest));
        assert_ne!(
            victim.unwrap().state.load(Ordering::Acquire),
            ANSWERING,
            "never one being answered"
        );
    }

    #[test]
    fn when_every_connection_is_being_answered_the_new_one_is_not_taken() {
        let mut table = Table::default();
        for _ in 0..2 {
            let (_, connection, _) = table.admit(2).unwrap();
            connection.state.store(ANSWERING, Ordering::Release);
        }
        assert!(table.admit(2).is_none());
    }
}
