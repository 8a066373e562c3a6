//! The notifications ledger: what was delivered or given up on is never sent again, by this
//! notifier or another, and a message being sent is sent by one notifier at a time.

use std::time::Duration;

use approval_gate::{DeadLetter, NoticeClaim};

use crate::Subject;
use crate::backend::Backend;

const LEASE: Duration = Duration::from_secs(600);

/// Delivered and dead-lettered messages are final for every notifier; a lease keeps a second
/// notifier off a message the first is sending (or, on a store that takes one notifier at a
/// time, the second cannot start); a lease that ran out lets the message be taken again.
pub fn the_ledger_keeps_what_was_delivered_and_lets_one_notifier_send_at_a_time(
    backend: &dyn Backend,
) {
    let fx = Subject::new(backend);
    let first = fx.gate.notices().expect("the ledger");
    assert_eq!(
        first.claim("a.ops.filed", LEASE).unwrap(),
        NoticeClaim::Mine
    );
    first.delivered("a.ops.filed").unwrap();
    assert_eq!(
        first.claim("a.ops.filed", LEASE).unwrap(),
        NoticeClaim::Delivered
    );
    assert_eq!(
        first.claim("b.ops.filed", LEASE).unwrap(),
        NoticeClaim::Mine
    );
    first.dead("b.ops.filed", "h answered 400", 1).unwrap();
    assert_eq!(
        first.claim("b.ops.filed", LEASE).unwrap(),
        NoticeClaim::Dead
    );
    // Being sent by the first notifier: claimed, nothing recorded yet.
    assert_eq!(
        first.claim("c.ops.filed", LEASE).unwrap(),
        NoticeClaim::Mine
    );
    // Its own lease is renewed, not refused.
    assert_eq!(
        first.claim("c.ops.filed", LEASE).unwrap(),
        NoticeClaim::Mine
    );
    assert!(first.claim("Not A Key", LEASE).is_err());

    let other = fx.reopen();
    match other.notices() {
        Ok(second) => {
            assert_eq!(
                second.claim("c.ops.filed", LEASE).unwrap(),
                NoticeClaim::Busy
            );
            assert_eq!(
                second.claim("a.ops.filed", LEASE).unwrap(),
                NoticeClaim::Delivered
            );
            assert_eq!(
                second.claim("b.ops.filed", LEASE).unwrap(),
                NoticeClaim::Dead
            );
            // A lease of nothing runs out at once: the next claim takes the message again.
            assert_eq!(
                second.claim("d.ops.filed", Duration::ZERO).unwrap(),
                NoticeClaim::Mine
            );
            assert_eq!(
                first.claim("d.ops.filed", LEASE).unwrap(),
                NoticeClaim::Mine
            );
        }
        Err(error) => {
            assert!(error.to_string().contains("another"), "{error}");
        }
    }
    drop(first);
    // After a restart: what was recorded holds; nothing else was.
    let restarted = other.notices().expect("the ledger once the first let go");
    assert_eq!(
        restarted.claim("a.ops.filed", LEASE).unwrap(),
        NoticeClaim::Delivered
    );
    assert_eq!(
        restarted.claim("b.ops.filed", LEASE).unwrap(),
        NoticeClaim::Dead
    );
    assert!(matches!(
        restarted.claim("e.ops.filed", LEASE).unwrap(),
        NoticeClaim::Mine
    ));
    // A dead letter stays one, even if recorded delivered later.
    restarted.delivered("b.ops.filed").unwrap();
    let dead = fx.gate.dead_letters().unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let DeadLetter {
        key,
        reason,
        attempts,
        ..
    } = &dead[0];
    assert_eq!(
        (key.as_str(), reason.as_str(), *attempts),
        ("b.ops.filed", "h answered 400", 1)
    );
}
