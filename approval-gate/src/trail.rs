//! The audit trail's meaning: each request's lines must tell a story the state machine allows
//! (`docs/authorization-states.md`). The hash chain proves the lines are the ones written;
//! this proves they could have been written by the gate. A `consumed` with no `approved`
//! before it, a second `consumed`, an `execution_started` of nothing consumed, anything but a
//! refusal after `archived`: each is reported at its line, naming its request.
//!
//! What may follow what is [`rules::next_stage`], the rules the lifecycle itself follows; this
//! module only walks each request's lines through it. A store that writes a line apart from
//! its effect ([`Recording::Ordered`]) may leave, after a crash or a failed write, a "yes"
//! line without its effect or a "no" effect without its line (the rules' [`Order`](crate::rules::Order));
//! the walk allows for exactly those. Lines lost before a re-anchoring are allowed for too:
//! from there on each request known so far may stand anywhere it could have reached, and one
//! first seen after it may have been filed in the lost lines.

use std::collections::HashMap;

use crate::audit::{AuditEvent, AuditRecord};
use crate::error::Error;
use crate::id::RequestId;
use crate::rules::{self, Effect, Stage};

/// How a store writes a line relative to the effect it records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recording {
    /// In one transaction with the effect: every line is its effect, every effect has its
    /// line (the PostgreSQL store).
    Atomic,
    /// One after the other, in the order the rules give (a "yes" recorded first, a "no"
    /// after): a crash or failed write between the two leaves one without the other (the
    /// directory store).
    Ordered,
}

/// A set of [`Stage`]s: where a request may stand, as far as its lines tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stages(u16);

impl Stages {
    fn bit(stage: Stage) -> u16 {
        let index = Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0);
        1 << index
    }

    fn one(stage: Stage) -> Self {
        Self(Self::bit(stage))
    }

    fn all() -> Self {
        Stage::ALL.into_iter().fold(Self::default(), Self::with)
    }

    fn with(self, stage: Stage) -> Self {
        Self(self.0 | Self::bit(stage))
    }

    fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn iter(self) -> impl Iterator<Item = Stage> {
        Stage::ALL
            .into_iter()
            .filter(move |stage| self.0 & Self::bit(*stage) != 0)
    }

    /// Also every stage reached from one of these without a line.
    fn with_unrecorded(self) -> Self {
        self.iter()
            .flat_map(rules::unrecorded)
            .fold(self, Self::with)
    }

    /// Also every stage reachable from one of these at all.
    fn reachable(self) -> Self {
        self.iter()
            .flat_map(rules::reachable)
            .fold(self, Self::with)
    }

    /// `pending`, `pending or approved`, ...
    fn describe(self) -> String {
        let names: Vec<_> = self.iter().map(Stage::as_str).collect();
        names.join(" or ")
    }
}

/// A request's trail so far: where it may stand, and its last line that moved it.
#[derive(Debug, Clone, Copy)]
struct Trail {
    stages: Stages,
    last: Option<(u64, AuditEvent)>,
}

/// An event's name as lines spell it (`consume_refused`).
fn name(event: AuditEvent) -> String {
    match serde_json::to_value(event) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{event:?}"),
    }
}

