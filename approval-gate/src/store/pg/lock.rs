//! The store's advisory locks: their classes, and a session lock held on a connection of
//! its own (taken through the schema's `hold`) for as long as its value lives.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::errors::{Failed, failed};
use super::pool::{Conn, Pool, RECONNECT_WINDOW, Retry, off_runtime};
use crate::error::Error;

/// A session advisory lock, held on a connection of its own until dropped.
pub(super) struct AdvisoryLock {
    pool: Arc<Pool>,
    /// In a mutex only because a held value must be `Sync`; one thread ever uses it.
    pub(super) client: Mutex<Option<Conn>>,
    class: i32,
    key: String,
}

impl AdvisoryLock {
    pub(super) fn take(
        pool: &Arc<Pool>,
        operation: &'static str,
        class: i32,
        key: &str,
    ) -> Result<Self, Error> {
        // Through the schema's `hold`: no role of the store may take advisory locks itself.
        let client = off_runtime(|| {
            let mut client = pool
                .take_within(Retry::Connect, Instant::now() + RECONNECT_WINDOW)
                .map_err(Failed::Sql)?;
            match client.execute("SELECT approval_gate.hold($1, $2)", &[&class, &key]) {
                Ok(_) => Ok(client),
                Err(error) => {
                    let failure = failed(&mut client.client, operation, Some(key), error);
                    pool.give(client);
                    Err(failure)
                }
            }
        })
        .map_err(|e| e.into_error(operation, None))?;
        Ok(Self {
            pool: Arc::clone(pool),
            client: Mutex::new(Some(client)),
            class,
            key: key.to_owned(),
        })
    }
}

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        let Some(mut client) = self
            .client
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let (pool, class, key) = (&self.pool, self.class, &self.key);
        off_runtime(move || {
            // A failed unlock closes the session instead, which lets go of the lock too.
            let unlocked = client.query_one(
                "SELECT pg_catalog.pg_advisory_unlock($1, pg_catalog.hashtext($2))",
                &[&class, key],
            );
            if matches!(unlocked, Ok(ref row) if row.get::<_, bool>(0)) {
                pool.give(client);
            }
        });
    }
}

/// An execution's mark: the session advisory lock its executor holds while it runs.
pub(super) struct Executing(#[allow(dead_code)] pub(super) AdvisoryLock);
