//! The store's connections: the pool, the bounds every session starts with, trying again
//! while the server cannot be reached, and running the synchronous client off any tokio
//! runtime.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

use super::errors::{Failed, failed};
use super::{conninfo, tls};
use crate::error::Error;
use crate::id::RequestId;

/// The bounds every session of the store starts with, ahead of any `options` the store URL
/// gives (a later `-c` wins, so the URL's own `-c lock_timeout=…` sets another). A lock wait
/// gives up after a few seconds: an agent sitting inside an open transaction holds up a
/// human's step for that long, not for ever. No statement of the store runs long, so a
/// statement's bound only catches what went wrong; no session of the library sits inside an
/// open transaction. A LISTEN session runs no statement while it waits, and a session holding
/// an advisory lock is idle, not in a transaction, so neither is cut.
pub(crate) const SESSION_BOUNDS: &str =
    "-c lock_timeout=5s -c statement_timeout=60s -c idle_in_transaction_session_timeout=60s";

/// Connections kept open between calls.
const IDLE_CONNECTIONS: usize = 8;

/// A connection idle longer than this is checked with a round trip before it is used: the
/// client learns of a session the server ended (a restart, a terminated backend) only when it
/// next talks to it, and a write is never sent twice, so it must not be sent on a dead one.
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// Runs `f` where the `postgres` client may block: on this thread, or on a scoped thread of
/// its own when this one is inside a tokio runtime.
pub(super) fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|scope| {
            scope
                .spawn(f)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        f()
    }
}

/// A connection and the statements prepared on it: each statement is parsed and planned
/// once per connection, then runs in one round trip.
pub(super) struct Conn {
    pub(super) client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Conn {
    fn new(client: Client) -> Self {
        Self {
            client,
            prepared: HashMap::new(),
        }
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }

    pub(super) fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query(&statement, params)
    }

    pub(super) fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query_one(&statement, params)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query_opt(&statement, params)
    }

    pub(super) fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.execute(&statement, params)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// After a step on `id` committed: seals its audit row if no other sealer got there and
    /// wakes the waiters, in a transaction of its own that does not wait for the disk (see
    /// `approval_gate.wake`). Best effort: the step stands whatever happens here.
    pub(super) fn wake(&mut self, id: &str) {
        let _ = self.execute("SELECT approval_gate.wake($1)", &[&id]);
    }
}

/// The connections of one store.
pub(super) struct Pool {
    pub(super) config: postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    idle: Mutex<Vec<(Conn, Instant)>>,
}

