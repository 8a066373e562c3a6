//! The PostgreSQL store's notifications ledger: the table `approval_gate.notices`, written by
//! `claim_notice` and `record_notice` (`schema/notices.sql`) under the row's lock, so that any
//! number of notifiers share it: each message is claimed by one at a time, with a lease that
//! runs out if that one dies.

use std::sync::Arc;
use std::time::Duration;

use super::pool::{Pool, Retry};
use crate::error::Error;
use crate::notices::{DeadLetter, Ledger, NoticeClaim, Outcome};
use crate::time::Timestamp;

/// One notifier's ledger: `holder` names its leases.
pub(super) struct PgLedger {
    pool: Arc<Pool>,
    holder: String,
}

impl std::fmt::Debug for PgLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLedger")
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl PgLedger {
    /// A ledger whose leases are this process's own (a random holder token).
    pub(super) fn new(pool: Arc<Pool>) -> Result<Self, Error> {
        let mut raw = [0u8; 12];
        getrandom::fill(&mut raw).map_err(|e| Error::Random(e.to_string()))?;
        let holder = raw.iter().fold(String::new(), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        });
        Ok(Self { pool, holder })
    }
}

impl Ledger for PgLedger {
    fn claim(&self, key: &str, lease: Duration, now: Timestamp) -> Result<NoticeClaim, Error> {
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let ms = now.unix_millis();
        // Claiming twice is harmless (the holder's own lease is renewed): a lost session may
        // be tried again.
        let state: String = self.pool.run("notify", None, Retry::Read, |client| {
            Ok(client
                .query_one(
                    "SELECT approval_gate.claim_notice($1, $2, $3, $4)",
                    &[&key, &self.holder, &lease_ms, &ms],
                )?
                .get(0))
        })?;
        match state.as_str() {
            "mine" => Ok(NoticeClaim::Mine),
            "delivered" => Ok(NoticeClaim::Delivered),
            "dead" => Ok(NoticeClaim::Dead),
            "busy" => Ok(NoticeClaim::Busy),
            other => Err(Error::Database {
                operation: "notify",
                problem: format!("the database answered a claim with {other:?}"),
            }),
        }
    }

    fn record(&self, key: &str, outcome: &Outcome<'_>, now: Timestamp) -> Result<(), Error> {
        let (state, reason, attempts) = match outcome {
            Outcome::Delivered => ("delivered", None, None),
            Outcome::Dead { reason, attempts } => (
                "dead",
                Some(*reason),
                Some(i32::try_from(*attempts).unwrap_or(i32::MAX)),
            ),
        };
        let ms = now.unix_millis();
        // Recording twice records the same: safe to try again.
        self.pool.run("notify", None, Retry::Read, |client| {
            client.execute(
                "SELECT approval_gate.record_notice($1, $2, $3, $4, $5)",
                &[&key, &state, &reason, &attempts, &ms],
            )
        })?;
        Ok(())
    }
}

/// The dead letters, oldest first.
pub(super) fn dead_letters(pool: &Pool) -> Result<Vec<DeadLetter>, Error> {
    let rows = pool.run("doctor", None, Retry::Read, |client| {
        client.query(
            "SELECT key, coalesce(reason, ''), coalesce(attempts, 0), at_ms
             FROM approval_gate.notices WHERE state = 'dead' ORDER BY at_ms, key",
            &[],
        )
    })?;
    Ok(rows
        .iter()
        .map(|row| DeadLetter {
            key: row.get(0),
            reason: row.get(1),
            attempts: u32::try_from(row.get::<_, i32>(2)).unwrap_or(0),
            at: Timestamp::from_unix_millis(row.get(3)),
        })
        .collect())
}
