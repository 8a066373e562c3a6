//! MCP logging: the server's own log, sent to the client as `notifications/message`.
//!
//! Nothing is sent until the client asks with `logging/setLevel`; from then on every event
//! of this server and of the approval-gate library at or above that level goes to the
//! client as well as to stderr (whose filter, `APPROVAL_GATE_LOG`, is separate). Events of
//! other crates (rmcp, tokio) are not sent: sending a notification makes rmcp log, and
//! that must not come back as another notification.
//!
//! A [`tracing_subscriber`] layer turns events into notifications; it cannot wait, so they
//! queue for one task that sends them in order. When the queue is full (a client that does
//! not read), events are dropped rather than held.

// rmcp marks MCP logging deprecated (SEP-2577); the protocol revisions clients speak today
// still have it.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Notifications waiting to be sent, at most.
const QUEUE: usize = 256;

/// The client's side of the log: the level it asked for and the queue to it.
#[derive(Debug, Clone)]
pub(crate) struct ClientLog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// 0 until the client sets a level; then 1 + the rank of the lowest level it wants.
    threshold: AtomicU8,
    queue: mpsc::Sender<LoggingMessageNotificationParam>,
    /// Taken by the task that sends to the client.
    unsent: Mutex<Option<mpsc::Receiver<LoggingMessageNotificationParam>>>,
}

impl ClientLog {
    pub(crate) fn new() -> Self {
        let (queue, unsent) = mpsc::channel(QUEUE);
        Self {
            shared: Arc::new(Shared {
                threshold: AtomicU8::new(0),
                queue,
                unsent: Mutex::new(Some(unsent)),
            }),
        }
    }

    /// From now on, send events at `level` and above.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.shared
            .threshold
            .store(1 + rank(level), Ordering::Relaxed);
    }

    /// Starts sending to `peer`, in order, until it is gone. Only the first call sends.
    pub(crate) fn send_to(&self, peer: Peer<RoleServer>) {
        let unsent = self
            .shared
            .unsent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(mut unsent) = unsent else {
            return;
        };
        tokio::spawn(async move {
            while let Some(message) = unsent.recv().await {
                // Not logged: the log is what failed to go out.
                if peer.notify_logging_message(message).await.is_err() {
                    return;
                }
            }
        });
    }

    /// The layer that feeds this log; add it to the process's subscriber.
    pub(crate) fn layer<S>(&self) -> impl Layer<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let filter = self.clone();
        // The level changes, so whether an event is wanted is asked each time; only which
        // events could ever be wanted is decided once per call site.
        let wanted =
            tracing_subscriber::filter::dynamic_filter_fn(move |meta, _| filter.wants(meta))
                .with_callsite_filter(|meta| {
                    if could_want(meta) {
                        Interest::sometimes()
                    } else {
                        Interest::never()
                    }
                });
        ClientLayer { log: self.clone() }.with_filter(wanted)
    }

    fn wants(&self, meta: &Metadata<'_>) -> bool {
        let threshold = self.shared.threshold.load(Ordering::Relaxed);
        threshold > 0
            && could_want(meta)
            && mcp_level(*meta.level()).is_some_and(|level| rank(level) + 1 >= threshold)
    }
}

fn could_want(meta: &Metadata<'_>) -> bool {
    meta.is_event() && is_ours(meta.target()) && mcp_level(*meta.level()).is_some()
}

fn is_ours(target: &str) -> bool {
    ["approval_gate_mcp", "approval_gate"]
        .iter()
        .any(|crate_name| {
            target
                .strip_prefix(crate_name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
}

/// MCP's levels are syslog's; `TRACE` has no counterpart and is never sent.
fn mcp_level(level: Level) -> Option<LoggingLevel> {
    match level {
        Level::ERROR => Some(LoggingLevel::Error),
        Level::WARN => Some(LoggingLevel::Warning),
        Level::INFO => Some(LoggingLevel::Info),
        Level::DEBUG => Some(LoggingLevel::Debug),
        Level::TRACE => None,
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

struct ClientLayer {
    log: ClientLog,
}

impl<S: Subscriber> Layer<S> for ClientLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let Some(level) = mcp_level(*meta.level()) else {
            return;
        };
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let message = LoggingMessageNotificationParam::new(level, Value::Object(fields.0))
            .with_logger(meta.target());
        // Full: the client is not reading; dropping beats holding the server back.
        let _ = self.log.shared.queue.try_send(message);
    }
}

/// An event's fields as a JSON object; the text of the event is `message`.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn sends_only_our_events_at_or_above_the_level() {
        let log = ClientLog::new();
        let mut unsent = log.shared.unsent.lock().unwrap().take().unwrap();
        let subscriber = tracing_subscriber::registry().with(log.layer());
        // One call site, seen before and after each change of level.
        let emit = |step: &str| {
            tracing::debug!(step, "debug");
            tracing::info!(step, "info");
            tracing::warn!(id = "a1b2c3d4e5f6", count = 3_u64, "warn");
            tracing::error!(target: "rmcp::service", "another crate's");
            tracing::error!(target: "approval_gate_mcpx", "a look-alike crate's");
            tracing::trace!("never");
        };
        tracing::subscriber::with_default(subscriber, || {
            emit("before any level is set");
            log.set_level(LoggingLevel::Warning);
            emit("warning");
            log.set_level(LoggingLevel::Debug);
            emit("debug");
        });
        let mut sent = Vec::new();
        while let Ok(message) = unsent.try_recv() {
            sent.push(message);
        }
        let levels: Vec<LoggingLevel> = sent.iter().map(|m| m.level).collect();
        assert_eq!(
            levels,
            [
                LoggingLevel::Warning,
                LoggingLevel::Debug,
                LoggingLevel::Info,
                LoggingLevel::Warning
            ],
            "{sent:?}"
        );
        assert_eq!(
            sent[0].logger.as_deref(),
            Some("approval_gate_mcp::mcp::log::tests")
        );
        assert_eq!(
            sent[0].data,
            serde_json::json!({ "message": "warn", "id": "a1b2c3d4e5f6", "count": 3 })
        );
        assert_eq!(
            sent[1].data,
            serde_json::json!({ "message": "debug", "step": "debug" })
        );
    }
}
