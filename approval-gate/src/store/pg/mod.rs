//! The PostgreSQL store (SPEC §10): one set of approvals for a team on several machines.
//!
//! Authority lives in the database. Every change is one call of a SECURITY DEFINER function
//! of the schema `approval_gate` (`schema.sql`, applied by [`init`]), which checks the
//! session user's role, locks the request's row, reads the database's clock after the lock,
//! checks that the step is allowed from where the request stands, and writes the change and
//! its audit row in the same transaction. So this store [records effects](Store::records_effects):
//! the lifecycle hands each effect its audit entry instead of appending it on its own.
//!
//! What the lifecycle's locks serialise here are session advisory locks, each on a connection
//! of its own held for as long as the lock is: class [`LOCK_REQUEST`] for one request's
//! decisions and consume, [`LOCK_FILING`] for filing, and [`LOCK_EXECUTION`], held by an
//! executor while it runs, so that a dead executor's session lets go of it and recovery
//! records `outcome unknown` for it.
//!
//! Every session bounds its waits ([`SESSION_BOUNDS`], set in its startup packet, so no
//! statement pays for it): a wait that runs out is [`Error::Blocked`], naming what was held and
//! by which role and backend pid, looked up after the fact on the same session.
//!
//! The client is the synchronous `postgres` crate, which runs a small tokio runtime of its own
//! per connection and panics when used, or dropped, inside another runtime: every call and
//! every drop of a connection is made off any runtime thread ([`off_runtime`]).
//!
//! [`LOCK_REQUEST`]: consts::LOCK_REQUEST
//! [`LOCK_FILING`]: consts::LOCK_FILING
//! [`LOCK_EXECUTION`]: consts::LOCK_EXECUTION
//! [`SESSION_BOUNDS`]: pool::SESSION_BOUNDS
//! [`off_runtime`]: pool::off_runtime

mod audit;
mod calls;
pub(super) mod conninfo;
mod consts;
mod errors;
mod listen;
mod lock;
mod pool;
mod rows;
#[cfg(test)]
mod rules_agree;
mod schema;
mod tls;

use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};

use super::{Caps, Entry, Filed, Guard, Loaded, Location, Store};
use crate::audit::{AuditEvent, AuditRecord, AuditSummary, LineHash, Reanchored, parse_chain_with};
use crate::change::ChangeSink;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

use audit::check_head;
use consts::{LOCK_EXECUTION, LOCK_FILING, LOCK_REQUEST};
use errors::{Failed, failed, is_wrong_state, map_error, sqlstate};
use lock::{AdvisoryLock, Executing};
use pool::{Pool, Retry, off_runtime, pool_for};
use rows::{compose, details_text, event_name, split};
pub use schema::{SCHEMA_VERSION, init, init_with_limits};

/// The PostgreSQL store.
pub(crate) struct PgStore {
    location: Location,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location.to_string())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    pub(crate) fn open(url: &str) -> Result<Self, Error> {
        let pool = Arc::new(pool_for(url)?);
        let store = Self {
            location: Location::Postgres(url.to_owned()),
            pool,
        };
        schema::check_version(&store.pool)?;
        Ok(store)
    }
}

impl Store for PgStore {
    fn location(&self) -> &Location {
        &self.location
    }

    fn records_effects(&self) -> bool {
        true
    }

    fn filer(&self) -> Option<String> {
        // What the database will record: its session user, this login.
        self.pool.config.get_user().map(str::to_owned)
    }

    fn load(&self, id: RequestId) -> Result<Option<Request>, Error> {
        self.load_where(id, false)
    }

    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool {
        matches!(error, Error::Unreadable { id: bad, .. } if *bad == id)
    }

    fn load_archived(&self, id: RequestId) -> Result<Option<Request>, Error> {
        self.load_where(id, true)
    }

    fn is_archived(&self, id: RequestId) -> Result<bool, Error> {
        self.read("load", Some(id), |client| {
            Ok(client
                .query_one(
                    "SELECT EXISTS (SELECT FROM approval_gate.requests WHERE id = $1 AND archived)",
                    &[&id.as_str()],
                )?
                .get(0))
        })
    }

