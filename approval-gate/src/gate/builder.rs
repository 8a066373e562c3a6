//! Configuring and opening a gate: the store, the clock, the limits and the policy.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Error;
use crate::gate::{Gate, Inner};
use crate::limits::Limits;
use crate::policy::Policy;
use crate::request::check_ttl;
use crate::store::Location;
use crate::time::{Clock, SystemClock};

/// Configures and opens a [`Gate`].
#[derive(Debug, Default)]
pub struct GateBuilder {
    location: Option<Location>,
    clock: Option<Arc<dyn Clock>>,
    limits: Limits,
    policy: Option<Policy>,
}

impl GateBuilder {
    /// The directory store in `dir` (default: [`Gate::default_location`]).
    #[must_use]
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.location = Some(Location::Dir(dir.into()));
        self
    }

    /// The store to use, as [`Location::parse`] reads `--store` (default:
    /// [`Gate::default_location`]).
    #[must_use]
    pub fn store(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// The clock for every expiry decision (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The operator's limits: queue cap, store cap, default time to live.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The quorum policy (default: none). Under a policy an approval counts only with the
    /// signatures of enough distinct trusted approvers, checked in this process whenever an
    /// approval is consumed; approvals must be signed, and new requests record how many
    /// approvers they need. See [`Policy`].
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Opens the store (a directory store creates its directories `0700` if needed), then
    /// runs [`Gate::recover`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a default TTL outside the accepted range, or a policy whose
    /// quorum table has no `*` entry ([`Policy::check_quorum_table`]) (nothing is created);
    /// [`Error::UnsafeState`] if the directory or a state file is a symlink, not owned by this
    /// user or open to others; [`Error::NoStateDir`] without a store to use;
    /// [`Error::Io`] if it cannot be created.
    pub fn open(self) -> Result<Gate, Error> {
        check_ttl("default_ttl", self.limits.default_ttl)?;
        if let Some(policy) = &self.policy {
            policy.check_quorum_table()?;
        }
        let location = match self.location {
            Some(location) => location,
            None => Gate::default_location()?,
        };
        let store = crate::store::open::open(location)?;
        let gate = Gate {
            inner: Arc::new(Inner {
                store,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                limits: self.limits,
                policy: self.policy,
            }),
        };
        match gate.recover() {
            // A broken audit log must stay inspectable (`approval-gate audit verify`); every
            // operation that needs to append to it refuses anyway.
            Ok(_) | Err(Error::AuditBroken { .. }) => Ok(gate),
            Err(other) => Err(other),
        }
    }
}
