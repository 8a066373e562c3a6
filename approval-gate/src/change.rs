//! What a store says when something in it changed: hints its watcher sends, which the waits
//! (`wait`) fan out. Below both, so that neither imports the other.

use crate::id::RequestId;

/// A hint that something in the store changed. Hints are never evidence: whoever receives
/// one reads the store again, and a missed hint is made up for by the fallback re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Change {
    /// The record of this request changed: it was filed, decided, expired, or archived.
    Request(RequestId),
    /// Something may have changed that no hint names: the watcher lost events, reported an
    /// error, or the fallback interval passed. Read everything you care about again.
    Unknown,
}

/// Where a store sends change hints.
pub(crate) type ChangeSink = Box<dyn Fn(Change) + Send + Sync>;
