//! Waiting for a human: for a decision on one request, or for new requests to decide. The
//! one place front ends learn that the store changed, so none of them watches the store's
//! files itself; see [`Watch`].

mod arrivals;
mod changes;
mod waiting;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::change::Change;
pub use arrivals::{Arrivals, QueueEvent, QueueEvents};
use changes::Subscribers;
pub use changes::{Changes, Closer};
pub use waiting::Waiting;

use crate::error::Error;
use crate::gate::Gate;
use crate::id::RequestId;
use crate::request::{EffectiveStatus, StatusReport};
use crate::store::Guard;

/// Re-read this often even without events, while the watcher runs.
pub const FALLBACK: Duration = Duration::from_millis(1500);
/// Re-read this often when no watcher could be started.
pub const FALLBACK_WITHOUT_EVENTS: Duration = Duration::from_millis(1000);

/// How a wait for a decision ended. Neither answer authorizes anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// The request is no longer pending: approved (consumed or not, expired or not),
    /// denied, expired or revoked.
    Decided(StatusReport),
    /// The time ran out and the request is still pending, as this last read shows: not
    /// approved.
    TimedOut(StatusReport),
}

impl Waited {
    /// The last read of the request, however the wait ended.
    #[must_use]
    pub fn report(&self) -> &StatusReport {
        match self {
            Self::Decided(report) | Self::TimedOut(report) => report,
        }
    }

    /// The last read of the request, however the wait ended.
    #[must_use]
    pub fn into_report(self) -> StatusReport {
        match self {
            Self::Decided(report) | Self::TimedOut(report) => report,
        }
    }
}

/// Configures and starts a [`Watch`]; from [`Gate::watcher`].
#[derive(Debug)]
#[must_use]
pub struct WatchBuilder {
    gate: Gate,
    fallback: Option<Duration>,
    events: bool,
}

impl WatchBuilder {
    /// Re-read at least this often, events or not (default [`FALLBACK`], or
    /// [`FALLBACK_WITHOUT_EVENTS`] when no watcher could be started). At least 1 ms.
    pub fn fallback(mut self, every: Duration) -> Self {
        self.fallback = Some(every.max(Duration::from_millis(1)));
        self
    }

    /// Do not watch for events; only re-read on the fallback interval. For stores whose
    /// changes the local kernel never sees (a network filesystem written from another
    /// machine), and for tests of the fallback.
    pub fn without_events(mut self) -> Self {
        self.events = false;
        self
    }

    /// Starts watching. Never fails: without a watcher (inotify limits reached, say) the
    /// watch polls, and [`Watch::polling`] says why.
    pub fn start(self) -> Watch {
        let subscribers = Arc::new(Subscribers::default());
        let source = if self.events {
            let sink = Arc::clone(&subscribers);
            match self
                .gate
                .store()
                .watch(Box::new(move |change| sink.send(change)))
            {
                Ok(watcher) => Source::Events { _watcher: watcher },
                Err(problem) => Source::Polling(problem),
            }
        } else {
            Source::Polling("events were not asked for".to_owned())
        };
        let fallback = self.fallback.unwrap_or(match source {
            Source::Events { .. } => FALLBACK,
            Source::Polling(_) => FALLBACK_WITHOUT_EVENTS,
        });
        Watch {
            inner: Arc::new(Inner {
                gate: self.gate,
                subscribers,
                fallback,
                source: Arc::new(source),
            }),
        }
    }
}

/// One watcher of a store, shared by everything that waits on it: on the
/// file store an inotify (or the platform's equivalent) watch on the directory of request
/// records, which every filing, decision, recorded expiry and archive renames a file into or
/// out of, whichever process made it. Its events are turned into [`Change`] hints and fanned
/// out to every [`Changes`] subscription.
///
/// Hints are never evidence. Whoever wakes reads the store again and believes only that; a
/// subscription also wakes on a fallback interval, in case an event was lost or the watcher
/// could not start at all (then the watch polls, and says why). A wait for a decision also
/// wakes just after the request's own expiry, since nobody writes an expiry to the store
/// until someone looks.
///
/// ```
/// use std::time::Duration;
/// use approval_gate::{Decision, EffectiveStatus, Gate, NewRequest, Waited};
///
/// # let dir = tempfile::tempdir()?;
/// let gate = Gate::open(dir.path().join("approvals"))?;
/// let id = gate.request_approval(NewRequest::new("deploy v2", "release day"))?.request.id();
///
/// let watch = gate.watch(); // one per process is enough
///
/// // A human decides, here from another thread; usually from another process.
/// let human = gate.clone();
/// std::thread::spawn(move || human.deny(id, &Decision::by("alice").reason("not today")));
///
/// match watch.wait_for_decision(id, Duration::from_secs(60))? {
///     Waited::Decided(report) => assert_eq!(report.effective_status(), EffectiveStatus::Denied),
///     Waited::TimedOut(_) => unreachable!("no human within a minute: not approved"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// From async code, on any runtime, the same wait is a future:
///
/// ```
/// # use std::time::Duration;
/// # use approval_gate::{Gate, NewRequest, Waited};
/// # let dir = tempfile::tempdir()?;
/// # let gate = Gate::open(dir.path().join("approvals"))?;
/// # let id = gate.request_approval(NewRequest::new("deploy v2", "release day"))?.request.id();
/// let watch = gate.watch();
/// # let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
/// # runtime.block_on(async {
/// let waited = watch.wait_for_decision_async(id, Duration::from_millis(50)).await?;
/// assert!(matches!(waited, Waited::TimedOut(_))); // nobody decided: not approved
/// # Ok::<(), approval_gate::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Whatever a wait returns, it authorizes nothing: only a consume does.
///
/// Cheap to clone (clones share the watcher) and cheap to subscribe to. It stops when the
/// last clone, subscription and wait is dropped.
#[derive(Debug, Clone)]
#[must_use = "a watch stops when dropped"]
pub struct Watch {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    gate: Gate,
    subscribers: Arc<Subscribers>,
    fallback: Duration,
    source: Arc<Source>,
}

