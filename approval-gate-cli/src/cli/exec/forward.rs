//! Passing signals sent to `exec` on to its command.

use std::io;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, PoisonError};

use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

use super::FORWARDED;

/// Passes signals sent to exec on to the command, and stops exec before the command starts
/// if one comes first.
pub(super) struct Forwarder {
    state: Arc<Mutex<Forwarding>>,
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Forwarding {
    child: Option<rustix::process::Pid>,
    /// A signal that arrived before the command started.
    pending: Option<i32>,
}

impl Forwarder {
    pub(super) fn install() -> io::Result<Self> {
        let mut signals = SignalsInfo::<WithOrigin>::new(FORWARDED)?;
        let handle = signals.handle();
        let state = Arc::new(Mutex::new(Forwarding::default()));
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("exec-signals".into())
            .spawn(move || {
                for origin in signals.forever() {
                    let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    let Some(child) = state.child else {
                        state.pending.get_or_insert(origin.signal);
                        continue;
                    };
                    // The terminal sends its signals to the whole foreground process group,
                    // the command included: passing them on would deliver them twice.
                    let from_terminal = origin.cause == Cause::Kernel;
                    let from_child = origin
                        .process
                        .is_some_and(|p| p.pid == child.as_raw_nonzero().get());
                    if from_terminal || from_child {
                        continue;
                    }
                    if let Some(signal) = rustix::process::Signal::from_named_raw(origin.signal) {
                        let _ = rustix::process::kill_process(child, signal);
                    }
                }
            })?;
        Ok(Self {
            state,
            handle,
            thread: Some(thread),
        })
    }

    /// Starts the command unless a signal came first (then `None`).
    pub(super) fn spawn(&self, command: &mut Command) -> io::Result<Option<Child>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.pending.is_some() {
            return Ok(None);
        }
        let child = command.spawn()?;
        state.child = Some(rustix::process::Pid::from_child(&child));
        Ok(Some(child))
    }

    /// Waits for the command to end without reaping it, then stops passing signals on: until
    /// it is reaped its pid cannot be reused, so a signal passed on can only reach it.
    pub(super) fn until_ended(&self, child: &Child) {
        let pid = rustix::process::Pid::from_child(child);
        let options =
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
        // Ended, or not waitable at all (then the reaping wait says why); again if a signal
        // handler interrupted it.
        while let Err(rustix::io::Errno::INTR) =
            rustix::process::waitid(rustix::process::WaitId::Pid(pid), options)
        {}
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .child = None;
    }

    pub(super) fn pending(&self) -> Option<i32> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pending
    }

    pub(super) fn close(mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
