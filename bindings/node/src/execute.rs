//! Executions: the library's `Gate::execute_approved` on a thread of this module, with the body
//! run by JavaScript on Node's event loop.
//!
//! The thread calls `execute_approved`; inside its closure (after the consume, the durable
//! `execution_started` and the expiry re-check) it hands the grant to JavaScript and waits for
//! the body's outcome, which `NativeExecution::finish` sends; the library then writes
//! `execution_finished`. So the order and the records are the library's own, and no step of the
//! store runs on the event loop. If the outcome never comes (the execution object is dropped
//! unfinished) the closure unwinds and the library records the outcome as unknown; if the
//! process dies, the marker left behind makes the next open record it as unknown.
//!
//! The threads are kept for the next execution once theirs is recorded (a few idle ones at
//! most): starting a thread costs more than the rest of the module's work around an execution.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

use approval_gate::{Error, Gate, Grant, RequestId};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::Value;

use crate::binding::{BindingInput, binding};
use crate::grant::NativeGrant;
use crate::{Job, to_js};

/// Why an execution failed: the gate refused or failed around the body, or the body threw
/// (its text, for the audit log).
enum Failure {
    Gate(Error),
    Body(String),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Gate(error)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gate(error) => error.fmt(f),
            Self::Body(text) => f.write_str(text),
        }
    }
}

/// The body's outcome, as JavaScript reports it: `Ok`, or the text of what it threw.
type BodyOutcome = Result<(), String>;

/// The execution thread's unwinding payload when nobody will ever report the body's outcome:
/// the library records the outcome as unknown.
struct Abandoned;

/// A started execution, for its `finish`: where to send the outcome, and where its thread says
/// the outcome is recorded.
pub struct Running {
    outcome: Sender<BodyOutcome>,
    recorded: Receiver<()>,
}

/// What an execution thread runs.
type Work = Box<dyn FnOnce() + Send>;

/// Idle execution threads, each waiting for its next work.
static IDLE: Mutex<Vec<Sender<Work>>> = Mutex::new(Vec::new());

/// How many idle execution threads are kept; more end when their execution does.
const MAX_IDLE: usize = 8;

/// Runs `work` on an idle execution thread, or on a new one.
fn on_execution_thread(work: Work) -> std::io::Result<()> {
    let mut work = work;
    loop {
        let idle = IDLE.lock().ok().and_then(|mut idle| idle.pop());
        let Some(worker) = idle else { break };
        match worker.send(work) {
            Ok(()) => return Ok(()),
            // That thread is gone: take the work back and try another.
            Err(returned) => work = returned.0,
        }
    }
    let (sender, receiver) = channel::<Work>();
    let _ = sender.send(work);
    std::thread::Builder::new()
        .name("approval-gate-execute".into())
        .spawn(move || {
            while let Ok(work) = receiver.recv() {
                // An abandoned execution unwinds out of its work (its outcome is recorded
                // unknown by then): the thread itself goes on.
                let _ = catch_unwind(AssertUnwindSafe(work));
                let Ok(mut idle) = IDLE.lock() else { return };
                if idle.len() >= MAX_IDLE {
                    return;
                }
                idle.push(sender.clone());
            }
        })
        .map(drop)
}

/// Starts an execution on a thread of this module, on libuv's pool only until the library
/// answers whether the body may run.
pub struct Begin {
    work: Option<(Gate, RequestId, BindingInput)>,
}

impl Begin {
    pub(crate) fn new(gate: Gate, id: RequestId, input: BindingInput) -> Self {
        Self {
            work: Some((gate, id, input)),
        }
    }
}

/// The execution thread: `execute_approved`, handing the grant over `started` and waiting on
/// `outcome` for the body's.
fn run(
    gate: &Gate,
    id: RequestId,
    input: BindingInput,
    started: &Sender<Result<NativeGrant, Error>>,
    outcome: &Receiver<BodyOutcome>,
) {
    let binding = match binding(gate, id, input) {
        Ok(binding) => binding,
        Err(refusal) => {
            let _ = started.send(Err(refusal));
            return;
        }
    };
    let result = gate.execute_approved(id, &binding, |grant: &Grant<Value>| {
        let native = NativeGrant::new(gate, grant)?;
        if started.send(Ok(native)).is_err() {
            // Nobody can run the body any more; it did not run.
            return Err(Failure::Body(
                "the executor went away before the body ran".into(),
            ));
        }
        match outcome.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(text)) => Err(Failure::Body(text)),
            // The body may or may not have had its effect: unwinding through the library's
            // execution record makes it record an unknown outcome.
            Err(_) => std::panic::resume_unwind(Box::new(Abandoned)),
        }
    });
    if let Err(Failure::Gate(error)) = result {
        // A refusal before the body ran (the body's own failure was reported by JavaScript).
        let _ = started.send(Err(error));
    }
}

impl Task for Begin {
    type Output = (NativeGrant, Running);
    type JsValue = NativeExecution;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (gate, id, input) = self
            .work
            .take()
            .ok_or_else(|| napi::Error::from_reason("this execution already began"))?;
        let (started_tx, started_rx) = channel();
        let (outcome_tx, outcome_rx) = channel();
        let (recorded_tx, recorded_rx) = channel();
        on_execution_thread(Box::new(move || {
            run(&gate, id, input, &started_tx, &outcome_rx);
            let _ = recorded_tx.send(());
        }))
        .map_err(|source| {
            to_js(&Error::Io {
                op: "start the execution thread",
                path: std::path::PathBuf::new(),
                source,
            })
        })?;
        match started_rx.recv() {
            Ok(Ok(grant)) => Ok((
                grant,
                Running {
                    outcome: outcome_tx,
                    recorded: recorded_rx,
                },
            )),
            Ok(Err(refusal)) => Err(to_js(&refusal)),
            Err(_) => Err(napi::Error::from_reason(
                "the execution thread ended without an answer; nothing ran",
            )),
        }
    }

    fn resolve(
        &mut self,
        _env: Env,
        (grant, running): Self::Output,
    ) -> napi::Result<NativeExecution> {
        Ok(NativeExecution {
            grant,
            running: Mutex::new(Some(running)),
        })
    }
}

/// An execution whose body may run now: `execution_started` is durable and the expiry was
/// re-checked. `finish` records the body's outcome; dropped unfinished, the outcome is recorded
/// as unknown.
#[napi]
pub struct NativeExecution {
    grant: NativeGrant,
    running: Mutex<Option<Running>>,
}

#[napi]
impl NativeExecution {
    /// What the consume proved: the request, the approved operation and payload.
    #[napi(getter)]
    pub fn grant(&self) -> NativeGrant {
        self.grant.clone()
    }

    /// Records the body's outcome (`error` is the text of what it threw, `null` when it
    /// succeeded) and resolves once `execution_finished` is written. Once only.
    #[napi]
    pub fn finish(&self, error: Option<String>) -> napi::Result<AsyncTask<Job<()>>> {
        let running = self
            .running
            .lock()
            .map_err(|_| napi::Error::from_reason("the execution's lock is poisoned"))?
            .take()
            .ok_or_else(|| napi::Error::from_reason("this execution is already finished"))?;
        Ok(Job::spawn(move || {
            let outcome = error.map_or(Ok(()), Err);
            let _ = running.outcome.send(outcome);
            running.recorded.recv().map_err(|_| {
                napi::Error::from_reason("the execution thread failed before recording the outcome")
            })
        }))
    }
}