/// Checks that every request's lines, in the order of `records`, follow the state machine.
///
/// # Errors
///
/// [`Error::AuditInconsistent`] at the first line that cannot follow the lines before it.
pub(crate) fn check(records: &[AuditRecord], recording: Recording) -> Result<(), Error> {
    let mut trails: HashMap<RequestId, Trail> = HashMap::new();
    let mut reanchored = false;
    for record in records {
        let (id, event) = (record.id, record.event);
        let inconsistent = |problem: String| Error::AuditInconsistent {
            line: record.seq,
            id,
            problem,
        };
        let effect = rules::effect(event);
        // A refusal says nothing of any request, so it may name any id, even the store's
        // (anyone may try to consume `000000000000`).
        let of_the_store = matches!(effect, Effect::Reanchors | Effect::Configures);
        if effect != Effect::Refuses && (id == RequestId::STORE) != of_the_store {
            return Err(inconsistent(if id == RequestId::STORE {
                format!(
                    "`{}` names the store's own id, which no request has",
                    name(event)
                )
            } else {
                format!("`{}` concerns the whole store, not a request", name(event))
            }));
        }
        match effect {
            // An allowance's own lines: its id is no request's, and no request moves.
            Effect::Refuses | Effect::Configures | Effect::Allows => {}
            Effect::Reanchors => {
                // What the lost lines may have said is anything the rules allow.
                for trail in trails.values_mut() {
                    trail.stages = trail.stages.reachable();
                }
                reanchored = true;
            }
            Effect::Files => {
                if let Some(trail) = trails.get(&id) {
                    let filed = trail
                        .last
                        .map_or_else(String::new, |(line, _)| format!(" (last at line {line})"));
                    return Err(inconsistent(format!(
                        "`requested` again: the request was filed before{filed}, and ids are never reused"
                    )));
                }
                trails.insert(
                    id,
                    Trail {
                        stages: Stages::one(Stage::Pending),
                        last: Some((record.seq, event)),
                    },
                );
            }
            Effect::Moves => {
                let trail = match trails.get(&id) {
                    Some(trail) => *trail,
                    // Filed in lines a re-anchoring accepted as lost: it may stand anywhere.
                    None if reanchored => Trail {
                        stages: Stages::all(),
                        last: None,
                    },
                    None => {
                        return Err(inconsistent(format!(
                            "`{}` of a request that was never filed: no `requested` line comes before it",
                            name(event)
                        )));
                    }
                };
                let from = match recording {
                    Recording::Atomic => trail.stages,
                    Recording::Ordered => trail.stages.with_unrecorded(),
                };
                let moved = from
                    .iter()
                    .filter_map(|stage| rules::next_stage(stage, event))
                    .fold(Stages::default(), Stages::with);
                if moved.is_empty() {
                    let after = trail.last.map_or_else(String::new, |(line, last)| {
                        format!(" after line {line} (`{}`)", name(last))
                    });
                    return Err(inconsistent(format!(
                        "`{}` cannot happen to a request that is {}{after}",
                        name(event),
                        trail.stages.describe(),
                    )));
                }
                // A "yes" written before its effect may stand without it: the request may
                // still be where the line found it.
                let stayed = if recording == Recording::Ordered && rules::recorded_first(event) {
                    from.iter()
                        .filter(|stage| rules::next_stage(*stage, event).is_some())
                        .fold(Stages::default(), Stages::with)
                } else {
                    Stages::default()
                };
                trails.insert(
                    id,
                    Trail {
                        stages: moved.union(stayed),
                        last: Some((record.seq, event)),
                    },
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;
    use crate::time::Timestamp;

    use AuditEvent as E;

    const A: &str = "a1b2c3d4e5f6";
    const B: &str = "b1b2c3d4e5f6";

    /// Records numbered from 1, each `(id, event)`.
    fn log(lines: &[(&str, AuditEvent)]) -> Vec<AuditRecord> {
        lines
            .iter()
            .zip(1..)
            .map(|(&(id, event), seq)| AuditRecord {
                seq,
                ts: Timestamp::from_unix_millis(0),
                event,
                id: RequestId::parse(id).unwrap(),
                details: Map::new(),
            })
            .collect()
    }

    fn both(lines: &[(&str, AuditEvent)]) -> [Result<(), Error>; 2] {
        let records = log(lines);
        [Recording::Atomic, Recording::Ordered].map(|recording| check(&records, recording))
    }

    /// The line, id and problem of a meaning problem.
    fn problem(result: Result<(), Error>) -> (u64, String, String) {
        match result {
            Err(Error::AuditInconsistent { line, id, problem }) => {
                (line, id.as_str().to_owned(), problem)
            }
            other => panic!("expected an inconsistency, got {other:?}"),
        }
    }

    const STORE: &str = "000000000000";

    #[test]
    fn the_lifecycles_the_gate_writes_make_sense() {
        let lifecycles: &[&[AuditEvent]] = &[
            &[E::Requested],
            &[E::Requested, E::Approved, E::Consumed],
            &[
                E::Requested,
                E::Approved,
                E::Consumed,
                E::ExecutionStarted,
                E::ExecutionFinished,
                E::ConsumeReplayed,
                E::Archived,
                E::ConsumeRefused,
            ],
            &[E::Requested, E::Denied, E::ConsumeRefused, E::Archived],
            &[E::Requested, E::Approved, E::Revoked, E::Archived],
            &[E::Requested, E::ConsumeRefused, E::Expired, E::Archived],
            &[E::Requested, E::Approved, E::Archived],
            &[
                E::Requested,
                E::ApprovalAdded,
                E::ApprovalAdded,
                E::Approved,
                E::Consumed,
                E::ConsumeRefused,
            ],
            &[E::Requested, E::ApprovalAdded, E::Denied],
            &[E::Requested, E::ApprovalAdded, E::Expired],
            &[
                E::Requested,
                E::Approved,
                E::Consumed,
                E::ExecutionStarted,
                E::ExecutionFinished,
                E::Archived,
            ],
        ];
        for events in lifecycles {
            let lines: Vec<_> = events.iter().map(|e| (A, *e)).collect();
            for result in both(&lines) {
                assert!(result.is_ok(), "{events:?}: {result:?}");
            }
        }
        // Refusals of ids nobody filed, and two requests interleaved.
        let lines = [
            (B, E::ConsumeRefused),
            (A, E::Requested),
            (B, E::Requested),
            (A, E::Approved),
            (B, E::Denied),
            (A, E::Consumed),
            (B, E::ConsumeReplayed),
        ];
        for result in both(&lines) {
            assert!(result.is_ok(), "{result:?}");
        }
    }

    #[test]
    fn a_consume_without_an_approval_is_reported_at_its_line_with_its_request() {
        for result in both(&[(A, E::Requested), (B, E::Requested), (A, E::Consumed)]) {
            let (line, id, problem) = problem(result);
            assert_eq!((line, id.as_str()), (3, A));
            assert!(
                problem.contains("`consumed` cannot happen to a request that is pending"),
                "{problem}"
            );
            assert!(problem.contains("after line 1 (`requested`)"), "{problem}");
        }
    }

    #[test]
    fn what_the_state_machine_forbids_is_reported_on_every_store() {
        let cases: &[(&[AuditEvent], u64)] = &[
            (&[E::Consumed], 1),
            (&[E::Approved], 1),
            (&[E::Requested, E::Requested], 2),
            (&[E::Requested, E::Approved, E::Consumed, E::Consumed], 4),
            (&[E::Requested, E::Approved, E::Consumed, E::Revoked], 4),
            (&[E::Requested, E::Denied, E::Approved], 3),
            (&[E::Requested, E::Denied, E::Consumed], 3),
            (&[E::Requested, E::Expired, E::Consumed], 3),
            (&[E::Requested, E::Approved, E::Revoked, E::Consumed], 4),
            (&[E::Requested, E::Revoked], 2),
            (&[E::Requested, E::Approved, E::ExecutionStarted], 3),
            (
                &[
                    E::Requested,
                    E::Approved,
                    E::Consumed,
                    E::ExecutionStarted,
                    E::ExecutionStarted,
                ],
                5,
            ),
            (
                &[E::Requested, E::Approved, E::Consumed, E::ExecutionFinished],
                4,
            ),
            (
                &[
                    E::Requested,
                    E::Approved,
                    E::Consumed,
                    E::ExecutionStarted,
                    E::Archived,
                ],
                5,
            ),
            (&[E::Requested, E::Denied, E::Archived, E::Denied], 4),
            (&[E::Requested, E::Denied, E::Archived, E::Archived], 4),
            (&[E::Requested, E::Denied, E::Archived, E::Requested], 4),
        ];
        for (events, at) in cases {
            let lines: Vec<_> = events.iter().map(|e| (A, *e)).collect();
            for result in both(&lines) {
                let (line, id, _) = problem(result);
                assert_eq!((line, id.as_str()), (*at, A), "{events:?}");
            }
        }
    }

    #[test]
    fn only_a_store_that_writes_lines_apart_allows_for_a_lost_line_or_effect() {
        // An approval recorded but never in effect, then approved again, or denied.
        for events in [
            &[E::Requested, E::Approved, E::Approved, E::Consumed][..],
            &[E::Requested, E::Approved, E::Denied],
            &[E::Requested, E::Approved, E::Expired, E::Archived],
            // A denial, expiry or revocation in effect whose line was lost.
            &[E::Requested, E::Archived],
        ] {
            let lines: Vec<_> = events.iter().map(|e| (A, *e)).collect();
            let [atomic, ordered] = both(&lines);
            assert!(ordered.is_ok(), "{events:?}: {ordered:?}");
            assert!(atomic.is_err(), "{events:?}");
        }
        // A lost "no" never makes a consume possible.
        for events in [
            &[E::Requested, E::Consumed][..],
            &[E::Requested, E::Approved, E::Denied, E::Consumed],
        ] {
            let lines: Vec<_> = events.iter().map(|e| (A, *e)).collect();
            for result in both(&lines) {
                assert!(result.is_err(), "{events:?}");
            }
        }
    }

    #[test]
    fn the_store_line_is_only_the_reanchoring_and_after_it_lost_lines_are_allowed_for() {
        let (line, id, _) = problem(check(&log(&[(STORE, E::Requested)]), Recording::Atomic));
        assert_eq!((line, id.as_str()), (1, STORE));
        let (line, id, _) = problem(check(&log(&[(A, E::Reanchored)]), Recording::Atomic));
        assert_eq!((line, id.as_str()), (1, A));

        // Filed before the cut, its approval lost, consumed after: the re-anchoring says
        // lines were lost. A request first seen after it was filed in lost lines.
        let lines = [
            (A, E::Requested),
            (STORE, E::Reanchored),
            (A, E::Consumed),
            (A, E::ExecutionStarted),
            (B, E::Consumed),
        ];
        for result in both(&lines) {
            assert!(result.is_ok(), "{result:?}");
        }
        // What comes after the re-anchoring is held to the rules again.
        let lines = [
            (A, E::Requested),
            (STORE, E::Reanchored),
            (A, E::Consumed),
            (A, E::Consumed),
        ];
        for result in both(&lines) {
            assert_eq!(problem(result).0, 4);
        }
        // A refused consume of the store's id is a refusal like any other.
        for result in both(&[(STORE, E::ConsumeRefused), (STORE, E::ConsumeReplayed)]) {
            assert!(result.is_ok(), "{result:?}");
        }
        // Before any re-anchoring, nothing is assumed lost.
        let lines = [(B, E::Consumed), (STORE, E::Reanchored)];
        for result in both(&lines) {
            assert_eq!(problem(result).0, 1);
        }
    }

    #[test]
    fn every_event_is_classified_and_reachable_from_somewhere() {
        for event in rules::EVENTS {
            let effect = rules::effect(event);
            if effect == Effect::Moves {
                assert!(
                    Stage::ALL
                        .into_iter()
                        .any(|stage| rules::next_stage(stage, event).is_some()),
                    "{event:?} happens from no stage"
                );
            }
        }
        assert_eq!(
            rules::reachable(Stage::Pending).len(),
            Stage::ALL.len(),
            "every stage is reachable from pending"
        );
    }

    /// An oracle written apart from the rules: a request's facts, changed one event at a time.
    // Plain facts on purpose, not a state machine: it must not be the rules' own.
    #[allow(clippy::struct_excessive_bools)]
    #[derive(Debug, Clone, Copy, Default)]
    struct Facts {
        filed: bool,
        status: Option<crate::request::Status>,
        claimed: bool,
        started: bool,
        finished: bool,
        archived: bool,
    }

    impl Facts {
        /// Whether `event` can happen now, and if so the facts after it.
        fn step(mut self, event: AuditEvent) -> Option<Self> {
            use crate::request::Status as S;
            // A refusal changes nothing; an allowance's line is about no request.
            if matches!(
                event,
                E::ConsumeRefused
                    | E::ConsumeReplayed
                    | E::DecisionRefused
                    | E::AllowanceGranted
                    | E::AllowanceProposed
                    | E::AllowanceSigned
                    | E::AllowanceRevoked
            ) {
                return Some(self);
            }
            if event == E::Requested {
                return (!self.filed).then_some(Self {
                    filed: true,
                    status: Some(S::Pending),
                    ..self
                });
            }
            if !self.filed || self.archived {
                return None;
            }
            let pending = self.status == Some(S::Pending);
            let unspent = self.status == Some(S::Approved) && !self.claimed;
            let ok = match event {
                E::Approved | E::Denied | E::Expired | E::ApprovalAdded if pending => {
                    self.status = match event {
                        E::Approved => Some(S::Approved),
                        E::Denied => Some(S::Denied),
                        E::Expired => Some(S::Expired),
                        _ => self.status,
                    };
                    true
                }
                E::Revoked if unspent => {
                    self.status = Some(S::Revoked);
                    true
                }
                E::Consumed if unspent => {
                    self.claimed = true;
                    true
                }
                E::ExecutionStarted if self.claimed && !self.started => {
                    self.started = true;
                    true
                }
                E::ExecutionFinished if self.started && !self.finished => {
                    self.finished = true;
                    true
                }
                E::Archived if !pending && self.started == self.finished => {
                    self.archived = true;
                    true
                }
                _ => false,
            };
            ok.then_some(self)
        }
    }

    /// Every sequence of up to 6 events of one request: the walk through the rules accepts
    /// exactly what the oracle does, on a store that writes lines with their effects; one
    /// that writes them apart accepts at least that.
    #[test]
    fn the_walk_agrees_with_an_oracle_on_every_short_sequence() {
        let events: Vec<_> = rules::EVENTS
            .into_iter()
            .filter(|e| *e != E::Reanchored)
            .collect();
        let mut sequences: Vec<(Vec<AuditEvent>, Option<Facts>)> =
            vec![(Vec::new(), Some(Facts::default()))];
        let mut checked = 0;
        for _ in 0..6 {
            let mut longer = Vec::new();
            for (sequence, facts) in &sequences {
                for event in &events {
                    let mut next = sequence.clone();
                    next.push(*event);
                    let after = facts.and_then(|f| f.step(*event));
                    let lines: Vec<_> = next.iter().map(|e| (A, *e)).collect();
                    let records = log(&lines);
                    let atomic = check(&records, Recording::Atomic);
                    assert_eq!(atomic.is_ok(), after.is_some(), "{next:?}: {atomic:?}");
                    if after.is_some() {
                        assert!(check(&records, Recording::Ordered).is_ok(), "{next:?}");
                    } else if let Err(Error::AuditInconsistent { line, .. }) = atomic {
                        // The first line the oracle refuses.
                        let mut facts = Some(Facts::default());
                        let first = next
                            .iter()
                            .position(|e| {
                                facts = facts.and_then(|f| f.step(*e));
                                facts.is_none()
                            })
                            .unwrap();
                        assert_eq!(line, first as u64 + 1, "{next:?}");
                    }
                    checked += 1;
                    // Only sequences the oracle accepts are worth extending.
                    if after.is_some() {
                        longer.push((next, after));
                    }
                }
            }
            sequences = longer;
        }
        assert!(checked > 1000, "{checked}");
    }
}
