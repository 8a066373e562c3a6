//! How far an allowance reaches: a count of uses, a budget summed over an integer field of the
//! payload, a rate, and a window that ends at most seven days after it was made.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

use super::constraint::exact_integer;
use crate::limits::{MAX_SAFE_INTEGER, MAX_TTL};
use crate::time::Timestamp;

/// The longest window an allowance may have, from its making to its end: seven days.
pub const MAX_WINDOW: Duration = MAX_TTL;
/// The most uses an allowance may count.
pub const MAX_USES: u32 = 100_000;
/// The longest rate period: the window itself.
pub const MAX_RATE_PERIOD: Duration = MAX_WINDOW;

/// A budget: the sum of the exact integers at `pointer` over every use stays at most `total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Where in the payload the amount of a use is (a JSON Pointer).
    pub pointer: String,
    /// The most all uses together may spend.
    pub total: u64,
}

/// A rate: at most `count` uses in any `period` (a sliding window ending at each use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Uses per period.
    pub count: u32,
    /// The period, whole seconds.
    pub period: Duration,
}

/// The bounds of an allowance: every one given must hold at each use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// At most this many uses.
    pub uses: Option<u32>,
    /// A budget over an integer field.
    pub budget: Option<Budget>,
    /// At most so many uses per period.
    pub rate: Option<Rate>,
    /// Not usable before.
    pub not_before: Timestamp,
    /// Not usable after.
    pub not_after: Timestamp,
}

/// What an allowance has counted so far, as the store keeps it: read under the allowance's
/// lock, in the same step that adds the next use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uses counted.
    pub uses: u32,
    /// The budget spent.
    pub spent: u64,
    /// When the uses within the longest rate period were counted (all of them will do).
    pub recent: Vec<Timestamp>,
}

/// Why a use does not fit the bounds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exhausted {
    /// Before the window opens.
    NotYet {
        /// When it opens.
        not_before: Timestamp,
    },
    /// After the window closed.
    Ended {
        /// When it closed.
        not_after: Timestamp,
    },
    /// Every use is spent.
    Uses {
        /// The uses it allowed.
        limit: u32,
    },
    /// This use's amount would overdraw the budget.
    Budget {
        /// The budget.
        total: u64,
        /// Spent before this use.
        spent: u64,
        /// This use's amount.
        amount: u64,
    },
    /// The rate is reached for now.
    Rate {
        /// Uses per period.
        count: u32,
        /// The period.
        period: Duration,
    },
    /// The amount cannot be counted: missing, not an exact integer, or negative.
    Amount {
        /// The budget's pointer.
        pointer: String,
    },
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exhausted::NotYet { not_before } => write!(f, "it is not usable before {not_before}"),
            Exhausted::Ended { not_after } => write!(f, "it ended at {not_after}"),
            Exhausted::Uses { limit } => write!(f, "all {limit} of its uses are spent"),
            Exhausted::Budget {
                total,
                spent,
                amount,
            } => write!(
                f,
                "{amount} would overdraw its budget: {spent} of {total} is spent"
            ),
            Exhausted::Rate { count, period } => write!(
                f,
                "it allows {count} uses in {} s, and they are spent",
                period.as_secs()
            ),
            Exhausted::Amount { pointer } => write!(
                f,
                "the amount at {pointer} is missing, not an exact integer, or negative: it \
                 cannot be counted against the budget"
            ),
        }
    }
}

impl Bounds {
    /// Checks the bounds as made at `created_at`.
    ///
    /// # Errors
    ///
    /// A problem in words: no count at all (uses, budget or rate: an allowance must be
    /// bounded by more than its window), zero uses or a zero budget or rate, a window that
    /// ends before it begins, before `created_at`, or more than [`MAX_WINDOW`] after it, a
    /// rate period under a second or over [`MAX_RATE_PERIOD`].
    pub fn check(&self, created_at: Timestamp) -> Result<(), String> {
        if self.uses.is_none() && self.budget.is_none() && self.rate.is_none() {
            return Err("an allowance needs a number of uses, a budget or a rate".into());
        }
        if let Some(uses) = self.uses
            && !(1..=MAX_USES).contains(&uses)
        {
            return Err(format!("uses must be 1 to {MAX_USES}"));
        }
        if let Some(budget) = &self.budget {
            super::constraint::Constraint::new(
                budget.pointer.clone(),
                super::constraint::Test::AtLeast(0),
            )?;
            if !(1..=MAX_SAFE_INTEGER).contains(&budget.total) {
                return Err(format!("a budget must be 1 to {MAX_SAFE_INTEGER}"));
            }
        }
        if let Some(rate) = self.rate
            && (rate.count == 0
                || rate.period < Duration::from_secs(1)
                || rate.period > MAX_RATE_PERIOD
                || rate.period.subsec_nanos() != 0)
        {
            return Err(format!(
                "a rate is at least one use per whole number of seconds, 1 s to {} s",
                MAX_RATE_PERIOD.as_secs()
            ));
        }
        if self.not_after <= self.not_before {
            return Err("its window ends before it begins".into());
        }
        if self.not_after <= created_at {
            return Err("its window has ended already".into());
        }
        if self.not_after > created_at.saturating_add(MAX_WINDOW) {
            return Err(format!(
                "its window may end at most {} days after it is made",
                MAX_WINDOW.as_secs() / 86_400
            ));
        }
        Ok(())
    }

