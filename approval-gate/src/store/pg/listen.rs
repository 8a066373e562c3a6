//! The change feed: a thread of its own LISTENs on the store's NOTIFY channel and turns each
//! notification into a change hint for whoever waits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;

use super::pool::Pool;
use crate::change::{Change, ChangeSink};
use crate::id::RequestId;
use crate::store::Guard;

/// The NOTIFY channel every change is announced on (its payload: the request id).
const CHANNEL: &str = "approval_gate";

/// Stops a LISTEN thread when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The LISTEN loop: forwards each notification as a hint, and [`Change::Unknown`] whenever it
/// (re)connects, since anything may have changed while it was not listening.
fn listen(pool: &Pool, sink: &ChangeSink, stop: &AtomicBool) {
    let mut backoff = Duration::from_millis(50);
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut client) = pool.connect() else {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
            continue;
        };
        if client.batch_execute(&format!("LISTEN {CHANNEL}")).is_err() {
            std::thread::sleep(backoff);
            continue;
        }
        backoff = Duration::from_millis(50);
        sink(Change::Unknown);
        while !stop.load(Ordering::Relaxed) {
            let next = client
                .notifications()
                .timeout_iter(Duration::from_millis(200))
                .next();
            match next {
                Ok(Some(note)) => match RequestId::parse(note.payload()) {
                    Ok(id) => sink(Change::Request(id)),
                    Err(_) => sink(Change::Unknown),
                },
                Ok(None) if !client.is_closed() => {}
                _ => break,
            }
        }
        sink(Change::Unknown);
    }
}

/// Starts the LISTEN thread, which sends change hints to `sink` until the returned value is
/// dropped ([`Store::watch`](crate::store::Store::watch)).
pub(super) fn watch(pool: &Arc<Pool>, sink: ChangeSink) -> Result<Guard, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let pool = Arc::clone(pool);
    let flag = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("approval-gate-listen".into())
        .spawn(move || listen(&pool, &sink, &flag))
        .map_err(|e| format!("cannot start the LISTEN thread: {e}"))?;
    Ok(Guard::new(StopOnDrop(stop)))
}
