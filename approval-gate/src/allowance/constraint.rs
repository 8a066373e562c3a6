//! What an allowance says about the payload: a small vocabulary a page can put in words and a
//! person can read. Each constraint names a value by its JSON Pointer (RFC 6901) and tests it:
//! one of a list, matching a glob, at most or at least an integer.
//!
//! A constraint that cannot be evaluated (no value at the pointer, a value of another type,
//! a number that is not an exact integer) does not hold: an allowance covers only what it
//! can be shown to cover.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::limits::MAX_SAFE_INTEGER;

/// The most constraints an allowance may carry, and the most values a list may hold.
pub(crate) const MAX_CONSTRAINTS: usize = 32;
/// The most values a `oneOf` list may hold.
pub(crate) const MAX_LIST: usize = 64;
/// The longest pointer, glob or listed string.
pub(crate) const MAX_TEXT_BYTES: usize = 256;

/// One test of one value of the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    pointer: String,
    test: Test,
}

/// What a [`Constraint`] tests its value for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Test {
    /// Equal to one of these strings or exact integers.
    OneOf(Vec<Value>),
    /// A string matching this glob: `*` any run of characters, `?` any one, but never white
    /// space, a comma, a semicolon, an angle bracket or a control character, so that
    /// `*@example.com` cannot be met by a list of addresses (`x@evil.example, y@example.com`).
    Glob(String),
    /// An exact integer at most this.
    AtMost(i64),
    /// An exact integer at least this.
    AtLeast(i64),
}

/// Why a constraint does not hold for a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmet {
    /// Nothing is at the pointer.
    Missing {
        /// The pointer.
        pointer: String,
    },
    /// The value there is not of the type the test reads.
    WrongType {
        /// The pointer.
        pointer: String,
        /// What the test needs: `a string`, `an exact integer`, `a string or an exact integer`.
        needs: &'static str,
    },
    /// The value is of the right type and fails the test.
    Fails {
        /// The constraint, in words.
        constraint: String,
    },
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::Missing { pointer } => write!(f, "the payload has no value at {pointer}"),
            Unmet::WrongType { pointer, needs } => {
                write!(f, "the value at {pointer} is not {needs}")
            }
            Unmet::Fails { constraint } => write!(f, "it does not hold that {constraint}"),
        }
    }
}

impl Constraint {
    /// `pointer` (a JSON Pointer such as `/to` or `/items/0/price`) must hold `test`.
    ///
    /// # Errors
    ///
    /// A problem in words: a pointer that is not RFC 6901 (empty, not starting with `/`, a `~`
    /// not followed by `0` or `1`), too long; an empty or over-long list, a list with a value
    /// that is neither a string nor an exact integer; an empty or over-long glob.
    pub fn new(pointer: impl Into<String>, test: Test) -> Result<Self, String> {
        let pointer = pointer.into();
        check_pointer(&pointer)?;
        match &test {
            Test::OneOf(values) => {
                if values.is_empty() || values.len() > MAX_LIST {
                    return Err(format!(
                        "{pointer}: a list of 1 to {MAX_LIST} values is needed"
                    ));
                }
                for value in values {
                    match value {
                        Value::String(listed) if listed.len() <= MAX_TEXT_BYTES => {}
                        Value::String(_) => {
                            return Err(format!(
                                "{pointer}: a listed string is over {MAX_TEXT_BYTES} bytes"
                            ));
                        }
                        Value::Number(_) if exact_integer(value).is_some() => {}
                        _ => {
                            return Err(format!(
                                "{pointer}: a list holds strings and exact integers only, not {value}"
                            ));
                        }
                    }
                }
            }
            Test::Glob(glob) => {
                if glob.is_empty()
                    || glob.len() > MAX_TEXT_BYTES
                    || glob.chars().any(char::is_control)
                {
                    return Err(format!(
                        "{pointer}: a glob is 1 to {MAX_TEXT_BYTES} bytes without control characters"
                    ));
                }
            }
            Test::AtMost(n) | Test::AtLeast(n) => {
                if n.unsigned_abs() > MAX_SAFE_INTEGER {
                    return Err(format!(
                        "{pointer}: {n} is beyond the exact integers (±{MAX_SAFE_INTEGER})"
                    ));
                }
            }
        }
        Ok(Self { pointer, test })
    }

    /// The JSON Pointer of the value tested.
    #[must_use]
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// What the value is tested for.
    #[must_use]
    pub fn test(&self) -> &Test {
        &self.test
    }

    /// Whether `payload` meets it.
    ///
    /// # Errors
    ///
    /// Why not: [`Unmet`].
    pub fn check(&self, payload: &Value) -> Result<(), Unmet> {
        let Some(value) = payload.pointer(&self.pointer) else {
            return Err(Unmet::Missing {
                pointer: self.pointer.clone(),
            });
        };
        let wrong = |needs| Unmet::WrongType {
            pointer: self.pointer.clone(),
            needs,
        };
        let holds = match &self.test {
            Test::OneOf(values) => {
                let found = match value {
                    Value::String(_) => value,
                    Value::Number(_) if exact_integer(value).is_some() => value,
                    _ => return Err(wrong("a string or an exact integer")),
                };
                values.iter().any(|listed| same(listed, found))
            }
            Test::Glob(glob) => {
                let Value::String(text) = value else {
                    return Err(wrong("a string"));
                };
                glob_matches(text, glob)
            }
            Test::AtMost(limit) => {
                *limit >= exact_integer(value).ok_or_else(|| wrong("an exact integer"))?
            }
            Test::AtLeast(limit) => {
                *limit <= exact_integer(value).ok_or_else(|| wrong("an exact integer"))?
            }
        };
        if holds {
            Ok(())
        } else {
            Err(Unmet::Fails {
                constraint: self.to_string(),
            })
        }
    }

