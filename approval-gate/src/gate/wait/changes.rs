//! The fan-out of change hints: one watcher, any number of subscriptions.
//!
//! The watcher's thread pushes each hint into every live subscription's small queue and
//! wakes it. A subscription blocks on its own condition variable, so a wait costs nothing
//! while nothing happens, and it can be closed from any thread (a signal handler, a dropped
//! future) to end a blocked wait at once.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::change::Change;

/// More hints than this waiting unread in one subscription are replaced by one
/// [`Change::Unknown`]: a subscriber that far behind re-reads everything anyway.
const QUEUE_CAP: usize = 256;

/// Every live subscription of one watcher.
#[derive(Debug, Default)]
pub(crate) struct Subscribers {
    slots: Mutex<Vec<Weak<Slot>>>,
}

impl Subscribers {
    /// Hands `change` to every live subscription, forgetting the dropped ones.
    pub(crate) fn send(&self, change: Change) {
        let mut slots = lock(&self.slots);
        slots.retain(|slot| {
            let Some(slot) = slot.upgrade() else {
                return false;
            };
            slot.push(change);
            true
        });
    }

    fn subscribe(&self) -> Arc<Slot> {
        let slot = Arc::new(Slot::default());
        lock(&self.slots).push(Arc::downgrade(&slot));
        slot
    }
}

#[derive(Debug, Default)]
struct Slot {
    state: Mutex<SlotState>,
    woken: Condvar,
}

#[derive(Debug, Default)]
struct SlotState {
    hints: VecDeque<Change>,
    closed: bool,
}

impl Slot {
    fn push(&self, change: Change) {
        let mut state = lock(&self.state);
        if state.closed || state.hints.contains(&change) {
            return;
        }
        if state.hints.len() >= QUEUE_CAP {
            state.hints.clear();
            state.hints.push_back(Change::Unknown);
        } else {
            state.hints.push_back(change);
        }
        drop(state);
        self.woken.notify_all();
    }

    fn close(&self) {
        lock(&self.state).closed = true;
        self.woken.notify_all();
    }
}

/// One subscription to a [`Watch`](crate::Watch): the hints that arrived since it was made,
/// and a [`Change::Unknown`] at least every fallback interval, so a loop that re-reads the
/// store on each item is correct even when events are lost or unavailable.
///
/// As an [`Iterator`] it blocks for the next hint and ends only when
/// [closed](Changes::closer). Hints that arrived while nobody was looking are kept (a burst
/// of the same hint once), so subscribe *before* the first read of the store.
#[derive(Debug)]
pub struct Changes {
    slot: Arc<Slot>,
    fallback: Duration,
    next_tick: Instant,
    // Keeps the watcher running while this subscription lives.
    _source: Arc<dyn Send + Sync + std::fmt::Debug>,
}

impl Changes {
    pub(crate) fn new(
        subscribers: &Subscribers,
        fallback: Duration,
        source: Arc<dyn Send + Sync + std::fmt::Debug>,
    ) -> Self {
        Self {
            slot: subscribers.subscribe(),
            fallback,
            next_tick: Instant::now() + fallback,
            _source: source,
        }
    }

    /// The next hint, waiting for it at most until `deadline`: `None` at the deadline, or
    /// once closed.
    pub fn next_before(&mut self, deadline: Instant) -> Option<Change> {
        self.next_until(Some(deadline))
    }

    /// The next hint if one is already there, without waiting; `None` otherwise.
    pub fn try_next(&mut self) -> Option<Change> {
        let mut state = lock(&self.slot.state);
        if state.closed {
            return None;
        }
        state.hints.pop_front()
    }

    /// A handle that ends this subscription from any thread: a blocked [`next`](Iterator::next)
    /// or [`next_before`](Changes::next_before) returns `None` at once, and so does every
    /// later call.
    #[must_use]
    pub fn closer(&self) -> Closer {
        Closer(Arc::clone(&self.slot))
    }

