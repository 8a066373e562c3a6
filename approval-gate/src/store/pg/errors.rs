//! What a failed call means: a SQLSTATE (the schema's own `AGnnn`, PostgreSQL's) as the
//! library's [`Error`], and a wait that ran out as [`Error::Blocked`], naming who held what
//! it waited for.

use postgres::Client;

use super::consts::{LOCK_ASK, LOCK_EXECUTION, LOCK_FILING, LOCK_REQUEST, SCHEMA_VERSION};
use super::tls;
use crate::error::Error;
use crate::id::RequestId;

/// What went wrong, said once: the database's own words (message, detail, code) or the
/// connection's.
fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                text.push_str("; ");
                text.push_str(detail);
            }
            text
        }
        // A TLS failure says what failed (unknown CA, name mismatch, no TLS on the server).
        None => match tls::explain(error) {
            Some(explained) => format!("{explained} ({error})"),
            None => error.to_string(),
        },
    }
}

/// The error a failed call means, where its meaning does not depend on the step.
pub(super) fn map_error(
    operation: &'static str,
    id: Option<RequestId>,
    error: &postgres::Error,
) -> Error {
    let code = error.as_db_error().map(|db| db.code().code().to_owned());
    match (code.as_deref(), id) {
        (Some("AG007"), _) => Error::AuditBroken {
            line: error
                .as_db_error()
                .and_then(|db| db.hint())
                .and_then(|hint| hint.parse().ok())
                .unwrap_or(0),
            problem: error
                .as_db_error()
                .map_or_else(|| error.to_string(), |db| db.message().to_owned()),
        },
        (Some("AG004" | "42501"), _) => Error::NotPermitted {
            problem: describe(error),
        },
        (Some("AG003"), Some(id)) => Error::NotFound(id),
        (Some("AG006"), Some(id)) => Error::Archived(id),
        (Some("AG002"), Some(id)) => Error::Expired(id),
        (Some("3F000" | "42P01" | "42883"), _) => Error::Database {
            operation,
            problem: format!(
                "{}: this database has no approval-gate schema of version {SCHEMA_VERSION}; run `approval-gate db init --store URL` as its owner",
                describe(error)
            ),
        },
        _ => Error::Database {
            operation,
            problem: describe(error),
        },
    }
}

/// The SQLSTATE of a database's error.
pub(super) fn sqlstate(error: &postgres::Error) -> Option<&str> {
    error.as_db_error().map(|db| db.code().code())
}

pub(super) fn is_wrong_state(error: &postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|db| db.code().code() == "AG001")
}

/// The setting whose bound `error` says ran out: the session's `lock_timeout`, or its
/// `statement_timeout` (which may cut a wait too); `None` for any other error.
fn timed_out(error: &postgres::Error) -> Option<&'static str> {
    let db = error.as_db_error()?;
    match db.code().code() {
        "55P03" => Some("lock_timeout"),
        "57014" if db.message().contains("statement timeout") => Some("statement_timeout"),
        _ => None,
    }
}

