//! The grant: in-process proof that a consume succeeded.

use std::fmt;
use std::sync::Arc;

use crate::error::Error;
use crate::id::RequestId;
use crate::payload::PayloadDigest;
use crate::time::{Clock, Timestamp};

/// Proof, inside this process, that an approval was consumed: made only by a successful
/// [`Gate::consume`](crate::Gate::consume), holding the approved payload as the executor's
/// type.
///
/// A `Grant` is an affine capability. It is not `Clone` or `Copy`, has no public constructor,
/// and is neither `Serialize` nor `Deserialize`, so a copy, a JSON round trip (an MCP response,
/// a file, an agent's message) or a hand-built value can never stand in for one. Lower-level
/// functions that perform side effects can take `&Grant<T>` to demand that proof.
///
/// ```compile_fail
/// # fn f(grant: approval_gate::Grant<()>) {
/// let copy = grant.clone(); // a grant cannot be cloned
/// # }
/// ```
///
/// ```compile_fail
/// # fn f(grant: approval_gate::Grant<()>) {
/// let json = serde_json::to_string(&grant); // nor serialized
/// # }
/// ```
///
/// ```compile_fail
/// # fn f() -> approval_gate::Grant<()> {
/// serde_json::from_str("{}").unwrap() // nor deserialized
/// # }
/// ```
///
/// ```compile_fail
/// let forged = approval_gate::Grant { payload: () }; // nor built by hand
/// ```
#[must_use = "a grant is the proof that an approval was consumed; dropping it wastes the approval"]
pub struct Grant<T> {
    id: RequestId,
    operation: Option<String>,
    payload_digest: Option<PayloadDigest>,
    expires_at: Timestamp,
    payload: T,
    clock: Arc<dyn Clock>,
}

impl<T> Grant<T> {
    pub(crate) fn new(
        id: RequestId,
        operation: Option<String>,
        payload_digest: Option<PayloadDigest>,
        expires_at: Timestamp,
        payload: T,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            id,
            operation,
            payload_digest,
            expires_at,
            payload,
            clock,
        }
    }

    /// The consumed request.
    #[must_use]
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// The approved operation, if the request carried one.
    #[must_use]
    pub fn operation(&self) -> Option<&str> {
        self.operation.as_deref()
    }

    /// Digest of the approved canonical payload, if the request carried one.
    #[must_use]
    pub fn payload_digest(&self) -> Option<PayloadDigest> {
        self.payload_digest
    }

    /// The approved payload, frozen: deserialized from the approved canonical bytes and
    /// checked to serialize back to exactly those bytes.
    #[must_use]
    pub fn payload(&self) -> &T {
        &self.payload
    }

    /// When the approval stops being usable.
    #[must_use]
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// Reads the clock and refuses if the approval has expired. Call it immediately before
    /// the side effect, and again after any wait that precedes it.
    ///
    /// # Errors
    ///
    /// [`Error::ApprovalExpired`] once the clock is past the expiry.
    pub fn assert_active(&self) -> Result<(), Error> {
        if self.clock.now() > self.expires_at {
            return Err(Error::ApprovalExpired {
                id: self.id,
                expired_at: self.expires_at,
            });
        }
        Ok(())
    }

    /// Spends the grant, keeping only the payload.
    #[must_use]
    pub fn into_payload(self) -> T {
        self.payload
    }
}

impl<T: fmt::Debug> fmt::Debug for Grant<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant")
            .field("id", &self.id)
            .field("operation", &self.operation)
            .field("payload_digest", &self.payload_digest)
            .field("expires_at", &self.expires_at)
            .field("payload", &self.payload)
            .finish_non_exhaustive()
    }
}
