//! The notifications ledger: which messages about pending requests were delivered, and which
//! were given up on (dead letters), kept in the store so a restarted notifier, or another one
//! over the same PostgreSQL store, does not tell anyone twice.
//!
//! The work itself is not kept here: a notifier derives what is due from the pending queue
//! (a message when a request is filed, a reminder before it expires, an escalation after a
//! delay) and asks the ledger, by each message's delivery key, whether it is still to be sent.
//! Filing a request costs nothing more.
//!
//! A notifier [claims](Notices::claim) a key before sending, with a lease: on PostgreSQL,
//! several notifiers claim under a row lock, so one sends and the others see
//! [`NoticeClaim::Busy`]; a notifier that dies holding a lease lets the key go when it runs out.
//! On a directory store one notifier runs at a time ([`Gate::notices`] refuses a second), so a
//! claim is only a look-up. Either way delivery is at least once: a notifier that dies after
//! sending but before [`delivered`](Notices::delivered) is recorded sends again.
//!
//! What the ledger can do to the gate: a process that can write it can suppress or repeat
//! notifications, never approve anything (docs/threat-model.md).
//!
//! [`Gate::notices`]: crate::Gate::notices

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::error::Error;
use crate::time::{Clock, Timestamp};

/// The longest delivery key: `<request id>.<channel>.<kind>` with a 32-byte channel name
/// fits well within it.
pub const MAX_NOTICE_KEY_BYTES: usize = 100;
/// The longest reason a dead letter keeps; a longer one is cut.
pub const MAX_NOTICE_REASON_BYTES: usize = 500;

/// What [`Notices::claim`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoticeClaim {
    /// The caller may send it: nobody delivered it, gave it up, or holds a lease on it.
    Mine,
    /// It was delivered: do not send it again.
    Delivered,
    /// It was given up on (a dead letter): do not send it again.
    Dead,
    /// Another notifier holds a lease on it now: leave it to that one.
    Busy,
}

/// A message given up on: a permanent failure, or too many attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DeadLetter {
    /// Its delivery key, `<request id>.<channel>.<kind>`.
    pub key: String,
    /// Why it was given up on, as the notifier said.
    pub reason: String,
    /// How many attempts were made.
    pub attempts: u32,
    /// When it was given up on.
    pub at: Timestamp,
}

/// One record of the ledger, as a backend keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome<'a> {
    Delivered,
    Dead { reason: &'a str, attempts: u32 },
}

/// What a backend keeps for notifications: the store's side of [`Notices`].
pub(crate) trait Ledger: Send + Sync + fmt::Debug {
    /// Claims `key` for `lease` from `now`: [`NoticeClaim::Mine`] unless it was delivered,
    /// dead-lettered, or is under another's unexpired lease.
    fn claim(&self, key: &str, lease: Duration, now: Timestamp) -> Result<NoticeClaim, Error>;
    /// Records that `key` was delivered or given up on, durably, at `now`.
    fn record(&self, key: &str, outcome: &Outcome<'_>, now: Timestamp) -> Result<(), Error>;
}

/// A notifier's handle on the ledger ([`Gate::notices`](crate::Gate::notices)).
#[derive(Debug)]
pub struct Notices {
    ledger: Box<dyn Ledger>,
    clock: Arc<dyn Clock>,
}

impl Notices {
    pub(crate) fn new(ledger: Box<dyn Ledger>, clock: Arc<dyn Clock>) -> Self {
        Self { ledger, clock }
    }

    /// Claims the message `key` for `lease` (how long the caller may take to send it before
    /// another notifier may try): whether the caller should send it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a key that is not 1 to [`MAX_NOTICE_KEY_BYTES`] of
    /// `a-z0-9._-`; the store's errors.
    pub fn claim(&self, key: &str, lease: Duration) -> Result<NoticeClaim, Error> {
        check_key(key)?;
        self.ledger.claim(key, lease, self.clock.now())
    }

    /// Records that `key` was delivered, durably: no notifier sends it again.
    ///
    /// # Errors
    ///
    /// As [`claim`](Self::claim).
    pub fn delivered(&self, key: &str) -> Result<(), Error> {
        check_key(key)?;
        self.ledger
            .record(key, &Outcome::Delivered, self.clock.now())
    }

    /// Records that `key` was given up on after `attempts`, for `reason` (cut at
    /// [`MAX_NOTICE_REASON_BYTES`]), durably: a dead letter, which `doctor` shows.
    ///
    /// # Errors
    ///
    /// As [`claim`](Self::claim).
    pub fn dead(&self, key: &str, reason: &str, attempts: u32) -> Result<(), Error> {
        check_key(key)?;
        let mut end = reason.len().min(MAX_NOTICE_REASON_BYTES);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        let outcome = Outcome::Dead {
            reason: &reason[..end],
            attempts,
        };
        self.ledger.record(key, &outcome, self.clock.now())
    }
}

/// A delivery key: 1 to [`MAX_NOTICE_KEY_BYTES`] of `a-z0-9._-`.
fn check_key(key: &str) -> Result<(), Error> {
    let good = !key.is_empty()
        && key.len() <= MAX_NOTICE_KEY_BYTES
        && key
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'));
    if good {
        Ok(())
    } else {
        Err(Error::InvalidInput {
            field: "key",
            problem: format!(
                "a delivery key is 1 to {MAX_NOTICE_KEY_BYTES} of a-z, 0-9, '.', '_' and '-'"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_and_plain() {
        assert!(check_key("0123456789ab.ops.filed").is_ok());
        assert!(check_key("a-b_c.d").is_ok());
        for bad in ["", "A", "a b", "a/b", "a\n", &"a".repeat(101)] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }
}