enum Source {
    // Guard only to keep it running.
    Events { _watcher: Guard },
    Polling(String),
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Events { .. } => f.write_str("Events"),
            Self::Polling(why) => f.debug_tuple("Polling").field(why).finish(),
        }
    }
}

impl Gate {
    /// Starts a [`Watch`] of this store with the default settings.
    pub fn watch(&self) -> Watch {
        self.watcher().start()
    }

    /// A builder to choose the fallback interval, or to do without events.
    pub fn watcher(&self) -> WatchBuilder {
        WatchBuilder {
            gate: self.clone(),
            fallback: None,
            events: true,
        }
    }

    /// Waits, blocking the calling thread, until request `id` is no longer pending or
    /// `timeout` passes. Starts a watcher for this one wait; to wait on many requests, or
    /// from async code, start one [`Watch`] and use its methods.
    ///
    /// # Errors
    ///
    /// As [`status`](Gate::status): [`Error::NotFound`], [`Error::Archived`] (archived
    /// while waiting), [`Error::Unreadable`], I/O errors.
    pub fn wait_for_decision(&self, id: RequestId, timeout: Duration) -> Result<Waited, Error> {
        self.watch().wait_for_decision(id, timeout)
    }
}

impl Watch {
    // Not public: a front end that narrows what its callers may do with the gate (the MCP
    // server, which must never approve) can hand out a watch without handing out the gate.
    fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    /// Why this watch polls instead of following events; `None` while events arrive.
    #[must_use]
    pub fn polling(&self) -> Option<&str> {
        match &*self.inner.source {
            Source::Events { .. } => None,
            Source::Polling(why) => Some(why),
        }
    }

    /// How often its subscriptions wake without an event.
    #[must_use]
    pub fn fallback(&self) -> Duration {
        self.inner.fallback
    }

    /// A new subscription: every hint from now on.
    #[must_use]
    pub fn changes(&self) -> Changes {
        let source: Arc<dyn Send + Sync + fmt::Debug> = self.inner.source.clone();
        Changes::new(&self.inner.subscribers, self.inner.fallback, source)
    }

    /// Waits, blocking the calling thread, until request `id` is no longer pending or
    /// `timeout` passes, re-reading it on every hint that may concern it, on the fallback
    /// interval and just after its expiry. From async code use
    /// [`wait_for_decision_async`](Watch::wait_for_decision_async).
    ///
    /// # Errors
    ///
    /// As [`Gate::wait_for_decision`].
    pub fn wait_for_decision(&self, id: RequestId, timeout: Duration) -> Result<Waited, Error> {
        match wait(self.gate(), &mut self.changes(), id, timeout)? {
            Some(waited) => Ok(waited),
            None => unreachable!("nothing can close a subscription this function holds alone"),
        }
    }

    /// The same wait as a future, for any async runtime: a thread of its own waits and
    /// re-reads the store, so no executor thread ever blocks on it. The wait starts when the
    /// future is first polled; dropping it ends the wait and its thread at once.
    pub fn wait_for_decision_async(&self, id: RequestId, timeout: Duration) -> Waiting {
        Waiting::new(self.clone(), id, timeout)
    }

    /// Every pending request, those already waiting first, then each new one as it arrives:
    /// for a human's terminal or a notifier.
    #[must_use]
    pub fn arrivals(&self) -> Arrivals {
        Arrivals::new(self.gate().clone(), self.changes())
    }

    /// [`arrivals`](Watch::arrivals), and the decision (or expiry) that takes each of them
    /// out of the queue: what a bridge to a chat or paging tool follows.
    #[must_use]
    pub fn queue_events(&self) -> QueueEvents {
        QueueEvents::new(self.gate().clone(), self.changes())
    }
}

/// The wait loop behind both forms; `None` if `changes` was closed first.
fn wait(
    gate: &Gate,
    changes: &mut Changes,
    id: RequestId,
    timeout: Duration,
) -> Result<Option<Waited>, Error> {
    // `changes` was subscribed before this first read, so a decision landing in between
    // still wakes the loop.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        let report = gate.status(id)?;
        if report.effective_status() != EffectiveStatus::Pending {
            return Ok(Some(Waited::Decided(report)));
        }
        let now = Instant::now();
        if deadline.is_some_and(|deadline| now >= deadline) {
            return Ok(Some(Waited::TimedOut(report)));
        }
        // Expiry is judged on the gate's clock: one millisecond past `expires_at`.
        let to_expiry = gate
            .now()
            .millis_until(report.request().expires_at())
            .saturating_add(1)
            .max(1);
        let at_expiry = now.checked_add(Duration::from_millis(to_expiry.unsigned_abs()));
        let wake = match (deadline, at_expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        loop {
            let next = match wake {
                Some(wake) => changes.next_before(wake),
                None => changes.next(),
            };
            match next {
                Some(Change::Request(other)) if other != id => {}
                None if changes.is_closed() => return Ok(None),
                // A hint for this request, an unknown change, the fallback, expiry or the
                // deadline: read again.
                _ => break,
            }
        }
    }
}
