//! How the store's steps call the database: a read is tried again on a new session if its
//! session is lost, a write never is; a step refused for the request's state is reported as
//! [`Error::WrongState`] for the request as it stands, and a refused claim as the error its
//! reason names.

use super::PgStore;
use super::errors::{Failed, is_wrong_state};
use super::pool::{Conn, Retry};
use crate::error::Error;
use crate::id::RequestId;
use crate::store::{Shelf, Store};
use crate::time::Timestamp;

impl PgStore {
    pub(super) fn read<R: Send>(
        &self,
        operation: &'static str,
        id: Option<RequestId>,
        f: impl Fn(&mut Conn) -> Result<R, postgres::Error> + Send + Sync,
    ) -> Result<R, Error> {
        self.pool.run(operation, id, Retry::Read, f)
    }

    pub(super) fn write<R: Send>(
        &self,
        operation: &'static str,
        id: RequestId,
        f: impl Fn(&mut Conn) -> Result<R, postgres::Error> + Send + Sync,
    ) -> Result<R, Result<Error, postgres::Error>> {
        self.pool
            .run_raw(operation, Some(id), Retry::Connect, f)
            .map_err(|e| match e {
                Failed::Sql(e) if is_wrong_state(&e) => Err(e),
                other => Ok(other.into_error(operation, Some(id))),
            })
    }

    /// The error a step refused as the wrong state for stands for: the request as it stands.
    pub(super) fn wrong_state(
        &self,
        id: RequestId,
        operation: &'static str,
        now: Timestamp,
    ) -> Error {
        match (self.load(id, Shelf::Live), self.marks(id)) {
            (Ok(Some(request)), Ok(marks)) => Error::WrongState {
                id,
                operation,
                status: request.effective(marks.claimed, now),
            },
            (Err(error), _) | (_, Err(error)) => error,
            (Ok(None), _) => Error::NotFound(id),
        }
    }

    /// A write whose refusal for the request's state is reported as [`Error::WrongState`].
    pub(super) fn step<R: Send>(
        &self,
        operation: &'static str,
        id: RequestId,
        now: Timestamp,
        f: impl Fn(&mut Conn) -> Result<R, postgres::Error> + Send + Sync,
    ) -> Result<R, Error> {
        self.write(operation, id, f).map_err(|error| match error {
            Ok(error) => error,
            Err(_) => self.wrong_state(id, operation, now),
        })
    }

    pub(super) fn refusal(&self, id: RequestId, reason: &str) -> Error {
        let request = self.load(id, Shelf::Live).ok().flatten();
        match reason {
            "not_approved" => Error::NotApproved(id),
            "denied" => Error::Denied(id),
            "expired" => Error::Expired(id),
            "revoked" => Error::Revoked(id),
            "approval_expired" => Error::ApprovalExpired {
                id,
                expired_at: request.map_or(Timestamp::from_unix_millis(0), |r| r.expires_at()),
            },
            "insufficient_approvals" => Error::InsufficientApprovals {
                id,
                valid: request.as_ref().map_or(0, |r| {
                    u32::try_from(r.approvals().len()).unwrap_or(u32::MAX)
                }),
                required: request.map_or(1, |r| r.required_approvals()),
            },
            other => Error::Database {
                operation: "consume",
                problem: format!("the database refused the claim: {other}"),
            },
        }
    }
}
