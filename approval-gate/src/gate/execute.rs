//! The trusted execution boundary: consume, record the start, re-check, run, record the end.

use std::fmt::Display;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::audit::{AuditEvent, Outcome};
use crate::error::Error;
use crate::faults::failpoint;
use crate::gate::Gate;
use crate::grant::Grant;
use crate::id::RequestId;
use crate::offload::off_thread;
use crate::request::Binding;
use crate::store::{Entry, Guard};

impl Gate {
    /// Runs `f` exactly once for an approved request, and only then.
    ///
    /// In order: [`consume`](Gate::consume) (binding to the action text, operation and
    /// payload); append `execution_started` and fsync it (if that fails, nothing runs);
    /// check the expiry again; call `f` with the [`Grant`], holding the frozen approved
    /// payload as `T`; append `execution_finished` with the outcome. `f` only borrows the
    /// grant: it cannot outlive the execution.
    ///
    /// Inside `f`, call [`Grant::assert_active`] immediately before the side effect. A
    /// crash between the start and the finish leaves the outcome unknown; nothing is ever
    /// retried. A panic in `f` is recorded as an unknown outcome and then resumes.
    ///
    /// ```
    /// use approval_gate::{Binding, CanonicalPayload, Decision, Gate, NewRequest};
    /// # let dir = tempfile::tempdir()?;
    /// # let gate = Gate::open(dir.path().join("gate"))?;
    /// # let payload = CanonicalPayload::from_json_text(r#"{"amount_cents":500}"#)?;
    /// # let id = gate.request_approval(NewRequest::new("pay 5 EUR", "rent").operation("pay").payload(payload.clone()))?.request.id();
    /// # gate.approve(id, &Decision::by("alice"))?;
    /// let binding = Binding::new("pay 5 EUR").operation("pay").payload(payload);
    /// let paid = gate.execute_approved(id, &binding, |grant: &approval_gate::Grant<serde_json::Value>| {
    ///     grant.assert_active()?;
    ///     Ok::<_, approval_gate::Error>(grant.payload()["amount_cents"].as_u64())
    /// })?;
    /// assert_eq!(paid, Some(500));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The grant stays inside: keeping it past the closure does not compile.
    ///
    /// ```compile_fail
    /// # use approval_gate::{Binding, Error, Gate, Grant, RequestId};
    /// # fn f(gate: &Gate, id: RequestId) {
    /// let mut kept: Option<&Grant<()>> = None;
    /// let _ = gate.execute_approved(id, &Binding::new("a"), |grant: &Grant<()>| {
    ///     kept = Some(grant); // the grant would outlive its execution
    ///     Ok::<_, Error>(())
    /// });
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Every refusal of [`consume`](Gate::consume), converted into `E`; an I/O error writing
    /// `execution_started`; [`Error::ApprovalExpired`] if the approval expired by the time
    /// the start was recorded; and whatever `f` returns.
    pub fn execute_approved<T, R, E, F>(
        &self,
        id: RequestId,
        binding: &Binding,
        f: F,
    ) -> Result<R, E>
    where
        T: DeserializeOwned + Serialize,
        E: From<Error> + Display,
        F: FnOnce(&Grant<T>) -> Result<R, E>,
    {
        let (grant, record) = self.begin::<T>(id, binding)?;
        failpoint!("execute::before_closure");
        let result = f(&grant);
        failpoint!("execute::after_closure");
        finish(record, &result);
        result
    }

    /// The async form of [`execute_approved`](Gate::execute_approved).
    ///
    /// The store's work (the consume, and recording the start and the outcome: fsyncs, file
    /// locks or database calls) runs on a thread of its own, never on the thread polling
    /// this future, under any executor; `f` is an async closure (`async |grant: &Grant<T>| {
    /// .. }`) borrowing the grant, awaited in place. Dropping the returned future never
    /// leaves a step half done: a consume or a start under way completes (and, with nobody
    /// to run the action, records an unknown outcome), and dropping it while `f` runs records
    /// an unknown outcome, on a thread of its own too.
    ///
    /// # Errors
    ///
    /// As [`execute_approved`](Gate::execute_approved); an I/O error if no thread could be
    /// started (nothing was consumed).
    pub async fn execute_approved_async<T, R, E, F>(
        &self,
        id: RequestId,
        binding: &Binding,
        f: F,
    ) -> Result<R, E>
    where
        T: DeserializeOwned + Serialize + Send + 'static,
        E: From<Error> + Display,
        F: AsyncFnOnce(&Grant<T>) -> Result<R, E>,
    {
        let gate = self.clone();
        let binding = binding.clone();
        let (grant, record) =
            off_thread("execute", move || gate.begin::<T>(id, &binding)).await??;
        let mut record = DropOffThread(Some(record));
        failpoint!("execute::before_closure");
        let result = f(&grant).await;
        failpoint!("execute::after_closure");
        let (outcome, error) = outcome_of(&result);
        if let Some(record) = record.0.take() {
            // The outcome is recorded whatever becomes of this future from here.
            let _ = off_thread("execute", move || record.finish(outcome, error)).await;
        }
        result
    }

