//! Allowances: a human signs "this, up to that, until then" once, and the gate counts every
//! use.
//!
//! An [`Allowance`] names an operation (an exact name, or a pattern under the quorum table's
//! rules), [constraints](Constraint) on the payload, and its [bounds](Bounds): a number of
//! uses, a budget summed over an integer field, a rate, a window of at most seven days, and
//! optionally the one agent login that may use it. An approver signs its
//! [statement](Allowance::statement) as they sign a decision, and it counts only with as many
//! distinct trusted signatures as the operation it is used for needs.
//!
//! This module is the allowance's meaning: what it covers and whether one more use fits. The
//! store counts the uses, in the same atomic step as the spend.

mod bounds;
mod constraint;
mod signed;
#[cfg(test)]
mod tests;

use std::fmt;

use serde_json::{Value, json};

pub use self::bounds::{
    Bounds, Budget, Exhausted, MAX_RATE_PERIOD, MAX_USES, MAX_WINDOW, Rate, Usage,
};
use self::constraint::MAX_CONSTRAINTS;
pub use self::constraint::{Constraint, Test, Unmet};
pub use self::signed::{AllowanceSignature, Forged, SignedAllowance};
use crate::error::Error;
use crate::id::RequestId;
use crate::limits::{MAX_NAME_BYTES, MAX_REASON_BYTES};
use crate::payload::CanonicalPayload;
use crate::policy::glob;
use crate::request::new::{Blank, check_text};
use crate::time::Timestamp;

/// The version of the allowance statement's format.
pub const ALLOWANCE_STATEMENT_VERSION: u32 = 1;

/// What an approver allows, before it is made: the operation, the constraints on the
/// payload, the bounds, and optionally the one agent login that may use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    /// An operation name, or a pattern (`payments.*`) under the quorum table's rules.
    pub operation: String,
    /// What every payload it covers must meet.
    pub constraints: Vec<Constraint>,
    /// How far it reaches.
    pub bounds: Bounds,
    /// The one agent login that may use it (the request's filer: the PostgreSQL session user,
    /// or the OS user on a directory store), or anyone.
    pub agent: Option<String>,
    /// Why the approver allows it, as they say it.
    pub reason: String,
}

/// An allowance as it is made, signed and kept: its [`Terms`], its id and when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    id: RequestId,
    created_at: Timestamp,
    terms: Terms,
}

/// Why an allowance does not cover a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uncovered {
    /// The request's operation is not the allowance's (or names none).
    Operation {
        /// What the allowance names.
        allowed: String,
        /// What the request names.
        requested: Option<String>,
    },
    /// The request was filed by another login than the one allowed.
    Agent {
        /// The login allowed.
        allowed: String,
        /// Who filed it, as the store knows.
        filed_by: Option<String>,
    },
    /// The request has no payload for the constraints or the budget to read.
    NoPayload,
    /// A constraint does not hold.
    Constraint(Unmet),
    /// The budget's amount cannot be read from the payload.
    Amount(Exhausted),
}

impl fmt::Display for Uncovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uncovered::Operation { allowed, requested } => match requested {
                Some(requested) => write!(f, "it allows {allowed}, not {requested}"),
                None => write!(f, "it allows {allowed}, and the request names no operation"),
            },
            Uncovered::Agent { allowed, filed_by } => write!(
                f,
                "it allows {allowed} only, and the request was filed by {}",
                filed_by.as_deref().unwrap_or("someone unknown")
            ),
            Uncovered::NoPayload => f.write_str("the request has no payload to check"),
            Uncovered::Constraint(unmet) => unmet.fmt(f),
            Uncovered::Amount(exhausted) => exhausted.fmt(f),
        }
    }
}

impl Allowance {
    /// An allowance of `terms`, made at `created_at`, under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] (field `allowance`) naming the first problem: an operation
    /// pattern the quorum table would refuse, more than 32 constraints, bounds
    /// [`Bounds::check`] refuses, an agent login or reason the request fields' rules refuse;
    /// [`Error::Io`]-class trouble if no random id can be had.
    pub fn new(terms: Terms, created_at: Timestamp) -> Result<Self, Error> {
        let id = RequestId::random().map_err(|e| Error::InvalidInput {
            field: "allowance",
            problem: format!("no randomness for its id: {e}"),
        })?;
        Self::with_id(id, terms, created_at)
    }

