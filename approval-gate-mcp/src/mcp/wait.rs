//! `wait_for_approval`: the library's wait, with what belongs to MCP around it.
//!
//! The library does the waiting ([`Watch::wait_for_decision_async`]): one watcher of the
//! store shared by every wait, hints that only trigger a re-read, a fallback re-read and one
//! just after the request's expiry, on a thread of its own so no tokio worker blocks. This
//! module adds only progress notifications, the client's cancellation and the server's
//! shutdown; dropping the library's future ends its wait.

use std::time::Duration;

use approval_gate::{RequestId, StatusReport, Waited, Watch};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::agent_gate::Failure;

/// Progress notifications, when asked for, this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How a wait ended.
// One per wait, matched at once: boxing the report would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum WaitEnd {
    /// No longer pending: approved, denied, expired, revoked, consumed.
    Decided(StatusReport),
    /// Still pending when the wait's time ran out, as this last read shows.
    TimedOut(StatusReport),
    /// Still pending when the server began shutting down.
    ShuttingDown,
    /// The client cancelled the call.
    Cancelled,
    /// The store could not answer.
    Failed(Failure),
}

/// Where MCP progress notifications for one call go.
pub(crate) struct Progress {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) token: ProgressToken,
}

impl Progress {
    async fn report(&self, id: RequestId, elapsed: Duration, timeout: Duration) {
        let param = ProgressNotificationParam::new(self.token.clone(), elapsed.as_secs_f64())
            .with_total(timeout.as_secs_f64())
            .with_message(format!(
                "waiting for a human to decide request {id} (`approval-gate approve {id}` or `approval-gate deny {id}`)"
            ));
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!("cannot send progress: {e}");
        }
    }
}

/// What a wait needs besides the request: the store's watch and the server's shutdown.
pub(crate) struct Waiter<'a> {
    pub(crate) watch: &'a Watch,
    pub(crate) shutdown: &'a CancellationToken,
}

impl Waiter<'_> {
    /// Waits until request `id` is no longer pending, `timeout` passes, the call is
    /// cancelled or the server shuts down, whichever comes first.
    pub(crate) async fn wait(
        &self,
        id: RequestId,
        timeout: Duration,
        cancelled: &CancellationToken,
        progress: Option<Progress>,
    ) -> WaitEnd {
        let started = Instant::now();
        // Polled first below, so it has subscribed to the store's changes before the first
        // progress notification tells the client the wait is running.
        let mut waiting = self.watch.wait_for_decision_async(id, timeout);
        let mut ticks = tokio::time::interval(PROGRESS_EVERY);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = cancelled.cancelled() => return WaitEnd::Cancelled,
                () = self.shutdown.cancelled() => return WaitEnd::ShuttingDown,
                waited = &mut waiting => return match waited {
                    Ok(Waited::Decided(report)) => WaitEnd::Decided(report),
                    Ok(Waited::TimedOut(report)) => WaitEnd::TimedOut(report),
                    Err(error) => WaitEnd::Failed(Failure::Gate(error)),
                },
                _ = ticks.tick(), if progress.is_some() => {
                    if let Some(progress) = &progress {
                        progress.report(id, started.elapsed(), timeout).await;
                    }
                }
            }
        }
    }
}
