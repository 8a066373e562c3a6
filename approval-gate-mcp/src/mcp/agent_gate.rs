//! The gate as an agent may use it: ask, look, list, deny, consume. Never approve or revoke.
//!
//! The MCP tools reach the store only through [`AgentGate`], and the [`Gate`] inside it is
//! private to this module, so no tool code can even name `approve`. Every call runs on
//! tokio's blocking pool: the store does synchronous file I/O with fsyncs and locks.

use approval_gate::{
    AllowanceReport, Binding, Decision, Error, Gate, ListFilter, NewRequest, Page, RequestId,
    StatusReport, Submitted,
};

/// Why a store call produced no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The library refused or failed; its [`Error::code`] tells the agent which.
    Gate(Error),
    /// The blocking task itself failed (it panicked or the runtime is shutting down).
    Task(String),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::Gate(error)
    }
}

/// A [`Gate`] narrowed to what an agent may do.
#[derive(Debug, Clone)]
pub(crate) struct AgentGate {
    gate: Gate,
}

impl AgentGate {
    pub(crate) fn new(gate: Gate) -> Self {
        Self { gate }
    }

    pub(crate) async fn request(&self, new: NewRequest) -> Result<Submitted, Failure> {
        self.blocking(move |gate| gate.request_approval(new)).await
    }

    pub(crate) async fn status(&self, id: RequestId) -> Result<StatusReport, Failure> {
        self.blocking(move |gate| gate.status(id)).await
    }

    /// The allowance `id` with what it has counted, to tell the agent what is left; `None`
    /// if it cannot be read (the answer then says less, and nothing else changes).
    pub(crate) async fn allowance(&self, id: RequestId) -> Option<AllowanceReport> {
        self.blocking(move |gate| gate.allowance(id)).await.ok()
    }

    pub(crate) async fn list_pending(
        &self,
        after: Option<RequestId>,
        limit: usize,
    ) -> Result<Page, Failure> {
        self.blocking(move |gate| gate.list(ListFilter::Pending, after, limit))
            .await
    }

    pub(crate) async fn deny(
        &self,
        id: RequestId,
        decision: Decision,
    ) -> Result<StatusReport, Failure> {
        self.blocking(move |gate| gate.deny(id, &decision)).await
    }

    /// Spends the approval. The grant is dropped here: this process executes nothing, it only
    /// tells the agent that the approval was spent on its behalf. A `binding` the agent's
    /// arguments could not make is a refused consume of `id` like any other, and recorded.
    pub(crate) async fn consume(
        &self,
        id: RequestId,
        binding: Result<Binding, Error>,
    ) -> Result<(), Failure> {
        self.blocking(move |gate| match binding {
            // `Value` carries any approved payload faithfully, and `null` for none.
            Ok(binding) => gate.consume::<serde_json::Value>(id, &binding).map(drop),
            Err(refusal) => {
                gate.record_refused_consume(id, &refusal);
                Err(refusal)
            }
        })
        .await
    }

    async fn blocking<T, F>(&self, call: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: FnOnce(&Gate) -> Result<T, Error> + Send + 'static,
    {
        let gate = self.gate.clone();
        match tokio::task::spawn_blocking(move || call(&gate)).await {
            Ok(result) => result.map_err(Failure::Gate),
            Err(join) => Err(Failure::Task(join.to_string())),
        }
    }
}