    /// The constraint as the statement and the record hold it:
    /// `{"pointer":"/to","oneOf":[...]}`, `"glob"`, `"atMost"`, `"atLeast"`.
    pub(crate) fn to_json(&self) -> Value {
        let (key, value) = match &self.test {
            Test::OneOf(values) => ("oneOf", Value::Array(values.clone())),
            Test::Glob(glob) => ("glob", json!(glob)),
            Test::AtMost(n) => ("atMost", json!(n)),
            Test::AtLeast(n) => ("atLeast", json!(n)),
        };
        let mut map = Map::new();
        map.insert("pointer".into(), json!(self.pointer));
        map.insert(key.into(), value);
        Value::Object(map)
    }

    /// Reads [`to_json`](Constraint::to_json)'s form, refusing anything else.
    pub(crate) fn from_json(value: &Value) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err("a constraint is an object".into());
        };
        let Some(Value::String(pointer)) = map.get("pointer") else {
            return Err("a constraint needs a \"pointer\" string".into());
        };
        if map.len() != 2 {
            return Err(format!(
                "{pointer}: a constraint has a pointer and exactly one of oneOf, glob, atMost, atLeast"
            ));
        }
        let integer = |v: &Value| {
            exact_integer(v).ok_or_else(|| format!("{pointer}: an exact integer is needed"))
        };
        let test = if let Some(value) = map.get("oneOf") {
            let Value::Array(values) = value else {
                return Err(format!("{pointer}: oneOf is a list"));
            };
            Test::OneOf(values.clone())
        } else if let Some(value) = map.get("glob") {
            let Value::String(glob) = value else {
                return Err(format!("{pointer}: glob is a string"));
            };
            Test::Glob(glob.clone())
        } else if let Some(value) = map.get("atMost") {
            Test::AtMost(integer(value)?)
        } else if let Some(value) = map.get("atLeast") {
            Test::AtLeast(integer(value)?)
        } else {
            return Err(format!(
                "{pointer}: a constraint has exactly one of oneOf, glob, atMost, atLeast"
            ));
        };
        Self::new(pointer.clone(), test)
    }
}

/// In words, for a page or a terminal (the listed strings are agent-supplied when the
/// constraint was prefilled from a payload: a front end escapes them as it escapes the payload).
impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = &self.pointer;
        match &self.test {
            Test::OneOf(values) if values.len() == 1 => write!(f, "{pointer} is {}", values[0]),
            Test::OneOf(values) => {
                write!(f, "{pointer} is one of ")?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value}")?;
                }
                Ok(())
            }
            Test::Glob(glob) => write!(f, "{pointer} matches {}", json!(glob)),
            Test::AtMost(n) => write!(f, "{pointer} is at most {n}"),
            Test::AtLeast(n) => write!(f, "{pointer} is at least {n}"),
        }
    }
}

/// RFC 6901: empty is the whole document (refused here: a constraint names a value in it),
/// otherwise `/`-separated tokens in which `~` is followed by `0` or `1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if !pointer.starts_with('/') || pointer.len() > MAX_TEXT_BYTES {
        return Err(format!(
            "{pointer:?} is not a JSON Pointer to a value (like /to or /items/0/price, at most {MAX_TEXT_BYTES} bytes)"
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!("{pointer:?}: a ~ in a JSON Pointer is ~0 or ~1"));
        }
        if c.is_control() {
            return Err(format!(
                "{pointer:?}: a control character in a JSON Pointer"
            ));
        }
    }
    Ok(())
}

/// The value as an exact integer (the payload rules keep integers within ±2^53−1), or `None`
/// for anything else, fractions included.
pub(crate) fn exact_integer(value: &Value) -> Option<i64> {
    let n = value.as_i64()?;
    (n.unsigned_abs() <= MAX_SAFE_INTEGER).then_some(n)
}

/// JSON equality of a listed value and a found one: strings byte for byte, integers by value.
fn same(listed: &Value, found: &Value) -> bool {
    match (listed, found) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(_), Value::Number(_)) => {
            exact_integer(listed).is_some() && exact_integer(listed) == exact_integer(found)
        }
        _ => false,
    }
}

/// Whether `c` may stand in a `*` run of a constraint glob.
fn in_star(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || matches!(c, ',' | ';' | '<' | '>'))
}

/// A constraint glob over characters: `?` one [`in_star`] character, `*` a run of them.
pub(crate) fn glob_matches(text: &str, glob: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    let glob: Vec<char> = glob.chars().collect();
    let (mut t, mut g) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == text[t] || (c == '?' && in_star(text[t])) => {
                t += 1;
                g += 1;
            }
            _ => match star {
                // The run grows by one character, if that character may be in it.
                Some((star_g, star_t)) if in_star(text[star_t]) => {
                    g = star_g + 1;
                    t = star_t + 1;
                    star = Some((star_g, star_t + 1));
                }
                _ => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}
