//! What becomes of each request of the predecessor's store, and why: anything it approved is
//! spent, since it never spent an approval; whatever cannot be told refuses the whole store.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::format::{OldEvent, OldLine, OldRecord, OldStatus, OldStore, refuse};
use crate::error::Error;
use crate::id::RequestId;
use crate::request::{NewRequest, Request, Status};
use crate::status::EffectiveStatus;
use crate::time::Timestamp;

/// One request of the predecessor's store, as `migrate` brings it over (or would).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MigratedRequest {
    /// Its id, kept.
    pub id: RequestId,
    /// The status its record had (`pending`, `approved`, `denied`, `expired`).
    pub old_status: &'static str,
    /// Where it stands in the new store.
    pub new_status: EffectiveStatus,
    /// Why.
    pub why: String,
}

/// What to write for one request.
#[derive(Debug, Clone)]
pub(super) struct Step {
    /// The record as filed (pending).
    pub(super) filed: Request,
    /// The decision to record after, if any.
    pub(super) decision: Option<(Status, Timestamp, Option<String>)>,
    /// Whether the approval is spent.
    pub(super) spent: bool,
    pub(super) report: MigratedRequest,
}

/// The lines of one id.
#[derive(Default)]
struct Lines<'a> {
    requested: Vec<&'a OldLine>,
    approved: Option<&'a OldLine>,
    decided: Option<&'a OldLine>,
}

/// Plans the migration of `store` (read from `root`) at `now`.
///
/// # Errors
///
/// [`Error::PredecessorStore`] where the store does not say what a request's fate was, or a
/// request still usable cannot be held under our rules.
pub(super) fn plan(store: &OldStore, root: &Path, now: Timestamp) -> Result<Vec<Step>, Error> {
    let log = root.join("audit.jsonl");
    let mut by_id: BTreeMap<RequestId, Lines<'_>> = BTreeMap::new();
    for line in &store.lines {
        if !store.records.contains_key(&line.id) {
            return Err(refuse(
                &log,
                format!(
                    "line {} names request {}, which has no record: what it was (and whether it was approved) cannot be told",
                    line.line, line.id
                ),
            ));
        }
        let lines = by_id.entry(line.id).or_default();
        match line.event {
            OldEvent::Requested => lines.requested.push(line),
            OldEvent::Approved => {
                lines.approved.get_or_insert(line);
            }
            OldEvent::Denied | OldEvent::Expired => {
                lines.decided.get_or_insert(line);
            }
        }
    }
    let mut steps = Vec::new();
    let mut asks = HashSet::new();
    for record in store.records.values() {
        let lines = by_id.remove(&record.id).unwrap_or_default();
        let path = root.join("requests").join(format!("{}.json", record.id));
        if let [_, again, ..] = lines.requested[..] {
            return Err(refuse(
                &log,
                format!(
                    "line {}: request {} filed a second time",
                    again.line, record.id
                ),
            ));
        }
        let step = step(record, &lines, now).map_err(|problem| refuse(&path, problem))?;
        if step.report.new_status == EffectiveStatus::Pending
            && !asks.insert((record.action.clone(), record.requested_by.clone()))
        {
            return Err(refuse(
                &path,
                "pending with the same action and requester as another pending request: ours keeps one pending request per ask; deny one in approval-gate-mcp first",
            ));
        }
        steps.push(step);
    }
    // Filed in the order they were: the new queue lists them as the old one did.
    steps.sort_by_key(|step| (step.filed.created_at(), step.filed.id()));
    Ok(steps)
}

fn step(record: &OldRecord, lines: &Lines<'_>, now: Timestamp) -> Result<Step, String> {
    let mut ask = NewRequest::new(record.action.clone(), record.reason.clone());
    if let Some(who) = &record.requested_by {
        ask = ask.requested_by(who.clone());
    }
    let usable = ask.validate();
    let filed = Request::migrated(record.id, ask, record.created_at, record.expires_at);
    let old_status = record.status.as_str();
    let report = |new_status, why: String| MigratedRequest {
        id: record.id,
        old_status,
        new_status,
        why,
    };
    // Anything the predecessor approved was spent: 0.1 has no consume, so an agent acts on
    // seeing `approved`, any number of times.
    let approval = match (record.status, lines.approved) {
        (OldStatus::Approved, _) => Some((
            record.decided_at.unwrap_or(record.created_at),
            record.decision_reason.clone(),
            "approved by approval-gate-mcp, which never spends an approval: an agent may have acted on it any number of times, so it is spent (consumed, execution outcome unknown)".to_owned(),
        )),
        (_, Some(line)) => Some((
            line.at,
            line.reason.clone(),
            format!(
                "its record says {old_status}, but its audit log approved it at line {}: an agent may have acted on it then, so it is spent (consumed, execution outcome unknown)",
                line.line
            ),
        )),
        (_, None) => None,
    };
    if let Some((at, reason, why)) = approval {
        return Ok(Step {
            filed,
            decision: Some((Status::Approved, at, reason)),
            spent: true,
            report: report(EffectiveStatus::Consumed, why),
        });
    }
    let (status, new_status) = match record.status {
        OldStatus::Pending => {
            if let Some(line) = lines.decided {
                return Err(format!(
                    "pending, yet its audit log decided it at line {}: where it stands cannot be told",
                    line.line
                ));
            }
            if now >= record.expires_at {
                return Ok(Step {
                    filed,
                    decision: Some((Status::Expired, now, None)),
                    spent: false,
                    report: report(
                        EffectiveStatus::Expired,
                        "pending past its expiry: expired, as approval-gate-mcp would have on its next read".into(),
                    ),
                });
            }
            if let Err(error) = usable {
                return Err(format!(
                    "pending, and it could still be approved, but our rules refuse it ({error}); deny it in approval-gate-mcp first, or let it expire"
                ));
            }
            return Ok(Step {
                filed,
                decision: None,
                spent: false,
                report: report(
                    EffectiveStatus::Pending,
                    "pending: stays pending with its expiry".into(),
                ),
            });
        }
        OldStatus::Denied => (Status::Denied, EffectiveStatus::Denied),
        OldStatus::Expired => (Status::Expired, EffectiveStatus::Expired),
        OldStatus::Approved => unreachable!("handled above"),
    };
    Ok(Step {
        filed,
        decision: Some((
            status,
            record.decided_at.unwrap_or(record.created_at),
            record.decision_reason.clone(),
        )),
        spent: false,
        report: report(
            new_status,
            format!("{old_status}, and never approved: stays {old_status}"),
        ),
    })
}
