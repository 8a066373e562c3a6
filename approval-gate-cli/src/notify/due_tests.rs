use std::time::Duration;

use approval_gate::{Gate, ManualClock, NewRequest};

use super::*;
use crate::notify::channel::Channel;
use crate::notify::config::{Configured, Escalation};

#[derive(Debug)]
struct Quiet;

impl Channel for Quiet {
    fn name(&self) -> &'static str {
        "quiet"
    }
    fn send(
        &self,
        _: &crate::notify::message::Message,
        _: &crate::notify::message::Delivery<'_>,
    ) -> Result<(), crate::notify::channel::Failure> {
        Ok(())
    }
}

fn channel(name: &str, operations: &[&str], on_call: bool) -> Configured {
    Configured {
        name: name.into(),
        operations: operations.iter().map(|&p| p.to_owned()).collect(),
        on_call,
        channel: std::sync::Arc::new(Quiet),
    }
}

const MIN: Duration = Duration::from_secs(60);

#[test]
fn filed_reminder_and_escalation_are_due_where_and_when_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let t0 = approval_gate::Timestamp::from_unix_millis(1_796_000_000_000);
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(ManualClock::new(t0))
        .open()
        .unwrap();
    let file = |operation: &str, ttl: Duration| {
        gate.request_approval(
            NewRequest::new("refund", "why")
                .operation(operation)
                .ttl(ttl),
        )
        .unwrap()
        .request
    };
    let config = Config {
        channels: vec![
            channel("ops", &["payments.*"], false),
            channel("all", &["*"], false),
            channel("oncall", &["*"], true),
        ],
        reminder_before: Some(10 * MIN),
        escalations: vec![
            Escalation {
                operations: vec!["payments.*".into()],
                after: 15 * MIN,
                channels: vec!["oncall".into(), "ops".into()],
            },
            Escalation {
                operations: vec!["*".into()],
                after: 5 * MIN,
                channels: vec!["oncall".into()],
            },
        ],
    };
    let refund = file("payments.refund", 60 * MIN);
    let mut got = due(&config, &refund);
    got.sort_by_key(|d| (d.channel, d.kind.as_str()));
    let at = |minutes: u32| t0.saturating_add(MIN * minutes);
    assert_eq!(
        got,
        [
            Due {
                channel: 0,
                kind: Kind::Escalation,
                at: at(15)
            },
            Due {
                channel: 0,
                kind: Kind::Filed,
                at: at(0)
            },
            Due {
                channel: 0,
                kind: Kind::Reminder,
                at: at(50)
            },
            Due {
                channel: 1,
                kind: Kind::Filed,
                at: at(0)
            },
            Due {
                channel: 1,
                kind: Kind::Reminder,
                at: at(50)
            },
            // The earlier of the two rules naming it.
            Due {
                channel: 2,
                kind: Kind::Escalation,
                at: at(5)
            },
        ]
    );
    // Lives 8 minutes: no reminder before filing, no escalation after expiry but the 5-minute one.
    let short = file("deploy.prod", 8 * MIN);
    let mut got = due(&config, &short);
    got.sort_by_key(|d| (d.channel, d.kind.as_str()));
    assert_eq!(
        got,
        [
            Due {
                channel: 1,
                kind: Kind::Filed,
                at: at(0)
            },
            Due {
                channel: 2,
                kind: Kind::Escalation,
                at: at(5)
            },
        ]
    );
}

#[test]
fn reminders_and_escalations_at_their_edges() {
    let tmp = tempfile::tempdir().unwrap();
    let gate = Gate::builder()
        .dir(tmp.path().join("gate"))
        .clock(ManualClock::new(
            approval_gate::Timestamp::from_unix_millis(1_796_000_000_000),
        ))
        .open()
        .unwrap();
    let config = Config {
        channels: vec![channel("all", &["*"], false)],
        reminder_before: Some(10 * MIN),
        escalations: vec![Escalation {
            operations: vec!["*".into()],
            after: 5 * MIN,
            channels: vec!["all".into()],
        }],
    };
    // At the edges: a reminder due at the filing itself is not sent (the filing tells), one a
    // second later is; an escalation due at the expiry is not, one a second before is.
    let kinds = |ttl: Duration| {
        // Its own action: an identical pending request would be joined, not filed.
        let request = gate
            .request_approval(
                NewRequest::new(format!("deploy for {ttl:?}"), "why")
                    .operation("deploy.prod")
                    .ttl(ttl),
            )
            .unwrap()
            .request;
        let mut kinds: Vec<&str> = due(&config, &request)
            .iter()
            .map(|d| d.kind.as_str())
            .collect();
        kinds.sort_unstable();
        kinds
    };
    assert_eq!(kinds(5 * MIN), ["filed"]);
    assert_eq!(
        kinds(5 * MIN + Duration::from_secs(1)),
        ["escalation", "filed"]
    );
    assert_eq!(kinds(10 * MIN), ["escalation", "filed"]);
    assert_eq!(
        kinds(10 * MIN + Duration::from_secs(1)),
        ["escalation", "filed", "reminder"]
    );
}
