//! Blocking work handed to a thread of its own, awaited as a future, with no async runtime in
//! the crate: what keeps the `_async` methods from running fsyncs, file locks or database
//! calls on the thread that polls them (under any executor: tokio, including its
//! current-thread runtime, async-std, a hand-rolled `block_on`).
//!
//! The work starts when [`off_thread`] is called and always runs to its end, whether or not
//! anyone still awaits it: a step of the store is never left half done because a future was
//! dropped.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;

use crate::error::Error;

/// The answer of work running on its own thread, as a [`Future`].
#[derive(Debug)]
#[must_use = "the work runs anyway; its answer is lost unless awaited"]
pub(crate) struct OffThread<T> {
    handoff: Arc<Mutex<Handoff<T>>>,
    not_started: Option<Error>,
}

#[derive(Debug)]
struct Handoff<T> {
    answer: Option<thread::Result<T>>,
    waker: Option<Waker>,
}

/// Runs `work` on a new thread named after `what`, now; the future resolves to what it
/// returned, or to an I/O error if no thread could be started (then nothing ran). A panic in
/// `work` is resumed in whoever awaits it, as if it had run there.
pub(crate) fn off_thread<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> T + Send + 'static,
) -> OffThread<T> {
    let handoff = Arc::new(Mutex::new(Handoff {
        answer: None,
        waker: None,
    }));
    let theirs = Arc::clone(&handoff);
    let started = thread::Builder::new()
        .name(format!("approval-gate {what}"))
        .spawn(move || {
            let answer = panic::catch_unwind(AssertUnwindSafe(work));
            let mut handoff = theirs.lock().unwrap_or_else(PoisonError::into_inner);
            handoff.answer = Some(answer);
            if let Some(waker) = handoff.waker.take() {
                waker.wake();
            }
        });
    OffThread {
        handoff,
        not_started: started
            .err()
            .map(|e| Error::io("starting a thread for", what, e)),
    }
}

impl<T> Future for OffThread<T> {
    type Output = Result<T, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(error) = self.not_started.take() {
            return Poll::Ready(Err(error));
        }
        let mut handoff = self.handoff.lock().unwrap_or_else(PoisonError::into_inner);
        match handoff.answer.take() {
            Some(Ok(value)) => Poll::Ready(Ok(value)),
            Some(Err(panic)) => panic::resume_unwind(panic),
            None => {
                handoff.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future + Unpin>(mut future: F) -> F::Output {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(value) = Pin::new(&mut future).poll(&mut cx) {
                return value;
            }
            thread::yield_now();
        }
    }

    #[test]
    fn the_work_runs_on_another_thread_and_its_answer_comes_back() {
        let here = thread::current().id();
        let there = block_on(off_thread("test", move || thread::current().id())).unwrap();
        assert_ne!(there, here);
    }

    #[test]
    fn dropped_unawaited_the_work_still_runs_to_its_end() {
        let (done, finished) = std::sync::mpsc::channel();
        drop(off_thread("test", move || done.send(42).unwrap()));
        assert_eq!(finished.recv().unwrap(), 42);
    }

    #[test]
    #[should_panic(expected = "inside the work")]
    fn a_panic_in_the_work_reaches_whoever_awaits_it() {
        let _ = block_on(off_thread("test", || -> () { panic!("inside the work") }));
    }
}
