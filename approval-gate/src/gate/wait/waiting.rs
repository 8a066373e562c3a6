//! The async form of a wait for a decision, with no async runtime in the crate.
//!
//! The wait itself is the blocking loop, run on a thread of its own: it sleeps on its
//! subscription between reads, so it costs no CPU, and the store's blocking reads never
//! stall an executor thread. The future only hands over the answer and the waker. Dropping
//! the future closes the subscription, which wakes the thread, and the thread ends without
//! another read.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use super::{Closer, Waited, Watch, wait};
use crate::error::Error;
use crate::id::RequestId;

/// A wait for a decision, as a [`Future`]; from [`Watch::wait_for_decision_async`].
///
/// Resolves as [`Watch::wait_for_decision`] returns. Works under any executor (tokio,
/// including its current-thread runtime, async-std, a hand-rolled `block_on`). It is
/// `Send` and `Unpin`, so it can be polled by reference in a `select!`.
#[derive(Debug)]
#[must_use = "a wait does nothing until polled"]
pub struct Waiting {
    start: Option<(Watch, RequestId, Duration)>,
    handoff: Arc<Mutex<Handoff>>,
    closer: Option<Closer>,
}

#[derive(Debug, Default)]
struct Handoff {
    answer: Option<Result<Waited, Error>>,
    waker: Option<Waker>,
}

impl Waiting {
    pub(super) fn new(watch: Watch, id: RequestId, timeout: Duration) -> Self {
        Self {
            start: Some((watch, id, timeout)),
            handoff: Arc::default(),
            closer: None,
        }
    }

    fn spawn(&mut self, watch: &Watch, id: RequestId, timeout: Duration) -> Result<(), Error> {
        let mut changes = watch.changes();
        let gate = watch.gate().clone();
        let handoff = Arc::clone(&self.handoff);
        self.closer = Some(changes.closer());
        thread::Builder::new()
            .name(format!("approval-gate wait {id}"))
            .spawn(move || {
                let Some(answer) = wait(&gate, &mut changes, id, timeout).transpose() else {
                    // The future was dropped: nobody is waiting for an answer.
                    return;
                };
                let mut handoff = handoff.lock().unwrap_or_else(PoisonError::into_inner);
                handoff.answer = Some(answer);
                if let Some(waker) = handoff.waker.take() {
                    waker.wake();
                }
            })
            .map(drop)
            .map_err(|e| {
                Error::io(
                    "starting a thread to wait in",
                    watch.gate().location().to_string(),
                    e,
                )
            })
    }
}

impl Future for Waiting {
    type Output = Result<Waited, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some((watch, id, timeout)) = self.start.take()
            && let Err(error) = self.spawn(&watch, id, timeout)
        {
            return Poll::Ready(Err(error));
        }
        let mut handoff = self.handoff.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(answer) = handoff.answer.take() {
            return Poll::Ready(answer);
        }
        handoff.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(closer) = &self.closer {
            closer.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::gate::Gate;
    use crate::request::NewRequest;

    /// Subscriptions alive on `watch` besides its own handle on the watcher.
    fn subscriptions(watch: &Watch) -> usize {
        Arc::strong_count(&watch.inner.source) - 1
    }

    #[test]
    fn dropping_the_future_ends_its_thread_and_subscription() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::open(dir.path().join("g")).unwrap();
        let id = gate
            .request_approval(NewRequest::new("wait", "test"))
            .unwrap()
            .request
            .id();
        let watch = gate.watcher().fallback(Duration::from_secs(60)).start();
        let mut waiting = watch.wait_for_decision_async(id, Duration::from_secs(600));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut waiting).poll(&mut cx).is_pending());
        assert_eq!(subscriptions(&watch), 1, "the wait's thread subscribed");
        drop(waiting);
        let deadline = Instant::now() + Duration::from_secs(10);
        while subscriptions(&watch) > 0 {
            assert!(Instant::now() < deadline, "the thread is still waiting");
            thread::sleep(Duration::from_millis(5));
        }
    }
}