    /// [`new`](Allowance::new) with a given id (a record read back, a test).
    pub(crate) fn with_id(
        id: RequestId,
        terms: Terms,
        created_at: Timestamp,
    ) -> Result<Self, Error> {
        let invalid = |problem: String| Error::InvalidInput {
            field: "allowance",
            problem,
        };
        crate::policy::quorum::check_pattern(&terms.operation).map_err(invalid)?;
        if terms.constraints.len() > MAX_CONSTRAINTS {
            return Err(invalid(format!(
                "at most {MAX_CONSTRAINTS} constraints, not {}",
                terms.constraints.len()
            )));
        }
        terms.bounds.check(created_at).map_err(invalid)?;
        if let Some(agent) = &terms.agent {
            check_text("allowance agent", agent, MAX_NAME_BYTES, Blank::Refused)?;
        }
        check_text(
            "allowance reason",
            &terms.reason,
            MAX_REASON_BYTES,
            Blank::Allowed,
        )?;
        Ok(Self {
            id,
            created_at,
            terms,
        })
    }

    /// Its id.
    #[must_use]
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// When it was made.
    #[must_use]
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// What it allows.
    #[must_use]
    pub fn terms(&self) -> &Terms {
        &self.terms
    }

    /// Whether it covers a request for `operation` with `payload`, filed by `filed_by`, and
    /// if so the amount one use spends of its budget (`None` without a budget). Its bounds
    /// are not asked: whether one more use fits is [`Bounds::admit`]'s, under the store's
    /// count.
    ///
    /// # Errors
    ///
    /// Why not ([`Uncovered`]): checked in the order operation, agent, payload, constraints
    /// (in their order), amount.
    pub fn covers(
        &self,
        operation: Option<&str>,
        payload: Option<&CanonicalPayload>,
        filed_by: Option<&str>,
    ) -> Result<Option<u64>, Uncovered> {
        let allowed = &self.terms.operation;
        if !operation.is_some_and(|name| glob(name.as_bytes(), allowed.as_bytes())) {
            return Err(Uncovered::Operation {
                allowed: allowed.clone(),
                requested: operation.map(str::to_owned),
            });
        }
        if let Some(agent) = &self.terms.agent
            && filed_by != Some(agent.as_str())
        {
            return Err(Uncovered::Agent {
                allowed: agent.clone(),
                filed_by: filed_by.map(str::to_owned),
            });
        }
        if self.terms.constraints.is_empty() && self.terms.bounds.budget.is_none() {
            return Ok(None);
        }
        let payload = payload.ok_or(Uncovered::NoPayload)?.to_value();
        for constraint in &self.terms.constraints {
            constraint.check(&payload).map_err(Uncovered::Constraint)?;
        }
        self.terms
            .bounds
            .amount(&payload)
            .map_err(Uncovered::Amount)
    }

    /// The allowance statement an approver signs to allow this as `principal`, one of
    /// `required` approvers: RFC 8785 JSON of everything it allows and who made it when, as
    /// bytes. It says `"statement": "approval-gate allowance"` where a decision statement
    /// says `"approval-gate decision"`, so neither can be taken for the other.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `principal` cannot be part of a statement.
    pub fn statement(&self, principal: &str, required: u32) -> Result<Vec<u8>, Error> {
        check_text("principal", principal, MAX_NAME_BYTES, Blank::Refused)?;
        let mut map = self.to_map();
        map.insert("statement".into(), json!("approval-gate allowance"));
        map.insert("version".into(), json!(ALLOWANCE_STATEMENT_VERSION));
        map.insert("principal".into(), json!(principal));
        map.insert("requiredApprovals".into(), json!(required));
        Ok(CanonicalPayload::from_value(&Value::Object(map))?
            .as_bytes()
            .to_vec())
    }

