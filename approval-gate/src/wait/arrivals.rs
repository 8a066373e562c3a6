//! New pending requests as they arrive, for a human's terminal.

use std::collections::{HashSet, VecDeque};

use super::{Changes, Closer};
use crate::error::Error;
use crate::gate::Gate;
use crate::id::RequestId;
use crate::limits::MAX_PAGE;
use crate::list::{ListFilter, ListItem};

/// Every pending request once: those already waiting (oldest first, unreadable records
/// first), then each new one as it arrives; from [`Watch::arrivals`](crate::Watch::arrivals).
///
/// On each hint the pending queue is listed again and compared with what was already
/// yielded, so a lost event delays an arrival at most by the fallback interval. A request
/// that leaves the queue is forgotten. Blocks while nothing arrives; ends when
/// [closed](Arrivals::closer). An error listing the queue is yielded, and the next call
/// waits for the next hint and lists again.
#[derive(Debug)]
pub struct Arrivals {
    gate: Gate,
    changes: Changes,
    seen: HashSet<RequestId>,
    ready: VecDeque<ListItem>,
    listed: bool,
}

impl Arrivals {
    pub(super) fn new(gate: Gate, changes: Changes) -> Self {
        Self {
            gate,
            changes,
            seen: HashSet::new(),
            ready: VecDeque::new(),
            listed: false,
        }
    }

    /// A handle that ends the iteration from any thread (a signal handler, say).
    #[must_use]
    pub fn closer(&self) -> Closer {
        self.changes.closer()
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
        // A request leaves the queue for good, so forgetting it keeps `seen` small.
        self.seen
            .retain(|id| pending.iter().any(|item| item.id() == *id));
        for item in pending {
            if self.seen.insert(item.id()) {
                self.ready.push_back(item);
            }
        }
        Ok(())
    }
}

impl Iterator for Arrivals {
    type Item = Result<ListItem, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.changes.is_closed() {
                return None;
            }
            if let Some(item) = self.ready.pop_front() {
                return Some(Ok(item));
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
