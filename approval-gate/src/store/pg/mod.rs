//! The PostgreSQL store: one set of approvals for a team on several machines.
//!
//! Authority lives in the database. Every change is one call of a SECURITY DEFINER function
//! of the schema `approval_gate` (the files of `schema/`, applied by [`init`]), which checks the
//! session user's role, locks the request's row, reads the database's clock after the lock,
//! checks that the step is allowed from where the request stands, and writes the change and
//! its audit row in the same transaction: this store's lines are
//! [atomic](super::Capabilities::atomic_lines).
//!
//! What the lifecycle's locks serialise here are session advisory locks, each on a connection
//! of its own held for as long as the lock is: class [`LOCK_REQUEST`] for one request's
//! decisions and consume, and [`LOCK_EXECUTION`], held by an executor while it runs, so that
//! a dead executor's session lets go of it and recovery records `outcome unknown` for it.
//! Filing needs no lock of the library's: `file_request` applies the caps with row locks of
//! its own.
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
//! [`LOCK_EXECUTION`]: consts::LOCK_EXECUTION
//! [`SESSION_BOUNDS`]: pool::SESSION_BOUNDS
//! [`off_runtime`]: pool::off_runtime

mod allowances;
mod audit;
mod calls;
pub(super) mod conninfo;
mod consts;
mod errors;
mod listen;
mod lock;
mod notices;
mod pool;
mod rows;
#[cfg(test)]
mod rules_agree;
mod schema;
mod tls;

use std::sync::{Arc, PoisonError};

use super::allowance::{Cosigned, Kept, Revoked, Under};
use super::{
    About, Capabilities, Caps, Chain, Entry, Filed, Filer, Guard, Loaded, Location, MarkedAllowed,
    Marks, Recovery, Refusals, Scope, Shelf, Spent, Store,
};
use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::audit::{AuditRecord, AuditSummary, LineHash, Reanchored, parse_chain_with};
use crate::change::ChangeSink;
use crate::error::Error;
use crate::faults::failpoint;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

use audit::check_head;
use consts::{LOCK_COUNTERS, LOCK_EXECUTION, LOCK_REQUEST};
use errors::{Failed, failed, is_wrong_state, map_error, sqlstate};
use lock::{AdvisoryLock, Executing};
use pool::{Pool, Retry, off_runtime, pool_for};
use rows::{compose, details_text, event_name, split};
pub use schema::{SCHEMA_VERSION, init, init_with_limits};

/// The PostgreSQL store.
pub(crate) struct PgStore {
    about: About,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.about.location.to_string())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    pub(crate) fn open(url: &str) -> Result<Self, Error> {
        let pool = Arc::new(pool_for(url)?);
        let about = About {
            location: Location::Postgres(url.to_owned()),
            backend: "postgres",
            // What the database will record: its session user, this login.
            filer: pool.config.get_user().map(str::to_owned),
            capabilities: Capabilities {
                // Every step is one call of the schema's functions, which writes the change
                // and its audit row in one transaction.
                atomic_lines: true,
                // `file_request` records the session user, whatever the caller wrote.
                filer: Filer::Authenticated,
                // `refuse` keeps one role's same refused decision of a request once.
                refusals: Refusals::OncePerRole,
            },
        };
        let store = Self { about, pool };
        schema::check_version(&store.pool)?;
        Ok(store)
    }
}

impl Store for PgStore {
    fn about(&self) -> &About {
        &self.about
    }

    fn load(&self, id: RequestId, place: Shelf) -> Result<Option<Request>, Error> {
        self.load_where(id, place == Shelf::Archived)
    }

    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool {
        matches!(error, Error::Unreadable { id: bad, .. } if *bad == id)
    }

    fn marks(&self, id: RequestId) -> Result<Marks, Error> {
        self.read("load", Some(id), |client| {
            Ok(client
                .query_opt(
                    "SELECT claimed_ms IS NOT NULL, executing, archived FROM approval_gate.requests WHERE id = $1",
                    &[&id.as_str()],
                )?
                .map_or_else(Marks::default, |row| Marks {
                    claimed: row.get(0),
                    executing: row.get(1),
                    archived: row.get(2),
                }))
        })
    }

    fn load_marked(&self, id: RequestId) -> Result<(Option<Request>, Marks), Error> {
        self.load_live_marked(id)
    }

    fn load_marked_allowed(&self, id: RequestId) -> Result<MarkedAllowed, Error> {
        self.load_live_allowed(id)
    }

    fn scan(&self, scope: Scope) -> Result<Vec<Loaded>, Error> {
        // The pending index is the request's own status.
        self.loaded(match scope {
            Scope::Pending => {
                "SELECT id, record::text, payload FROM approval_gate.requests
                 WHERE status = 'pending' AND NOT archived"
            }
            Scope::Live => {
                "SELECT id, record::text, payload FROM approval_gate.requests WHERE NOT archived"
            }
        })
    }

    fn lock(&self, id: RequestId) -> Result<Guard, Error> {
        AdvisoryLock::take(&self.pool, "lock", LOCK_REQUEST, id.as_str()).map(Guard::new)
    }

    fn lock_counters(&self) -> Result<Guard, Error> {
        AdvisoryLock::take(&self.pool, "approve", LOCK_COUNTERS, "passkeys").map(Guard::new)
    }

    fn file(&self, request: &Request, caps: Caps, entry: &Entry<'_>) -> Result<Filed, Error> {
        let id = request.id();
        let (record, payload) = split(request)?;
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
        match filed {
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
        }
    }

