//! Every bound the gate enforces, and the operator's settings for the queue.
//!
//! The constants are fixed by the format: what a request, a payload or a page may hold. The
//! [`Limits`] are the operator's: how many requests may wait, how many may be kept, and how
//! long a request lives unless it asks for less. They are chosen by the trusted code that
//! opens the [`Gate`](crate::Gate) (or, for the binaries, by the environment and the config
//! file), never by the agent.

use std::time::Duration;

/// Longest accepted action text, in bytes.
pub const MAX_ACTION_BYTES: usize = 4096;
/// Longest accepted reason (for a request or a decision), in bytes.
pub const MAX_REASON_BYTES: usize = 4096;
/// Longest accepted requester or decider name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Longest accepted operation name, in bytes.
pub const MAX_OPERATION_BYTES: usize = 128;
/// Most distinct approvers a policy may require of one request.
pub const MAX_QUORUM: u32 = 16;
/// Longest accepted armored signature of one approval, in bytes (an RSA-4096 SSHSIG is about
/// 1.6 KiB; a passkey assertion's envelope is at most about 7.4 KiB, usually under 1.5).
pub const MAX_SIGNATURE_BYTES: usize = 8 * 1024;
/// Default time to live of a request, unless the operator sets another.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// Shortest accepted time to live.
pub const MIN_TTL: Duration = Duration::from_secs(10);
/// Longest accepted time to live.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Largest accepted payload, both as input JSON text and as canonical bytes.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;
/// Deepest accepted nesting of arrays and objects: a scalar is depth 0, `{}` or `[]` depth 1.
pub const MAX_PAYLOAD_DEPTH: usize = 32;
/// Largest integer magnitude every JSON reader (including JavaScript's) holds exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
/// Largest details of one audit line a store accepts from a caller, as JSON text in bytes:
/// well above what the library writes (its longest texts are bounded above).
pub const MAX_DETAILS_BYTES: usize = 64 * 1024;
/// Deepest nesting of one audit line's details (its object is depth 1): the library writes
/// flat objects.
pub const MAX_DETAILS_DEPTH: usize = 4;
/// Largest page [`Gate::list`](crate::Gate::list) returns.
pub const MAX_PAGE: usize = 1000;
/// Nothing younger than this (in creation and in expiry) is ever archived.
pub const MIN_ARCHIVE_AGE_DAYS: u32 = 8;
/// Default cap of the pending queue.
pub const DEFAULT_MAX_PENDING: usize = 100;
/// Default cap of the requests kept in the live store.
pub const DEFAULT_MAX_REQUESTS: usize = 10_000;

/// The operator's limits: they keep an agent from flooding the store, and fail new requests,
/// never a human's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The cap of the pending queue.
    pub max_pending: usize,
    /// The cap of the requests kept in the live store.
    pub max_requests: usize,
    /// The time to live of a request that does not say.
    pub default_ttl: Duration,
}

impl Default for Limits {
    /// [`DEFAULT_MAX_PENDING`] pending requests, [`DEFAULT_MAX_REQUESTS`] requests in the
    /// live store, requests living [`DEFAULT_TTL`] unless they ask for less.
    fn default() -> Self {
        Self {
            max_pending: DEFAULT_MAX_PENDING,
            max_requests: DEFAULT_MAX_REQUESTS,
            default_ttl: DEFAULT_TTL,
        }
    }
}

impl Limits {
    /// Caps the pending queue (`approval queue full` beyond it).
    #[must_use]
    pub fn max_pending(mut self, max: usize) -> Self {
        self.max_pending = max;
        self
    }

    /// Caps the requests kept in the live store (archive finished ones to make room).
    #[must_use]
    pub fn max_requests(mut self, max: usize) -> Self {
        self.max_requests = max;
        self
    }

    /// How long a request lives when it does not say ([`MIN_TTL`] to [`MAX_TTL`]; checked
    /// when the gate opens).
    #[must_use]
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }
}
