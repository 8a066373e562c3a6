//! Waiting for a human decision without polling every few seconds.
//!
//! Every decision (approve, deny, revoke, a recorded expiry) and every archive renames a file
//! into or out of `requests/`. One file watcher on that directory, shared by all waits, turns
//! each such rename into a [`Change`] naming the request, fanned out over a broadcast
//! channel; a wait wakes only for its own request. Events are hints: a wait always re-reads
//! the request's status from the store, and also re-reads on a slow fallback tick (in case an
//! event is lost or the watcher could not start) and just after the request's own expiry,
//! which nobody writes to disk until someone looks.

use std::path::Path;
use std::time::Duration;

use approval_gate::{EffectiveStatus, RequestId, StatusReport};
use notify::{EventKind, RecursiveMode, Watcher};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::agent_gate::{AgentGate, Failure};

/// Re-read this often even without events, while the watcher runs.
const FALLBACK_TICK: Duration = Duration::from_millis(1500);
/// Re-read this often when no watcher could be started.
const POLL_WITHOUT_EVENTS: Duration = Duration::from_millis(1000);
/// Progress notifications, when asked for, this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// Room for bursts of changes before a slow wait lags (a lagging wait simply re-reads).
const CHANNEL_CAPACITY: usize = 1024;

/// Something in `requests/` changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// The file of this request was written, replaced or moved away.
    Request(RequestId),
    /// Something changed that cannot be pinned on one request (an overflow, a watcher error).
    Unknown,
}

/// The one watcher of the store, shared by every wait.
#[derive(Debug)]
pub(crate) struct Changes {
    sender: broadcast::Sender<Change>,
    tick: Duration,
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Changes {
    /// Watches `requests_dir`; without a watcher (say, inotify limits reached) waits poll.
    pub(crate) fn watch(requests_dir: &Path) -> Self {
        let (sender, _) = broadcast::channel(CHANNEL_CAPACITY);
        let forward_to = sender.clone();
        let watcher = notify::recommended_watcher(move |event| forward(&forward_to, event))
            .and_then(|mut watcher| {
                watcher.watch(requests_dir, RecursiveMode::NonRecursive)?;
                Ok(watcher)
            });
        match watcher {
            Ok(watcher) => {
                tracing::debug!(dir = %requests_dir.display(), "watching for decisions");
                Self {
                    sender,
                    tick: FALLBACK_TICK,
                    _watcher: Some(watcher),
                }
            }
            Err(e) => {
                tracing::warn!(
                    dir = %requests_dir.display(),
                    "cannot watch for decisions ({e}); waits poll every {POLL_WITHOUT_EVENTS:?}"
                );
                Self {
                    sender,
                    tick: POLL_WITHOUT_EVENTS,
                    _watcher: None,
                }
            }
        }
    }
}

fn forward(sender: &broadcast::Sender<Change>, event: notify::Result<notify::Event>) {
    let event = match event {
        Ok(event) => event,
        Err(e) => {
            tracing::debug!("watcher error: {e}");
            let _ = sender.send(Change::Unknown);
            return;
        }
    };
    if event.need_rescan() {
        let _ = sender.send(Change::Unknown);
        return;
    }
    // Reading a request opens it; waking on reads would have every wait wake itself.
    if matches!(event.kind, EventKind::Access(_)) {
        return;
    }
    // Temporary files (`.<id>.json.tmp-...`) are skipped: the rename that follows is the
    // change, and it names `<id>.json`.
    for id in event.paths.iter().filter_map(|path| request_of(path)) {
        // No receiver simply means no wait is running.
        let _ = sender.send(Change::Request(id));
    }
}

fn request_of(path: &Path) -> Option<RequestId> {
    let name = path.file_name()?.to_str()?;
    RequestId::parse(name.strip_suffix(".json")?).ok()
}

/// How a wait ended.
#[derive(Debug)]
pub(crate) enum WaitEnd {
    /// No longer pending: approved, denied, expired, revoked, consumed.
    Decided(StatusReport),
    /// Still pending when the wait's time ran out.
    TimedOut,
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

/// What a wait needs besides the request: the store, the watcher and the server's shutdown.
pub(crate) struct Waiter<'a> {
    pub(crate) gate: &'a AgentGate,
    pub(crate) changes: &'a Changes,
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
        // Subscribe before the first read, so a decision landing in between still wakes us.
        let mut changes = self.changes.sender.subscribe();
        let started = Instant::now();
        let deadline = started + timeout;
        let mut next_progress = started;
        loop {
            let report = match self.gate.status(id).await {
                Ok(report) => report,
                Err(failure) => return WaitEnd::Failed(failure),
            };
            if report.effective_status() != EffectiveStatus::Pending {
                return WaitEnd::Decided(report);
            }
            let now = Instant::now();
            if now >= deadline {
                return WaitEnd::TimedOut;
            }
            if let Some(progress) = &progress
                && now >= next_progress
            {
                progress.report(id, now - started, timeout).await;
                next_progress = now + PROGRESS_EVERY;
            }
            let mut wake = deadline.min(now + self.changes.tick);
            if progress.is_some() {
                wake = wake.min(next_progress);
            }
            // Expiry is judged on the gate's clock, one millisecond past `expires_at`.
            let to_expiry = self
                .gate
                .now()
                .millis_until(report.request().expires_at())
                .saturating_add(1);
            wake = wake.min(now + Duration::from_millis(u64::try_from(to_expiry).unwrap_or(0)));
            tokio::select! {
                biased;
                () = cancelled.cancelled() => return WaitEnd::Cancelled,
                () = self.shutdown.cancelled() => return WaitEnd::ShuttingDown,
                () = next_change(&mut changes, id) => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}

/// Resolves at the next change that may concern `id`.
async fn next_change(changes: &mut broadcast::Receiver<Change>, id: RequestId) {
    loop {
        match changes.recv().await {
            Ok(Change::Request(other)) if other != id => {}
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => return,
            // The watcher is gone: only the timers are left.
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_request_files_name_a_request() {
        let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
        assert_eq!(
            request_of(Path::new("/s/requests/a1b2c3d4e5f6.json")),
            Some(id)
        );
        for other in [
            "/s/requests/.a1b2c3d4e5f6.json.tmp-0011223344556677",
            "/s/requests/a1b2c3d4e5f6",
            "/s/requests/a1b2c3d4e5f6.json~",
            "/s/requests/A1B2C3D4E5F6.json",
            "/s/requests",
        ] {
            assert_eq!(request_of(Path::new(other)), None, "{other}");
        }
    }
}