/// Who holds what a step of `operation` on request `id` may have waited for: the request's
/// row or lock, the audit chain's head row, a filing slot, an identical ask's lock, or any
/// other lock of the store: the kind the step waits for first, a row before a lock (a step's
/// own gate holds the request's lock on a session of its own while the step waits for the
/// row), then the oldest transaction.
/// A row's holder is the transaction in its `xmax`, if that one still runs.
const HOLDER: &str = "
WITH here AS (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()),
held(kind, rank, what, pid) AS (
    SELECT 'request', 1, 'the row of request ' || r.id, l.pid
      FROM approval_gate.requests r
      JOIN pg_catalog.pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = r.xmax
     WHERE r.id = $1::text AND l.granted AND l.mode = 'ExclusiveLock'
    UNION ALL
    SELECT 'request', 2, CASE WHEN l.classid::bigint = $3 THEN 'the lock of request ' ELSE 'the execution lock of request ' END || $1::text, l.pid
      FROM pg_catalog.pg_locks l, here
     WHERE l.locktype = 'advisory' AND l.database = here.oid AND l.granted AND l.objsubid = 2
       AND l.classid::bigint IN ($3, $4) AND l.objid::bigint = (pg_catalog.hashtext($1::text)::bigint & 4294967295)
    UNION ALL
    SELECT 'audit', 1, 'the audit chain''s head row', l.pid
      FROM approval_gate.audit_head h
      JOIN pg_catalog.pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = h.xmax
     WHERE l.granted AND l.mode = 'ExclusiveLock'
    UNION ALL
    SELECT 'filing', 1, 'filing slot ' || s.slot, l.pid
      FROM approval_gate.filing_slots s
      JOIN pg_catalog.pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = s.xmax
     WHERE l.granted AND l.mode = 'ExclusiveLock'
    UNION ALL
    SELECT CASE WHEN l.classid::bigint = $5 THEN 'filing' ELSE 'other' END, 2,
           CASE WHEN l.classid::bigint = $5 THEN 'the lock of an identical ask'
                ELSE 'an advisory lock of the store (class ' || l.classid || ')' END, l.pid
      FROM pg_catalog.pg_locks l, here
     WHERE l.locktype = 'advisory' AND l.database = here.oid AND l.granted
       AND l.classid::bigint IN ($3, $4, $5, $6)
)
SELECT h.what, h.pid, a.usename::text
  FROM held h LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = h.pid
 WHERE h.pid <> pg_catalog.pg_backend_pid()
 ORDER BY h.kind = $2::text DESC, h.kind = 'other', h.rank, a.xact_start NULLS LAST
 LIMIT 1";

/// The [`Error::Blocked`] a timed-out wait of `operation` on `id` means, with its holder
/// looked up on `conn` (the session whose wait ran out; its step was rolled back) and the
/// value of the `bound` that ran out.
fn blocked(client: &mut Client, operation: &'static str, id: Option<&str>, bound: &str) -> Error {
    let kind = match operation {
        "request" => "filing",
        "audit" => "audit",
        _ => "request",
    };
    let classes = (
        i64::from(LOCK_REQUEST),
        i64::from(LOCK_EXECUTION),
        i64::from(LOCK_ASK),
        i64::from(LOCK_FILING),
    );
    let found = client.query_opt(
        HOLDER,
        &[&id, &kind, &classes.0, &classes.1, &classes.2, &classes.3],
    );
    let after = client
        .query_one("SELECT pg_catalog.current_setting($1)", &[&bound])
        .map_or_else(|_| format!("its {bound}"), |row| row.get(0));
    match found {
        Ok(Some(row)) => Error::Blocked {
            operation,
            what: row.get(0),
            pid: row.get(1),
            role: row.get(2),
            after,
        },
        _ => Error::Blocked {
            operation,
            what: id.map_or_else(
                || "a lock of the store".to_owned(),
                |id| format!("request {id}'s row or lock"),
            ),
            role: None,
            pid: None,
            after,
        },
    }
}

/// A failed call: the database's or the connection's error, or a wait that ran out.
pub(super) enum Failed {
    Sql(postgres::Error),
    Blocked(Error),
}

impl Failed {
    pub(super) fn sqlstate(&self) -> Option<&str> {
        match self {
            Self::Sql(error) => sqlstate(error),
            Self::Blocked(_) => None,
        }
    }

    pub(super) fn into_error(self, operation: &'static str, id: Option<RequestId>) -> Error {
        match self {
            Self::Sql(error) => map_error(operation, id, &error),
            Self::Blocked(error) => error,
        }
    }
}

/// `error`, or the [`Error::Blocked`] it is, looked up on `client`.
pub(super) fn failed(
    client: &mut Client,
    operation: &'static str,
    id: Option<&str>,
    error: postgres::Error,
) -> Failed {
    match timed_out(&error) {
        Some(bound) if !client.is_closed() => {
            Failed::Blocked(blocked(client, operation, id, bound))
        }
        _ => Failed::Sql(error),
    }
}
