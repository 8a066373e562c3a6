//! The schema: the files of `schema/` with the library's bounds written into their `{{…}}`
//! placeholders, installed or migrated by `db init` (with the operator's caps, if given), and
//! the version check a store makes when it opens.

use super::consts::LOCK_INIT;
pub use super::consts::SCHEMA_VERSION;
use super::pool::{Pool, Retry, pool_for};
use crate::error::Error;

/// The schema's SQL, one file a concern, in the order `db init` runs them as one text: the
/// roles, tables, counters and migrations (`tables.sql`); the helpers every step calls
/// (`helpers.sql`); filing and deciding (`steps.sql`); the claim, refusals, executions and
/// archiving (`spend.sql`); the notifications ledger (`notices.sql`); the owner's steps, the grants and the shared lock table
/// (`owner.sql`).
pub(super) const SCHEMA_SQL: &str = concat!(
    include_str!("schema/tables.sql"),
    include_str!("schema/helpers.sql"),
    include_str!("schema/steps.sql"),
    include_str!("schema/spend.sql"),
    include_str!("schema/notices.sql"),
    include_str!("schema/owner.sql"),
    include_str!("schema/allowances.sql"),
);

/// [`SCHEMA_SQL`] with the library's bounds written in: the database checks what it stores
/// against the very numbers the library reads back with (one source of truth).
pub(super) fn schema_sql() -> String {
    use crate::limits::{
        DEFAULT_MAX_PENDING, DEFAULT_MAX_REQUESTS, MAX_ACTION_BYTES, MAX_DETAILS_BYTES,
        MAX_DETAILS_DEPTH, MAX_NAME_BYTES, MAX_OPERATION_BYTES, MAX_PAYLOAD_BYTES, MAX_QUORUM,
        MAX_REASON_BYTES, MAX_SAFE_INTEGER, MAX_SIGNATURE_BYTES, MAX_TTL, MIN_TTL,
    };
    let bounds: [(&str, String); 20] = [
        ("SCHEMA_VERSION", SCHEMA_VERSION.to_string()),
        ("SEAL_EVERY_MS", super::consts::SEAL_EVERY_MS.to_string()),
        ("FORMAT_VERSION", crate::request::FORMAT_VERSION.to_string()),
        ("DEFAULT_MAX_PENDING", DEFAULT_MAX_PENDING.to_string()),
        ("DEFAULT_MAX_REQUESTS", DEFAULT_MAX_REQUESTS.to_string()),
        ("MAX_ACTION_BYTES", MAX_ACTION_BYTES.to_string()),
        ("MAX_REASON_BYTES", MAX_REASON_BYTES.to_string()),
        ("MAX_NAME_BYTES", MAX_NAME_BYTES.to_string()),
        ("MAX_OPERATION_BYTES", MAX_OPERATION_BYTES.to_string()),
        ("MAX_QUORUM", MAX_QUORUM.to_string()),
        ("MAX_SIGNATURE_BYTES", MAX_SIGNATURE_BYTES.to_string()),
        ("MAX_PAYLOAD_BYTES", MAX_PAYLOAD_BYTES.to_string()),
        ("MIN_TTL_MS", MIN_TTL.as_millis().to_string()),
        ("MAX_TTL_MS", MAX_TTL.as_millis().to_string()),
        ("MAX_SAFE_INTEGER", MAX_SAFE_INTEGER.to_string()),
        ("MAX_DETAILS_BYTES", MAX_DETAILS_BYTES.to_string()),
        ("MAX_DETAILS_DEPTH", MAX_DETAILS_DEPTH.to_string()),
        (
            "OPERATION_NAME_PATTERN",
            crate::request::OPERATION_NAME_PATTERN.to_owned(),
        ),
        (
            "ERROR_CODES",
            crate::ErrorCode::ALL
                .iter()
                .map(|c| format!("'{c}'"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "MAX_REFUSAL_DETAIL_BYTES",
            crate::audit::MAX_REFUSAL_DETAIL_BYTES.to_string(),
        ),
    ];
    let mut sql = SCHEMA_SQL.to_owned();
    for (name, value) in bounds {
        sql = sql.replace(&format!("{{{{{name}}}}}"), &value);
    }
    sql
}

/// Creates or migrates the schema `approval_gate` in the database at `url` and the three
/// group roles, as one transaction under an advisory lock: safe to run twice, or from two
/// places at once. Returns the schema version the database is at. A new store gets the
/// default caps ([`Limits::default`](crate::Limits)); an existing one keeps its own (see
/// [`init_with_limits`]).
///
/// # Errors
///
/// [`Error::InvalidInput`] for a bad URL; [`Error::Database`] if the database refuses (the
/// session must be allowed to create schemas and roles: a superuser, or an owner with
/// `CREATEROLE`), or holds a newer schema than this build knows.
pub fn init(url: &str) -> Result<u32, Error> {
    init_inner(url, None)
}

/// [`init`], then sets the store's own caps to the operator's `limits` (`max_pending`,
/// `max_requests`): the database holds every filing to them, whatever its caller asks for.
/// A change is recorded in the audit chain (`limits_set`, naming the session user); the
/// same caps again change nothing.
///
/// # Errors
///
/// As [`init`]; [`Error::AuditBroken`] if the caps change while the chain is broken (the
/// change could not be recorded).
pub fn init_with_limits(url: &str, limits: &crate::Limits) -> Result<u32, Error> {
    init_inner(url, Some(limits))
}

fn init_inner(url: &str, limits: Option<&crate::Limits>) -> Result<u32, Error> {
    let pool = pool_for(url)?;
    let caps = limits.map(|limits| {
        (
            i64::try_from(limits.max_pending).unwrap_or(i64::MAX),
            i64::try_from(limits.max_requests).unwrap_or(i64::MAX),
        )
    });
    let sql = schema_sql();
    pool.run("db init", None, Retry::Never, |client| {
        let mut tx = client.client.transaction()?;
        // Another init may hold the lock for as long as the whole schema takes.
        tx.batch_execute("SET LOCAL lock_timeout = '5min'; SET LOCAL statement_timeout = 0")?;
        tx.execute(
            "SELECT pg_catalog.pg_advisory_xact_lock($1, 0)",
            &[&LOCK_INIT],
        )?;
        let has_meta: bool = tx
            .query_one(
                "SELECT pg_catalog.to_regclass('approval_gate.meta') IS NOT NULL",
                &[],
            )?
            .get(0);
        let existing: Option<String> = if has_meta {
            tx.query_opt(
                "SELECT value FROM approval_gate.meta WHERE key = 'schema_version'",
                &[],
            )?
            .map(|row| row.get(0))
        } else {
            None
        };
        if let Some(found) = existing.and_then(|v| v.parse::<u32>().ok())
            && found > SCHEMA_VERSION
        {
            tx.rollback()?;
            return Ok(Err(found));
        }
        tx.batch_execute(&sql)?;
        if let Some((max_pending, max_requests)) = caps {
            tx.execute(
                "SELECT approval_gate.set_limits($1, $2, NULL)",
                &[&max_pending, &max_requests],
            )?;
        }
        tx.commit()?;
        Ok(Ok(SCHEMA_VERSION))
    })?
    .map_err(|found| Error::Database {
        operation: "db init",
        problem: format!(
            "the database holds schema version {found}, newer than this build's {SCHEMA_VERSION}: use a newer approval-gate"
        ),
    })
}

/// Checks, when a store is opened, that the database at `pool` holds the schema version this
/// build uses.
pub(super) fn check_version(pool: &Pool) -> Result<(), Error> {
    let version: String = pool.run("open", None, Retry::Never, |client| {
        Ok(client
            .query_one(
                "SELECT value FROM approval_gate.meta WHERE key = 'schema_version'",
                &[],
            )?
            .get(0))
    })?;
    if version != SCHEMA_VERSION.to_string() {
        return Err(Error::Database {
            operation: "open",
            problem: format!(
                "the database holds schema version {version}, this build uses {SCHEMA_VERSION}: run `approval-gate db init` with the newer of the two"
            ),
        });
    }
    Ok(())
}

/// Objects in the schema `approval_gate` that [`SCHEMA_SQL`] does not create (a table,
/// view, sequence or function added by hand), named `approval_gate.<name>`, for a human to
/// look at: the database's counterpart of a stray file in a directory store.
pub(super) fn strays(pool: &Pool) -> Result<Vec<std::path::PathBuf>, Error> {
    let names: Vec<String> = pool.run("doctor", None, Retry::Connect, |client| {
        Ok(client
            .query(
                "SELECT c.relname::text FROM pg_catalog.pg_class c
                 WHERE c.relnamespace = 'approval_gate'::regnamespace AND c.relkind <> 'i'
                 UNION
                 SELECT p.proname::text FROM pg_catalog.pg_proc p
                 WHERE p.pronamespace = 'approval_gate'::regnamespace
                 ORDER BY 1",
                &[],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect())
    })?;
    let ours = SCHEMA_SQL;
    Ok(names
        .into_iter()
        .map(|name| format!("approval_gate.{name}"))
        .filter(|qualified| !defines(ours, qualified))
        .map(std::path::PathBuf::from)
        .collect())
}

/// Whether `sql` names `qualified` as a whole name (not a prefix of a longer one).
fn defines(sql: &str, qualified: &str) -> bool {
    sql.match_indices(qualified).any(|(at, _)| {
        !sql[at + qualified.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}