    fn decide(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<Request, Error> {
        if operation == "allow" {
            return self.allow(request, entry);
        }
        let id = request.id();
        let (record, _) = split(request)?;
        let details = details_text(entry.details);
        let event = event_name(entry.event);
        let ts = entry.ts.unix_millis();
        let stored: String = self.step(operation, id, entry.ts, |client| {
            let stored = client
                .query_one(
                    "SELECT approval_gate.decide($1, $2, $3, $4::text::jsonb, $5::text::jsonb, $6)",
                    &[&id.as_str(), &operation, &event, &record, &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(stored)
        })?;
        // The database set the decision's time and name (its clock, its session user): the
        // record it stored, or, should that not read as one, what was handed to it.
        let payload = request.payload().map(crate::CanonicalPayload::as_str);
        Ok(Request::decode(id, &compose(&stored, payload)).unwrap_or_else(|_| request.clone()))
    }

    fn spend(&self, id: RequestId, entry: &Entry<'_>) -> Result<Spent, Error> {
        let details = details_text(entry.details);
        let ts = entry.ts.unix_millis();
        let outcome: String = self.step("consume", id, entry.ts, |client| {
            let outcome = client
                .query_one(
                    "SELECT approval_gate.claim($1, $2::text::jsonb, $3)",
                    &[&id.as_str(), &details, &ts],
                )?
                .get(0);
            client.wake(id.as_str());
            Ok(outcome)
        })?;
        Ok(match outcome.as_str() {
            "claimed" => {
                // The claim and its line committed together: a crash at either of the
                // directory store's two points between them comes after both here.
                let after = || -> Result<(), Error> {
                    failpoint!("consume::after_claim");
                    failpoint!("consume::after_consumed_line");
                    Ok(())
                };
                after().map_err(|error| error.after_effect(id, "consume"))?;
                Spent::Now
            }
            // Nothing written: the caller records the replay.
            "already_consumed" => Spent::before(id),
            // Refused by the database's own checks, on its clock, and recorded there.
            reason => Spent::Refused {
                refusal: self.refusal(id, reason),
                recorded: true,
            },
        })
    }

    fn spend_under(
        &self,
        id: RequestId,
        under: &Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        self.spend_allowed(id, under, entry)
    }

    fn refuse(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error> {
        let operation = super::refusal_operation(entry.event)?;
        let details = details_text(entry.details);
        let ms = entry.ts.unix_millis();
        let event = event_name(entry.event);
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

    fn recover(&self, now: Timestamp) -> Result<Recovery, Error> {
        // A claim and its `consumed` row commit together: only executions can be cut.
        let ms = now.unix_millis();
        let recovered = self.pool.run("recover", None, Retry::Connect, |client| {
            let rows = client.query("SELECT approval_gate.recover_executions($1)", &[&ms])?;
            if !rows.is_empty() {
                // Several requests, or one: every listener re-reads what it waits on.
                client.wake("");
            }
            Ok(rows)
        });
        let unknown_outcomes = match recovered {
            Ok(rows) => rows
                .iter()
                .filter_map(|row| RequestId::parse(row.get::<_, &str>(0)).ok())
                .collect(),
            // A login that may do none of the three roles' steps can still read.
            Err(Error::NotPermitted { .. }) => Vec::new(),
            Err(other) => return Err(other),
        };
        Ok(Recovery {
            consumed: Vec::new(),
            unknown_outcomes,
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

    fn notices(&self) -> Result<Box<dyn crate::notices::Ledger>, Error> {
        Ok(Box::new(notices::PgLedger::new(self.pool.clone())?))
    }

    fn dead_letters(&self) -> Result<Vec<crate::notices::DeadLetter>, Error> {
        notices::dead_letters(&self.pool)
    }

    fn grant_allowance(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error> {
        self.grant(signed, entry)
    }

    fn cosign_allowance(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<Cosigned, Error> {
        self.cosign(id, signature, entry)
    }

    fn revoke_allowance(&self, id: RequestId, entry: &Entry<'_>) -> Result<Revoked, Error> {
        self.revoke(id, entry)
    }

    fn allowance(&self, id: RequestId) -> Result<Option<Kept>, Error> {
        Ok(self.read_allowances(Some(id))?.into_iter().next())
    }

    fn allowances(&self) -> Result<Vec<Kept>, Error> {
        self.read_allowances(None)
    }

    fn stray_entries(&self) -> Result<Vec<std::path::PathBuf>, Error> {
        schema::strays(&self.pool)
    }

    fn watch(&self, sink: ChangeSink) -> Result<Guard, String> {
        listen::watch(&self.pool, sink)
    }
}

impl Chain for PgStore {
    fn check_appendable(&self) -> Result<(), Error> {
        audit::check_appendable(self)
    }

    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        // One read: the lines and the head row in one snapshot.
        let (bytes, head_seq, head_hash) = self.chain()?;
        let (records, summary) = parse_chain_with(&bytes, LineHash::Sha256)?;
        Ok((check_head(summary, head_seq, &head_hash)?, records))
    }

    fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        let (bytes, _, _) = self.chain()?;
        parse_chain_with(&bytes, LineHash::Sha256).map(|(records, _)| records)
    }

    fn reanchor(&self, now: Timestamp, by: &str) -> Result<Reanchored, Error> {
        audit::reanchor(self, now, by)
    }
}

#[cfg(test)]
mod tests;