    /// The allowance as its record keeps it (and its statement signs, with the signer added):
    /// what a front end hands to an approver's tool to sign, and reads back.
    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Object(self.to_map())
    }

    /// Reads [`to_json`](Allowance::to_json)'s form back, checking it as
    /// [`new`](Allowance::new) checks terms: a record that says more, or less, is refused.
    ///
    /// # Errors
    ///
    /// The first problem, in words.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        const KEYS: [&str; 7] = [
            "id",
            "createdAt",
            "operation",
            "constraints",
            "bounds",
            "agent",
            "reason",
        ];
        let Value::Object(map) = value else {
            return Err("an allowance is an object".into());
        };
        if let Some(key) = map.keys().find(|key| !KEYS.contains(&key.as_str())) {
            return Err(format!("an allowance has no {key:?}"));
        }
        let text = |key: &str| match map.get(key) {
            Some(Value::String(text)) => Ok(text.as_str()),
            _ => Err(format!("an allowance needs {key:?}, a string")),
        };
        let id = RequestId::parse(text("id")?).map_err(|e| format!("its id: {}", e.text()))?;
        let created_at = Timestamp::parse_rfc3339(text("createdAt")?)?;
        let Some(Value::Array(constraints)) = map.get("constraints") else {
            return Err("an allowance needs \"constraints\", a list".into());
        };
        let constraints = constraints
            .iter()
            .map(Constraint::from_json)
            .collect::<Result<_, _>>()?;
        let agent = match map.get("agent") {
            Some(Value::Null) => None,
            Some(Value::String(agent)) => Some(agent.clone()),
            _ => return Err("an allowance needs \"agent\", a string or null".into()),
        };
        let terms = Terms {
            operation: text("operation")?.to_owned(),
            constraints,
            bounds: Bounds::from_json(map.get("bounds").unwrap_or(&Value::Null))?,
            agent,
            reason: text("reason")?.to_owned(),
        };
        Self::with_id(id, terms, created_at).map_err(|e| e.to_string())
    }

    fn to_map(&self) -> serde_json::Map<String, Value> {
        let value = json!({
            "id": self.id,
            "createdAt": self.created_at,
            "operation": self.terms.operation,
            "constraints": self.terms.constraints.iter().map(Constraint::to_json).collect::<Vec<_>>(),
            "bounds": self.terms.bounds.to_json(),
            "agent": self.terms.agent,
            "reason": self.terms.reason,
        });
        match value {
            Value::Object(map) => map,
            _ => unreachable!("json! of braces is an object"),
        }
    }

    /// What it allows, one line each, for a page or a terminal: the operation, each
    /// constraint, each bound. Strings from a payload are in it as JSON strings; a front end
    /// escapes the lines as it escapes anything an agent wrote.
    #[must_use]
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!("operation {}", self.terms.operation)];
        lines.extend(self.terms.constraints.iter().map(ToString::to_string));
        lines.extend(self.terms.bounds.describe());
        if let Some(agent) = &self.terms.agent {
            lines.push(format!("filed by {agent} only"));
        }
        lines
    }
}

/// Whether some operation name matches both patterns (quorum globs: `*` any run, `?` one
/// character): an allowance for `payments.*` reaches every row of the quorum table it
/// overlaps, and needs the most any of them asks.
pub(crate) fn patterns_overlap(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // seen[i][j]: (a[i..], b[j..]) was reached and found not to overlap.
    let mut seen = vec![vec![false; b.len() + 1]; a.len() + 1];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if seen[i][j] {
            continue;
        }
        seen[i][j] = true;
        match (a.get(i), b.get(j)) {
            (None, None) => return true,
            (Some(b'*'), _) | (_, Some(b'*')) => {
                // A star may stand for nothing, or eat one character of the other side (a
                // star there is any text too).
                if a.get(i) == Some(&b'*') {
                    stack.push((i + 1, j));
                    if j < b.len() {
                        stack.push((i, j + 1));
                    }
                }
                if b.get(j) == Some(&b'*') {
                    stack.push((i, j + 1));
                    if i < a.len() {
                        stack.push((i + 1, j));
                    }
                }
            }
            (Some(&x), Some(&y)) if x == y || x == b'?' || y == b'?' => stack.push((i + 1, j + 1)),
            _ => {}
        }
    }
    false
}