impl Pool {
    pub(super) fn connect(&self) -> Result<Client, postgres::Error> {
        match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        }
    }

    /// An open connection: an idle one, or a new one. Call off any runtime.
    fn take(&self) -> Result<Conn, postgres::Error> {
        loop {
            let next = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            match next {
                Some((mut conn, since)) if !conn.is_closed() => {
                    if since.elapsed() < IDLE_CHECK || conn.client.is_valid(IDLE_CHECK * 4).is_ok()
                    {
                        return Ok(conn);
                    }
                }
                Some(closed) => drop(closed),
                None => return self.connect().map(Conn::new),
            }
        }
    }

    /// Keeps `client` for the next call if it is still open. Call off any runtime.
    pub(super) fn give(&self, client: Conn) {
        if client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < IDLE_CONNECTIONS {
            idle.push((client, Instant::now()));
        }
    }

    /// Runs `f` on a connection, off any runtime. While the server cannot be reached (a
    /// restart, a failover), getting a connection is tried again for up to
    /// [`RECONNECT_WINDOW`]: nothing was sent yet. A read ([`Retry::Read`]) whose session was
    /// lost while it ran runs again on a new one; a write never does, since whether it
    /// committed is for the caller to find out.
    pub(super) fn run_raw<R: Send>(
        &self,
        operation: &'static str,
        id: Option<RequestId>,
        retry: Retry,
        f: impl Fn(&mut Conn) -> Result<R, postgres::Error> + Send + Sync,
    ) -> Result<R, Failed> {
        off_runtime(|| {
            let deadline = Instant::now() + RECONNECT_WINDOW;
            let mut pause = Duration::from_millis(50);
            loop {
                let mut client = self.take_within(retry, deadline).map_err(Failed::Sql)?;
                let result = f(&mut client);
                let lost = client.is_closed();
                let result = result.map_err(|error| {
                    failed(
                        &mut client.client,
                        operation,
                        id.as_ref().map(RequestId::as_str),
                        error,
                    )
                });
                self.give(client);
                match result {
                    Err(Failed::Sql(error))
                        if retry == Retry::Read
                            && (lost || transient(&error))
                            && pause_before(&mut pause, deadline) => {}
                    other => return other,
                }
            }
        })
    }

    /// [`take`](Pool::take), tried again until `deadline` while the server cannot be
    /// reached, unless `retry` is [`Retry::Never`]. Call off any runtime.
    pub(super) fn take_within(
        &self,
        retry: Retry,
        deadline: Instant,
    ) -> Result<Conn, postgres::Error> {
        let mut pause = Duration::from_millis(50);
        loop {
            match self.take() {
                Err(error)
                    if retry != Retry::Never
                        && transient(&error)
                        && pause_before(&mut pause, deadline) => {}
                other => return other,
            }
        }
    }

    pub(super) fn run<R: Send>(
        &self,
        operation: &'static str,
        id: Option<RequestId>,
        retry: Retry,
        f: impl Fn(&mut Conn) -> Result<R, postgres::Error> + Send + Sync,
    ) -> Result<R, Error> {
        self.run_raw(operation, id, retry, f)
            .map_err(|e| e.into_error(operation, id))
    }
}

/// What may be tried again when the server cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    /// Nothing: fail at once (opening a store, so a wrong URL says so without waiting).
    Never,
    /// Getting a connection, before anything is sent (writes).
    Connect,
    /// Getting a connection, and the whole call if its session is lost (reads).
    Read,
}

/// Sleeps `pause` (doubling it for next time, up to a second) unless that would pass
/// `deadline`; whether it did.
fn pause_before(pause: &mut Duration, deadline: Instant) -> bool {
    if Instant::now() + *pause > deadline {
        return false;
    }
    std::thread::sleep(*pause);
    *pause = (*pause * 2).min(Duration::from_secs(1));
    true
}

/// How long calls wait for an unreachable server to come back.
pub(super) const RECONNECT_WINDOW: Duration = Duration::from_secs(15);

/// Whether `error` is the connection's, or the server's saying it is (re)starting or going
/// away: worth another try on a new connection. A failed read or write on the socket counts
/// (its message, "error communicating with the server", names no connection: a server
/// shutting down resets connections in the middle of their start-up).
fn transient(error: &postgres::Error) -> bool {
    match error.as_db_error() {
        None => {
            error.is_closed()
                || std::error::Error::source(error)
                    .is_some_and(<dyn std::error::Error>::is::<std::io::Error>)
                || error.to_string().contains("connect")
        }
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(PoisonError::into_inner));
        off_runtime(move || drop(idle));
    }
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub(super) fn pool_for(url: &str) -> Result<Pool, Error> {
    let invalid = |problem: String| Error::InvalidInput {
        field: "store",
        problem,
    };
    let settings = conninfo::settings(url, &env_var).map_err(invalid)?;
    let tls = tls::connector(&settings).map_err(invalid)?;
    let mut config = settings.config;
    let options = match config.get_options() {
        Some(theirs) => format!("{SESSION_BOUNDS} {theirs}"),
        None => SESSION_BOUNDS.to_owned(),
    };
    config.options(&options);
    Ok(Pool {
        config,
        tls,
        idle: Mutex::new(Vec::new()),
    })
}
