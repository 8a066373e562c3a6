//! A wait for a decision, polled from an asyncio event loop.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use approval_gate::{Error, Waited, Waiting};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::payload::report;
use crate::to_py;

/// Wakes an asyncio event loop from the library's wait thread by writing a byte to a socket
/// the loop watches (`loop.add_reader`). It never touches Python: the library calls a waker
/// while it holds the lock that `poll` takes, so a waker that needed the GIL could deadlock
/// with a `poll` holding it.
struct WakeLoop {
    tx: UnixStream,
}

impl Wake for WakeLoop {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Non-blocking: a full socket already holds a wake-up the loop has not read yet.
        let _ = (&self.tx).write(&[1]);
    }
}

/// A wait for a decision as the library's future (`Watch::wait_for_decision_async`), polled
/// from an asyncio event loop: the library's own thread waits, and wakes the loop through the
/// socket `fileno()` names. Closing it (or dropping it) ends the wait and its thread at once.
#[pyclass(module = "approval_gate._native", name = "AsyncWait", frozen)]
pub(crate) struct PyAsyncWait {
    waiting: Mutex<Option<Waiting>>,
    waker: Waker,
    rx: UnixStream,
}

impl PyAsyncWait {
    /// Starts the wait with `start` (with the GIL released: a PostgreSQL store connects), and
    /// makes the socket that wakes the loop.
    pub(crate) fn start(py: Python<'_>, start: impl FnOnce() -> Waiting + Send) -> PyResult<Self> {
        let (tx, rx) = UnixStream::pair()
            .and_then(|(tx, rx)| {
                tx.set_nonblocking(true)?;
                rx.set_nonblocking(true)?;
                Ok((tx, rx))
            })
            .map_err(|e| {
                to_py(
                    py,
                    &Error::Io {
                        op: "making the wait's wake-up socket",
                        path: PathBuf::new(),
                        source: e,
                    },
                )
            })?;
        let waiting = py.detach(start);
        Ok(Self {
            waiting: Mutex::new(Some(waiting)),
            waker: Waker::from(Arc::new(WakeLoop { tx })),
            rx,
        })
    }
}

#[pymethods]
impl PyAsyncWait {
    /// The socket to watch for readability: readable when the answer may be ready.
    fn fileno(&self) -> i32 {
        self.rx.as_raw_fd()
    }

    /// `(decided, report)` once the wait is over, `None` while it is not. Never blocks.
    fn poll(&self, py: Python<'_>) -> PyResult<Option<(bool, Py<PyAny>)>> {
        // Drain the wake-ups first: one written after this is for a later poll.
        let mut buffer = [0u8; 64];
        while matches!((&self.rx).read(&mut buffer), Ok(n) if n > 0) {}
        let mut waiting = self
            .waiting
            .lock()
            .map_err(|_| PyValueError::new_err("the wait's lock is poisoned"))?;
        let Some(future) = waiting.as_mut() else {
            return Err(PyValueError::new_err("this wait is closed"));
        };
        let mut context = Context::from_waker(&self.waker);
        match Pin::new(future).poll(&mut context) {
            Poll::Pending => Ok(None),
            Poll::Ready(answer) => {
                waiting.take();
                let waited = answer.map_err(|e| to_py(py, &e))?;
                let decided = matches!(waited, Waited::Decided(_));
                Ok(Some((decided, report(py, waited.report())?)))
            }
        }
    }

    /// Ends the wait and its thread now; closing twice is harmless.
    fn close(&self) {
        let future = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.take());
        drop(future);
    }
}