    fn save(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<(), Error> {
        let id = request.id();
        let (record, _) = split(request)?;
        let details = details_text(entry.details);
        let event = event_name(entry.event);
        let ts = entry.ts.unix_millis();
        self.step(operation, id, entry.ts, |client| {
            let done = client.execute(
                "SELECT approval_gate.decide($1, $2, $3, $4::text::jsonb, $5::text::jsonb, $6)",
                &[&id.as_str(), &operation, &event, &record, &details, &ts],
            )?;
            client.wake(id.as_str());
            Ok(done)
        })
        .map(drop)
    }

    fn lock(&self, id: RequestId) -> Result<Guard, Error> {
        AdvisoryLock::take(&self.pool, "lock", LOCK_REQUEST, id.as_str()).map(Guard::new)
    }

    fn lock_filing(&self) -> Result<Guard, Error> {
        AdvisoryLock::take(&self.pool, "lock", LOCK_FILING, "filing").map(Guard::new)
    }

    fn id_taken(&self, id: RequestId) -> Result<bool, Error> {
        self.read("request", Some(id), |client| {
            Ok(client
                .query_one(
                    "SELECT EXISTS (SELECT FROM approval_gate.requests WHERE id = $1)",
                    &[&id.as_str()],
                )?
                .get(0))
        })
    }

    fn count_live(&self) -> Result<usize, Error> {
        let count: i64 = self.read("count", None, |client| {
            Ok(client
                .query_one(
                    "SELECT sum(live)::bigint FROM approval_gate.filing_slots",
                    &[],
                )?
                .get(0))
        })?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    fn insert(&self, request: &Request, _: &Entry<'_>) -> Result<(), Error> {
        // Filing is `file_at_once`, which applies the caps in the same transaction.
        Err(Error::Database {
            operation: "request",
            problem: format!(
                "request {}: the PostgreSQL store files only with the queue's caps",
                request.id()
            ),
        })
    }

    fn files_at_once(&self) -> bool {
        true
    }

    fn file_at_once(
        &self,
        request: &Request,
        caps: Caps,
        entry: &Entry<'_>,
    ) -> Option<Result<Filed, Error>> {
        let id = request.id();
        let split = split(request);
        let (record, payload) = match split {
            Ok(parts) => parts,
            Err(error) => return Some(Err(error)),
        };
        let details = details_text(entry.details);
        let ts = request.created_at().unix_millis();
        let max_pending = i64::try_from(caps.max_pending).unwrap_or(i64::MAX);
        let max_requests = i64::try_from(caps.max_requests).unwrap_or(i64::MAX);
        let file = |exclusive: bool| {
            self.pool.run_raw("request", Some(id), Retry::Connect, |client| {
                let found: Option<String> = client
                    .query_one(
                        "SELECT approval_gate.file_request($1::text::jsonb, $2, $3::text::jsonb, $4, $5, $6, $7)",
                        &[&record, &payload, &details, &ts, &max_pending, &max_requests, &exclusive],
                    )?
                    .get(0);
                if found.is_none() {
                    client.wake(id.as_str());
                }
                Ok(found)
            })
        };
        let mut filed = file(false);
        if filed.as_ref().err().and_then(Failed::sqlstate) == Some("AG010") {
            filed = file(true);
        }
        Some(match filed {
            Ok(None) => Ok(Filed::New),
            Ok(Some(existing)) => RequestId::parse(&existing)
                .map(Filed::Duplicate)
                .map_err(|_| Error::Database {
                    operation: "request",
                    problem: format!("the database named a malformed request id: {existing:?}"),
                }),
            Err(Failed::Blocked(error)) => Err(error),
            Err(Failed::Sql(error)) => {
                // The hint: the count, and the cap that held (the store's, if lower).
                let hint = |at: usize| {
                    error
                        .as_db_error()
                        .and_then(|db| db.hint())
                        .and_then(|hint| hint.split(' ').nth(at))
                        .and_then(|n| n.parse().ok())
                };
                match sqlstate(&error) {
                    Some("AG008") => Err(Error::QueueFull {
                        pending: hint(0).unwrap_or(usize::MAX),
                        limit: hint(1).unwrap_or(caps.max_pending),
                    }),
                    Some("AG009") => Err(Error::CreationLimit {
                        requests: hint(0).unwrap_or(usize::MAX),
                        limit: hint(1).unwrap_or(caps.max_requests),
                    }),
                    // unique_violation: another request has this id.
                    Some("23505") => Ok(Filed::IdTaken),
                    _ => Err(map_error("request", Some(id), &error)),
                }
            }
        })
    }

    fn pending_ids(&self) -> Result<Vec<RequestId>, Error> {
        self.ids(
            "list",
            "SELECT id FROM approval_gate.requests WHERE status = 'pending' AND NOT archived",
        )
    }

    fn load_pending(&self) -> Result<Vec<Loaded>, Error> {
        let rows = self.read("list", None, |client| {
            client.query(
                "SELECT id, record::text, payload FROM approval_gate.requests
                 WHERE status = 'pending' AND NOT archived",
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let id = RequestId::parse(row.get::<_, &str>(0)).ok()?;
                let record: &str = row.get(1);
                let payload: Option<&str> = row.get(2);
                let loaded = Request::decode(id, &compose(record, payload))
                    .map(Some)
                    .map_err(|problem| Error::Unreadable { id, problem });
                Some((id, loaded))
            })
            .collect())
    }

    fn unindex(&self, _: RequestId) -> Result<(), Error> {
        // The pending index is the request's own status.
        Ok(())
    }

    fn live_ids(&self) -> Result<Vec<RequestId>, Error> {
        self.ids(
            "list",
            "SELECT id FROM approval_gate.requests WHERE NOT archived",
        )
    }

    fn claim(
        &self,
        id: RequestId,
        consumed_at: Timestamp,
        entry: &Entry<'_>,
    ) -> Result<bool, Error> {
        let details = details_text(entry.details);
        let ts = consumed_at.unix_millis();
        let outcome: String = self.step("consume", id, consumed_at, |client| {
            let outcome = client
                .query_one(
                    "SELECT approval_gate.claim($1, $2::text::jsonb, $3)",
                    &[&id.as_str(), &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(outcome)
        })?;
        match outcome.as_str() {
            "claimed" => Ok(true),
            "already_consumed" => Ok(false),
            reason => Err(self.refusal(id, reason)),
        }
    }

    fn is_claimed(&self, id: RequestId) -> Result<bool, Error> {
        self.read("load", Some(id), |client| {
            Ok(client
                .query_opt(
                    "SELECT claimed_ms IS NOT NULL FROM approval_gate.requests WHERE id = $1",
                    &[&id.as_str()],
                )?
                .is_some_and(|row| row.get(0)))
        })
    }

    fn note_logged(&self, _: RequestId) -> Result<(), Error> {
        // The claim and its `consumed` row commit together.
        Ok(())
    }

    fn unlogged_claims(&self) -> Result<Vec<RequestId>, Error> {
        Ok(Vec::new())
    }

    fn is_logged(&self, _: RequestId) -> Result<bool, Error> {
        Ok(true)
    }

    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error> {
        let lock = AdvisoryLock::take(&self.pool, "execute", LOCK_EXECUTION, id.as_str())?;
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let started = off_runtime(|| {
            let mut client = lock.client.lock().unwrap_or_else(PoisonError::into_inner);
            let client = client.as_mut().expect("a held lock has its connection");
            match client.execute(
                "SELECT approval_gate.start_execution($1, $2::text::jsonb, $3)",
                &[&id.as_str(), &details, &ts],
            ) {
                Ok(done) => {
                    client.wake(id.as_str());
                    Ok(done)
                }
                Err(error) => Err(failed(
                    &mut client.client,
                    "execute",
                    Some(id.as_str()),
                    error,
                )),
            }
        });
        match started {
            Ok(_) => Ok(Guard::new(Executing(lock))),
            Err(Failed::Sql(error)) if is_wrong_state(&error) => {
                drop(lock);
                Err(self.wrong_state(id, "execute", entry.ts))
            }
            Err(error) => Err(error.into_error("execute", Some(id))),
        }
    }

    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        self.step("execute", id, entry.ts, |client| {
            let done = client.execute(
                "SELECT approval_gate.finish_execution($1, $2::text::jsonb, $3)",
                &[&id.as_str(), &details, &ts],
            )?;
            client.wake(id.as_str());
            Ok(done)
        })
        .map(drop)
    }

    fn recover_executions(&self, now: Timestamp) -> Option<Result<Vec<RequestId>, Error>> {
        let ms = now.unix_millis();
        let recovered = self.pool.run("recover", None, Retry::Connect, |client| {
            let rows = client.query("SELECT approval_gate.recover_executions($1)", &[&ms])?;
            if !rows.is_empty() {
                // Several requests, or one: every listener re-reads what it waits on.
                client.wake("");
            }
            Ok(rows)
        });
        Some(match recovered {
            Ok(rows) => Ok(rows
                .iter()
                .filter_map(|row| RequestId::parse(row.get::<_, &str>(0)).ok())
                .collect()),
            // A login that may do none of the three roles' steps can still read.
            Err(Error::NotPermitted { .. }) => Ok(Vec::new()),
            Err(other) => Err(other),
        })
    }

    fn end_execution(&self, _: RequestId) -> Result<(), Error> {
        // `finish_execution` ends it with its record.
        Ok(())
    }

    fn executions(&self) -> Result<Vec<RequestId>, Error> {
        self.ids(
            "recover",
            "SELECT id FROM approval_gate.requests WHERE executing",
        )
    }

    fn dead_execution(&self, _: RequestId) -> Result<Option<Guard>, Error> {
        // `recover_executions` finds them in the database.
        Ok(None)
    }

    fn is_executing(&self, id: RequestId) -> Result<bool, Error> {
        self.read("load", Some(id), |client| {
            Ok(client
                .query_opt(
                    "SELECT executing FROM approval_gate.requests WHERE id = $1",
                    &[&id.as_str()],
                )?
                .is_some_and(|row| row.get(0)))
        })
    }

    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        self.step("archive", id, entry.ts, |client| {
            let done = client.execute(
                "SELECT approval_gate.archive($1, $2::text::jsonb, $3)",
                &[&id.as_str(), &details, &ts],
            )?;
            client.wake(id.as_str());
            Ok(done)
        })
        .map(drop)
    }

    fn append(
        &self,
        ts: Timestamp,
        event: AuditEvent,
        id: RequestId,
        details: &Map<String, Value>,
    ) -> Result<u64, Error> {
        // Every other event is written by the step it records.
        let operation = match event {
            AuditEvent::ConsumeRefused | AuditEvent::ConsumeReplayed => "consume",
            AuditEvent::DecisionRefused => "decide",
            other => {
                return Err(Error::Database {
                    operation: "audit",
                    problem: format!(
                        "the PostgreSQL store writes `{}` only with its effect",
                        event_name(other)
                    ),
                });
            }
        };
        let details = details_text(details);
        let ms = ts.unix_millis();
        let event = event_name(event);
        let seq: i64 = self
            .write(operation, id, |client| {
                let pos = client
                    .query_one(
                        "SELECT approval_gate.refuse($1, $2, $3::text::jsonb, $4)",
                        &[&id.as_str(), &event, &details, &ms],
                    )?
                    .get(0);
                client.wake(id.as_str());
                Ok(pos)
            })
            .map_err(|e| e.unwrap_or_else(|e| map_error(operation, Some(id), &e)))?;
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    fn check_appendable(&self) -> Result<(), Error> {
        // The database checks the chain's end against its head row on every append, in the
        // transaction that appends: a step refused there rolls back whole, its effect too.
        Ok(())
    }

    fn verify(&self) -> Result<AuditSummary, Error> {
        let (bytes, head_seq, head_hash) = self.chain()?;
        let (_, summary) = parse_chain_with(&bytes, LineHash::Sha256)?;
        check_head(summary, head_seq, &head_hash)
    }

    fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        let (bytes, _, _) = self.chain()?;
        parse_chain_with(&bytes, LineHash::Sha256).map(|(records, _)| records)
    }

    fn reanchor(&self, now: Timestamp, by: &str) -> Result<Reanchored, Error> {
        // The lines as they are: sealing onto a chain that disagrees with its head is refused.
        let (bytes, head_seq, head_hash) = self.lines(false)?;
        let (_, summary) =
            parse_chain_with(&bytes, LineHash::Sha256).map_err(|error| match error {
                Error::AuditBroken { line, problem } => Error::AuditBroken {
                    line,
                    problem: format!(
                        "{problem}; re-anchoring accepts only a chain whose lines chain: keep the database as it is for investigation"
                    ),
                },
                other => other,
            })?;
        let problem = match check_head(summary.clone(), head_seq, &head_hash) {
            Ok(_) => {
                return Err(Error::InvalidInput {
                    field: "audit reanchor",
                    problem: "the audit chain and its head row agree: nothing to re-anchor".into(),
                });
            }
            Err(Error::AuditBroken { problem, .. }) => problem,
            Err(other) => return Err(other),
        };
        let found = i64::try_from(summary.lines).unwrap_or(i64::MAX);
        let ms = now.unix_millis();
        let seq: i64 = self
            .pool
            .run("audit reanchor", None, Retry::Connect, |client| {
                let seq = client
                    .query_one(
                        "SELECT approval_gate.reanchor($1, $2, $3, $4, $5, $6)",
                        &[&by, &problem, &found, &summary.last_hash, &head_seq, &ms],
                    )?
                    .get(0);
                client.wake("");
                Ok(seq)
            })?;
        Ok(Reanchored {
            problem,
            found_lines: summary.lines,
            found_last_hash: summary.last_hash,
            previous_anchor: u64::try_from(head_seq).ok(),
            torn_bytes_cut: 0,
            seq: u64::try_from(seq).unwrap_or(0),
        })
    }

    fn repair_torn_tail(&self) -> Result<(), Error> {
        // Rows are whole or absent: nothing is ever torn.
        Ok(())
    }

    fn stray_entries(&self) -> Result<Vec<std::path::PathBuf>, Error> {
        Ok(Vec::new())
    }

    fn watch(&self, sink: ChangeSink) -> Result<Guard, String> {
        listen::watch(&self.pool, sink)
    }
}

#[cfg(test)]
mod tests;