    /// Whether this subscription was closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        lock(&self.slot.state).closed
    }

    fn next_until(&mut self, deadline: Option<Instant>) -> Option<Change> {
        let mut state = lock(&self.slot.state);
        loop {
            if state.closed {
                return None;
            }
            if let Some(change) = state.hints.pop_front() {
                return Some(change);
            }
            let now = Instant::now();
            // The fallback runs on its own schedule: a stream of hints about other requests
            // must not postpone it.
            if now >= self.next_tick {
                self.next_tick = now + self.fallback;
                return Some(Change::Unknown);
            }
            let wake = match deadline {
                Some(deadline) if deadline <= now => return None,
                Some(deadline) => deadline.min(self.next_tick),
                None => self.next_tick,
            };
            state = self
                .slot
                .woken
                .wait_timeout(state, wake - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Iterator for Changes {
    type Item = Change;

    /// Blocks until the next hint (at the latest the fallback's [`Change::Unknown`]);
    /// `None` once closed.
    fn next(&mut self) -> Option<Change> {
        self.next_until(None)
    }
}

/// Ends a [`Changes`] subscription, or whatever waits on one, from any thread.
#[derive(Debug, Clone)]
pub struct Closer(Arc<Slot>);

impl Closer {
    /// Closes the subscription; idempotent.
    pub fn close(&self) {
        self.0.close();
    }
}

/// The state behind these locks stays consistent whatever panicked while holding them.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RequestId;

    fn subscription(fallback: Duration) -> (Arc<Subscribers>, Changes) {
        let subscribers = Arc::new(Subscribers::default());
        let changes = Changes::new(&subscribers, fallback, Arc::new(()));
        (subscribers, changes)
    }

    #[test]
    fn hints_arrive_in_order_and_a_burst_of_one_hint_counts_once() {
        let (subscribers, mut changes) = subscription(Duration::from_secs(60));
        let a = RequestId::parse("a1b2c3d4e5f6").unwrap();
        let b = RequestId::parse("0123456789ab").unwrap();
        for change in [Change::Request(a), Change::Request(a), Change::Request(b)] {
            subscribers.send(change);
        }
        assert_eq!(changes.try_next(), Some(Change::Request(a)));
        assert_eq!(changes.try_next(), Some(Change::Request(b)));
        assert_eq!(changes.try_next(), None);
    }

    #[test]
    fn a_subscriber_far_behind_gets_one_unknown() {
        let (subscribers, mut changes) = subscription(Duration::from_secs(60));
        for n in 0..=QUEUE_CAP as u64 {
            let id = RequestId::parse(&format!("{n:012x}")).unwrap();
            subscribers.send(Change::Request(id));
        }
        assert_eq!(changes.try_next(), Some(Change::Unknown));
        assert_eq!(changes.try_next(), None);
    }

    #[test]
    fn without_hints_the_fallback_yields_unknown_on_schedule() {
        let (_subscribers, mut changes) = subscription(Duration::from_millis(50));
        let started = Instant::now();
        assert_eq!(changes.next(), Some(Change::Unknown));
        assert_eq!(changes.next(), Some(Change::Unknown));
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        // A deadline before the next tick ends the wait empty-handed.
        assert_eq!(
            changes.next_before(Instant::now() + Duration::from_millis(5)),
            None
        );
    }

    #[test]
    fn closing_ends_a_blocked_wait_from_another_thread() {
        let (subscribers, mut changes) = subscription(Duration::from_secs(60));
        let closer = changes.closer();
        let started = Instant::now();
        let closing = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            closer.close();
        });
        assert_eq!(changes.next(), None);
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(changes.is_closed());
        closing.join().unwrap();
        // Closed stays closed, and hints no longer queue up.
        subscribers.send(Change::Unknown);
        assert_eq!(changes.try_next(), None);
    }

    #[test]
    fn dropped_subscriptions_are_forgotten() {
        let (subscribers, changes) = subscription(Duration::from_secs(60));
        drop(changes);
        subscribers.send(Change::Unknown);
        assert!(lock(&subscribers.slots).is_empty());
    }
}
