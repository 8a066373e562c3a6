//! The pending queue as it changes: new requests as they arrive, for a human's terminal, and
//! with them the decisions that take requests out of it, for a notifier or a chat bridge.

use std::collections::{HashSet, VecDeque};

use super::{Changes, Closer};
use crate::error::Error;
use crate::gate::Gate;
use crate::gate::list::{ListFilter, ListItem};
use crate::id::RequestId;
use crate::limits::MAX_PAGE;
use crate::request::{EffectiveStatus, StatusReport};

/// A change of the pending queue, from [`Watch::queue_events`](crate::Watch::queue_events).
// Nearly every event carries a request: boxing it would cost an allocation per event to save
// space in the rare unreadable one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueEvent {
    /// A request entered the queue (or was waiting when the watch began); an unreadable
    /// record in the pending index is reported this way too, once.
    Arrived(ListItem),
    /// A request this watch saw pending left the queue: approved, denied or expired, as the
    /// report's [`effective_status`](StatusReport::effective_status) says.
    Decided(StatusReport),
}

/// Every pending request once: those already waiting (oldest first, unreadable records
/// first), then each new one as it arrives; from [`Watch::arrivals`](crate::Watch::arrivals).
///
/// On each hint the pending queue is listed again and compared with what was already
/// yielded, so a lost event delays an arrival at most by the fallback interval. A request
/// that leaves the queue is forgotten. Blocks while nothing arrives; ends when
/// [closed](Arrivals::closer). An error listing the queue is yielded, and the next call
/// waits for the next hint and lists again.
#[derive(Debug)]
pub struct Arrivals(Tracker);

/// [`Arrivals`], and for each request it yielded, the decision that takes it out of the
/// queue ([`QueueEvent::Decided`]), found on the same listings; from
/// [`Watch::queue_events`](crate::Watch::queue_events). A request archived or gone before
/// its decision was seen yields nothing more.
#[derive(Debug)]
pub struct QueueEvents(Tracker);

impl Arrivals {
    pub(super) fn new(gate: Gate, changes: Changes) -> Self {
        Self(Tracker::new(gate, changes, false))
    }

    /// A handle that ends the iteration from any thread (a signal handler, say).
    #[must_use]
    pub fn closer(&self) -> Closer {
        self.0.changes.closer()
    }
}

impl QueueEvents {
    pub(super) fn new(gate: Gate, changes: Changes) -> Self {
        Self(Tracker::new(gate, changes, true))
    }

    /// A handle that ends the iteration from any thread (a signal handler, say).
    #[must_use]
    pub fn closer(&self) -> Closer {
        self.0.changes.closer()
    }
}

impl Iterator for Arrivals {
    type Item = Result<ListItem, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.0.next()? {
                Ok(QueueEvent::Arrived(item)) => return Some(Ok(item)),
                // Not asked for: the tracker yields none.
                Ok(QueueEvent::Decided(_)) => {}
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

impl Iterator for QueueEvents {
    type Item = Result<QueueEvent, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

/// What both iterators share: the listings, and what was seen.
#[derive(Debug)]
struct Tracker {
    gate: Gate,
    changes: Changes,
    seen: HashSet<RequestId>,
    ready: VecDeque<QueueEvent>,
    listed: bool,
    decisions: bool,
}

impl Tracker {
    fn new(gate: Gate, changes: Changes, decisions: bool) -> Self {
        Self {
            gate,
            changes,
            seen: HashSet::new(),
            ready: VecDeque::new(),
            listed: false,
            decisions,
        }
    }

    fn list_new(&mut self) -> Result<(), Error> {
        let mut pending = Vec::new();
        let mut after = None;
        loop {
            let page = self.gate.list(ListFilter::Pending, after, MAX_PAGE)?;
            pending.extend(page.items);
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let still: HashSet<RequestId> = pending.iter().map(ListItem::id).collect();
        let mut left: Vec<RequestId> = self
            .seen
            .iter()
            .filter(|id| !still.contains(id))
            .copied()
            .collect();
        left.sort_unstable();
        // A request leaves the queue for good, so forgetting it keeps `seen` small.
        self.seen.retain(|id| still.contains(id));
        if self.decisions {
            for id in left {
                match self.gate.status(id) {
                    Ok(report) if report.effective_status() != EffectiveStatus::Pending => {
                        self.ready.push_back(QueueEvent::Decided(report));
                    }
                    // Archived, or its record went: nothing more to say of it.
                    Ok(_) | Err(Error::Archived(_) | Error::NotFound(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        for item in pending {
            if self.seen.insert(item.id()) {
                self.ready.push_back(QueueEvent::Arrived(item));
            }
        }
        Ok(())
    }

    fn next(&mut self) -> Option<Result<QueueEvent, Error>> {
        loop {
            if self.changes.is_closed() {
                return None;
            }
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.listed {
                self.changes.next()?;
                // A burst of hints needs one listing, not one each.
                while self.changes.try_next().is_some() {}
            }
            self.listed = true;
            if let Err(error) = self.list_new() {
                return Some(Err(error));
            }
        }
    }
}