    /// The amount a use of `payload` counts against the budget: `None` without a budget.
    ///
    /// # Errors
    ///
    /// [`Exhausted::Amount`] if the budget's field is missing, not an exact integer, or
    /// negative (a negative amount would give budget back).
    pub fn amount(&self, payload: &Value) -> Result<Option<u64>, Exhausted> {
        let Some(budget) = &self.budget else {
            return Ok(None);
        };
        payload
            .pointer(&budget.pointer)
            .and_then(exact_integer)
            .and_then(|n| u64::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| Exhausted::Amount {
                pointer: budget.pointer.clone(),
            })
    }

    /// Whether one more use, of `amount` (from [`amount`](Bounds::amount)), fits at `now`
    /// after `usage`.
    ///
    /// # Errors
    ///
    /// The first bound it would break, in this order: the window, the uses, the budget, the
    /// rate.
    pub fn admit(
        &self,
        usage: &Usage,
        amount: Option<u64>,
        now: Timestamp,
    ) -> Result<(), Exhausted> {
        if now < self.not_before {
            return Err(Exhausted::NotYet {
                not_before: self.not_before,
            });
        }
        if now > self.not_after {
            return Err(Exhausted::Ended {
                not_after: self.not_after,
            });
        }
        if let Some(limit) = self.uses
            && usage.uses >= limit
        {
            return Err(Exhausted::Uses { limit });
        }
        if let Some(budget) = &self.budget {
            let amount = amount.ok_or_else(|| Exhausted::Amount {
                pointer: budget.pointer.clone(),
            })?;
            if usage
                .spent
                .checked_add(amount)
                .is_none_or(|sum| sum > budget.total)
            {
                return Err(Exhausted::Budget {
                    total: budget.total,
                    spent: usage.spent,
                    amount,
                });
            }
        }
        if let Some(rate) = self.rate {
            let since = now.saturating_sub(rate.period);
            let within = usage.recent.iter().filter(|&&at| at > since).count();
            if within >= rate.count as usize {
                return Err(Exhausted::Rate {
                    count: rate.count,
                    period: rate.period,
                });
            }
        }
        Ok(())
    }

    /// The bounds as the statement and the record hold them.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "uses": self.uses,
            "budget": self.budget.as_ref().map(|b| json!({"pointer": b.pointer, "total": b.total})),
            "rate": self.rate.map(|r| json!({"count": r.count, "periodSeconds": r.period.as_secs()})),
            "notBefore": self.not_before,
            "notAfter": self.not_after,
        })
    }

    /// Reads [`to_json`](Bounds::to_json)'s form back (checked by the allowance that holds
    /// it).
    pub(crate) fn from_json(value: &Value) -> Result<Self, String> {
        const KEYS: [&str; 5] = ["uses", "budget", "rate", "notBefore", "notAfter"];
        let Value::Object(map) = value else {
            return Err("an allowance needs \"bounds\", an object".into());
        };
        if let Some(key) = map.keys().find(|key| !KEYS.contains(&key.as_str())) {
            return Err(format!("its bounds have no {key:?}"));
        }
        let get = |key: &str| map.get(key).unwrap_or(&Value::Null);
        let count = |value: &Value, what: &str| {
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("{what} is a whole number"))
        };
        let time = |key: &str| match get(key) {
            Value::String(text) => Timestamp::parse_rfc3339(text),
            _ => Err(format!("its bounds need {key:?}, a time")),
        };
        let uses = match get("uses") {
            Value::Null => None,
            value => Some(count(value, "uses")?),
        };
        let budget = match get("budget") {
            Value::Null => None,
            Value::Object(budget) if budget.len() == 2 => Some(Budget {
                pointer: budget
                    .get("pointer")
                    .and_then(Value::as_str)
                    .ok_or("a budget needs \"pointer\"")?
                    .to_owned(),
                total: budget
                    .get("total")
                    .and_then(Value::as_u64)
                    .ok_or("a budget needs \"total\", a whole number")?,
            }),
            _ => return Err("a budget is {\"pointer\", \"total\"}".into()),
        };
        let rate = match get("rate") {
            Value::Null => None,
            Value::Object(rate) if rate.len() == 2 => Some(Rate {
                count: count(rate.get("count").unwrap_or(&Value::Null), "a rate's count")?,
                period: Duration::from_secs(
                    rate.get("periodSeconds")
                        .and_then(Value::as_u64)
                        .ok_or("a rate needs \"periodSeconds\", a whole number")?,
                ),
            }),
            _ => return Err("a rate is {\"count\", \"periodSeconds\"}".into()),
        };
        Ok(Self {
            uses,
            budget,
            rate,
            not_before: time("notBefore")?,
            not_after: time("notAfter")?,
        })
    }

    /// In words, one line each, for a page or a terminal.
    #[must_use]
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(uses) = self.uses {
            lines.push(if uses == 1 {
                "once".to_owned()
            } else {
                format!("at most {uses} times")
            });
        }
        if let Some(budget) = &self.budget {
            lines.push(format!(
                "{} adding up to at most {} over all uses",
                budget.pointer, budget.total
            ));
        }
        if let Some(rate) = self.rate {
            lines.push(format!(
                "at most {} times in any {}",
                rate.count,
                humantime::format_duration(rate.period)
            ));
        }
        lines.push(format!("from {} until {}", self.not_before, self.not_after));
        lines
    }
}