    fn begin<T>(
        &self,
        id: RequestId,
        binding: &Binding,
    ) -> Result<(Grant<T>, ExecutionRecord), Error>
    where
        T: DeserializeOwned + Serialize,
    {
        // The consume need not be durable before the start is: the start's durability makes
        // both durable before anything runs (on the directory store, one sync for the two).
        self.store().defer_durability(true);
        let consumed = self.consume::<T>(id, binding);
        self.store().defer_durability(false);
        let grant = match consumed {
            Ok(grant) => grant,
            Err(error) => return Err(self.flushed(error)),
        };
        // The approval is spent from here: a failure to start says so.
        let record = match self.start_execution(&grant) {
            Ok(record) => record,
            Err(error) => return Err(self.flushed(error).after_effect(id, "execute")),
        };
        if let Err(error) = after_started() {
            record.finish(Outcome::NotRun, Some(error.to_string()));
            return Err(error.after_effect(id, "execute"));
        }
        if let Err(expired) = grant.assert_active() {
            record.finish(Outcome::NotRun, Some(expired.to_string()));
            return Err(expired);
        }
        Ok((grant, record))
    }
}

// Fails only at its failpoint, which exists only with the `failpoints` feature.
#[cfg_attr(not(feature = "failpoints"), allow(clippy::unnecessary_wraps))]
fn after_started() -> Result<(), Error> {
    failpoint!("execute::after_started");
    Ok(())
}

fn finish<R, E: Display>(record: ExecutionRecord, result: &Result<R, E>) {
    let (outcome, error) = outcome_of(result);
    record.finish(outcome, error);
}

/// What an execution's result says in its `execution_finished` line.
fn outcome_of<R, E: Display>(result: &Result<R, E>) -> (Outcome, Option<String>) {
    match result {
        Ok(_) => (Outcome::Ok, None),
        Err(error) => (Outcome::Error, Some(error.to_string())),
    }
}

/// An execution whose future may be dropped: if it still holds the record then, the record
/// is dropped (recording an unknown outcome) on a thread of its own, not on the thread that
/// polled the future.
struct DropOffThread(Option<ExecutionRecord>);

impl Drop for DropOffThread {
    fn drop(&mut self) {
        if let Some(record) = self.0.take() {
            // Not awaited: it runs to its end whatever becomes of its answer.
            drop(off_thread("execute", move || drop(record)));
        }
    }
}

impl Gate {
    /// `error`, once what was deferred before it is durable: a consume whose start never
    /// came (or the line of its refusal). A failure to flush is the error reported then.
    fn flushed(&self, error: Error) -> Error {
        match self.store().flush() {
            Err(flush) if error.took_effect() => Error::DurabilityUnknown {
                id: error.request_id().unwrap_or(RequestId::STORE),
                operation: "consume",
                source: Box::new(flush),
            },
            _ => error,
        }
    }

    /// Writes `execution_started` (fsynced) for a fresh grant; the returned guard writes
    /// `execution_finished`, or an "unknown" outcome if dropped unfinished.
    pub(crate) fn start_execution<T>(&self, grant: &Grant<T>) -> Result<ExecutionRecord, Error> {
        failpoint!("execute::before_started");
        let fields = json!({
            "operation": grant.operation(),
            "payloadDigest": grant.payload_digest(),
            "pid": std::process::id(),
        });
        let details = crate::gate::details(fields);
        let entry = Entry {
            ts: self.now(),
            event: AuditEvent::ExecutionStarted,
            details: &details,
        };
        let marker = self.store().begin_execution(grant.id(), &entry)?;
        Ok(ExecutionRecord {
            gate: self.clone(),
            id: grant.id(),
            open: true,
            marker: Some(marker),
        })
    }
}

/// Writes `execution_finished` once. Dropped unfinished (a panic, a cancelled future), it
/// records the outcome as unknown: the side effect may or may not have happened.
pub(crate) struct ExecutionRecord {
    gate: Gate,
    id: RequestId,
    open: bool,
    marker: Option<Guard>,
}

/// Longest error text kept in an `execution_finished` line.
const MAX_OUTCOME_TEXT: usize = 1024;

impl ExecutionRecord {
    pub(crate) fn finish(mut self, outcome: Outcome, error: Option<String>) {
        self.open = false;
        let error = error.map(|text| crate::audit::cut_text(text, MAX_OUTCOME_TEXT));
        self.record(json!({ "outcome": outcome, "error": error }));
    }

    /// The side effect has already happened or not; a failure to record it leaves a
    /// started-but-unfinished execution and its marker, which recovery reports as
    /// "outcome unknown" once this process is gone.
    fn record(&mut self, fields: serde_json::Value) {
        let details = crate::gate::details(fields);
        let entry = Entry {
            ts: self.gate.now(),
            event: AuditEvent::ExecutionFinished,
            details: &details,
        };
        let _ = self.gate.store().finish_execution(self.id, &entry);
        self.marker = None;
    }
}

impl Drop for ExecutionRecord {
    fn drop(&mut self) {
        if self.open {
            let why = if std::thread::panicking() {
                "the executor panicked"
            } else {
                "the execution was abandoned (future dropped)"
            };
            self.record(json!({ "outcome": Outcome::Unknown, "error": why }));
        }
    }
}
