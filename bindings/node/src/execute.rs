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
use std::sync::mpsc::{Sender, channel};

use approval_gate::{Error, Gate, Grant, RequestId};
use napi::bindgen_prelude::Object;
use napi::{Env, JsDeferred};
use napi_derive::napi;
use serde_json::Value;

use crate::binding::{BindingInput, binding};
use crate::grant::NativeGrant;
use crate::to_js;

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

/// A started execution, for its `finish`: where to send the body's outcome, with the Promise
/// its thread settles once the outcome is recorded.
pub struct Running {
    outcome: Sender<(BodyOutcome, Settle<()>)>,
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

/// A Promise's settling from the execution thread (through a thread-safe function: the event
/// loop settles it, no pool thread waits for it).
type Settle<T> = JsDeferred<T, Box<dyn FnOnce(Env) -> napi::Result<T> + Send>>;

/// The execution thread: `execute_approved`, handing the execution to `started` once the body
/// may run, waiting for the body's outcome (`NativeExecution::finish`), and settling the Promise
/// that came with it once the library has recorded it.
fn run(gate: &Gate, id: RequestId, input: BindingInput, started: Settle<NativeExecution>) {
    let binding = match binding(gate, id, input) {
        Ok(binding) => binding,
        Err(refusal) => return started.reject(to_js(&refusal)),
    };
    let mut started = Some(started);
    let mut recorded = None;
    let result = gate.execute_approved(id, &binding, |grant: &Grant<Value>| {
        let (outcome_tx, outcome_rx) = channel();
        let native = NativeGrant::new(gate, grant)?;
        if let Some(started) = started.take() {
            let running = Running {
                outcome: outcome_tx,
            };
            started.resolve(Box::new(move |_env| {
                Ok(NativeExecution {
                    grant: native,
                    running: Mutex::new(Some(running)),
                })
            }));
        }
        match outcome_rx.recv() {
            Ok((body, settle)) => {
                recorded = Some(settle);
                body.map_err(Failure::Body)
            }
            // The body may or may not have had its effect: unwinding through the library's
            // execution record makes it record an unknown outcome.
            Err(_) => std::panic::resume_unwind(Box::new(Abandoned)),
        }
    });
    if let Some(started) = started {
        // Refused before the body could run: nothing ran.
        let refusal = match result {
            Err(Failure::Gate(error)) => to_js(&error),
            _ => napi::Error::from_reason("the execution ended before its body could run"),
        };
        return started.reject(refusal);
    }
    if let Some(settle) = recorded {
        settle.resolve(Box::new(|_env| Ok(())));
    }
}

/// Starts an execution on an execution thread: a Promise of the `NativeExecution`, settled by
/// that thread once the library answers whether the body may run.
pub(crate) fn begin(
    env: &Env,
    gate: Gate,
    id: RequestId,
    input: BindingInput,
) -> napi::Result<Object<'_>> {
    let (started, promise) = env.create_deferred()?;
    on_execution_thread(Box::new(move || run(&gate, id, input, started))).map_err(|source| {
        to_js(&Error::Io {
            op: "start the execution thread",
            path: std::path::PathBuf::new(),
            source,
        })
    })?;
    Ok(promise)
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
    /// succeeded): a Promise settled once `execution_finished` is written. Once only.
    #[napi]
    pub fn finish<'env>(
        &self,
        env: &'env Env,
        error: Option<String>,
    ) -> napi::Result<Object<'env>> {
        let running = self
            .running
            .lock()
            .map_err(|_| napi::Error::from_reason("the execution's lock is poisoned"))?
            .take()
            .ok_or_else(|| napi::Error::from_reason("this execution is already finished"))?;
        let (recorded, promise) = env.create_deferred()?;
        let outcome = error.map_or(Ok(()), Err);
        if let Err(returned) = running.outcome.send((outcome, recorded)) {
            let (_, recorded) = returned.0;
            recorded.reject(napi::Error::from_reason(
                "the execution thread is gone: the outcome could not be recorded",
            ));
        }
        Ok(promise)
    }
}
