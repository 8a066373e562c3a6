//! The strict parser: JSON text to a `Value`, refusing what a `Value` would silently lose.

#[allow(clippy::wildcard_imports)] // the parent's helpers and imports, shared by design
use super::*;

/// Parses JSON text into a `Value`, refusing what a `Value` would silently lose: duplicate
/// keys, the integer/float distinction, and correctly rounded floats.
///
/// `serde_json` does the tokenizing, string unescaping and syntax errors; a seeded visitor adds
/// the rules; and because serde's visitor API hides how a value was written (and `serde_json`'s
/// `arbitrary_precision` feature even changes which visitor method a number arrives through),
/// every value is matched with its first token in the text by [`Starts`], which is also where
/// each number is read from.
pub(super) fn parse(text: &str) -> Result<Value, PayloadError> {
    let mut state = ParseState {
        starts: Starts { text, pos: 0 },
        path: Vec::new(),
        refusal: None,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Node {
        state: &mut state,
        depth: 0,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|error| {
        state
            .refusal
            .take()
            .unwrap_or_else(|| PayloadError::Syntax(error.to_string().to_lowercase()))
    })
}

struct ParseState<'t> {
    starts: Starts<'t>,
    path: Vec<String>,
    /// The structured refusal behind the last visitor error; `serde_json` can only carry a
    /// message through.
    refusal: Option<PayloadError>,
}

impl ParseState<'_> {
    fn refuse<E: de::Error>(&mut self, refusal: PayloadError) -> E {
        let error = E::custom(&refusal);
        self.refusal = Some(refusal);
        error
    }

    /// Steps to the first token of the next value or key, which must be the one `expected`.
    fn expect(&mut self, expected: Start<'_>) -> Result<(), PayloadError> {
        if self.starts.next() == Some(expected) {
            Ok(())
        } else {
            Err(out_of_step())
        }
    }

    /// Reads the next number token from the text and converts it under the number rules.
    fn number(&mut self) -> Result<Value, PayloadError> {
        match self.starts.next() {
            Some(Start::Number(token)) => self.number_from(token),
            _ => Err(out_of_step()),
        }
    }

    /// Converts a number token under the number rules.
    fn number_from(&self, token: &str) -> Result<Value, PayloadError> {
        let path = || pointer(&self.path);
        let number = if token.contains(['.', 'e', 'E']) {
            // Rust's float parsing is correctly rounded, unlike serde_json's default; it only
            // "fails" here by overflowing to infinity, which `from_f64` turns away.
            token
                .parse()
                .ok()
                .and_then(Number::from_f64)
                .ok_or_else(|| PayloadError::NumberOutOfRange {
                    path: path(),
                    value: quote(&token),
                })?
        } else {
            integer_token(token).ok_or_else(|| PayloadError::IntegerOutOfRange {
                path: path(),
                value: quote(&token),
            })?
        };
        check_number(&number, &token, &self.path)?;
        Ok(Value::Number(number))
    }
}

/// The parser and [`Starts`] disagree about the text: a bug, never the input's fault, and
/// refused like any other doubt.
fn out_of_step() -> PayloadError {
    PayloadError::Syntax(
        "internal error: the value scanner is out of step with the json parser; please report this payload to the approval-gate maintainers".to_owned(),
    )
}

/// Converts an integer token, or `None` if it is beyond `i64` (and so out of range anyway).
fn integer_token(token: &str) -> Option<Number> {
    let (negative, digits) = token
        .strip_prefix('-')
        .map_or((false, token), |d| (true, d));
    let magnitude = i64::try_from(digits.parse::<u64>().ok()?).ok()?;
    Some(Number::from(if negative { -magnitude } else { magnitude }))
}

/// Seed and visitor for one JSON value whose enclosing containers are `depth` deep.
struct Node<'s, 't> {
    state: &'s mut ParseState<'t>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Seed for an array element or member value: extends the path while the child is parsed.
/// After an error the path is left as is, since parsing stops and the refusal already holds
/// its pointer.
struct Child<'s, 't> {
    state: &'s mut ParseState<'t>,
    depth: usize,
    segment: String,
}

impl<'de> DeserializeSeed<'de> for Child<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.state.path.push(self.segment);
        let value = Node {
            state: &mut *self.state,
            depth: self.depth,
        }
        .deserialize(deserializer)?;
        self.state.path.pop();
        Ok(value)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.state
            .expect(Start::Literal)
            .map_err(|r| self.state.refuse(r))?;
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.state
            .expect(Start::Literal)
            .map_err(|r| self.state.refuse(r))?;
        Ok(Value::Bool(value))
    }

    // serde hands over only the value; the number rules need the spelling (and a correctly
    // rounded float), so each number is taken from the text instead.
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Value, E> {
        self.state.number().map_err(|r| self.state.refuse(r))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.state
            .expect(Start::String)
            .map_err(|r| self.state.refuse(r))?;
        check_nul(value, || pointer(&self.state.path)).map_err(|r| self.state.refuse(r))?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.state
            .expect(Start::Array)
            .map_err(|r| self.state.refuse(r))?;
        let depth = enter(self.depth, &self.state.path).map_err(|r| self.state.refuse(r))?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Child {
            state: &mut *self.state,
            depth,
            segment: items.len().to_string(),
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        match self.state.starts.next() {
            Some(Start::Object) => self.object(map),
            // With serde_json's `arbitrary_precision`, which any crate in the build can switch
            // on, floats and integers beyond 64 bits arrive as a one-member map of their digits.
            Some(Start::Number(token)) => self.spelled_number(map, token),
            _ => Err(self.state.refuse(out_of_step())),
        }
    }
}

impl<'de> Node<'_, '_> {
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = enter(self.depth, &self.state.path).map_err(|r| self.state.refuse(r))?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.state
                .expect(Start::String)
                .map_err(|r| self.state.refuse(r))?;
            check_member_key(&members, &key, &self.state.path).map_err(|r| self.state.refuse(r))?;
            let value = map.next_value_seed(Child {
                state: &mut *self.state,
                depth,
                segment: key.clone(),
            })?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }

    /// A number handed over as `serde_json`'s private one-member map. The text, not the map's
    /// key, says this is a number, so a real object using that key stays an object. The key's
    /// name is `serde_json`'s business; its digits (which spell exponents `serde_json`'s own way)
    /// must still be the token's value, as a check that both read the same number.
    fn spelled_number<A: MapAccess<'de>>(self, mut map: A, token: &str) -> Result<Value, A::Error> {
        let digits = match map.next_key::<de::IgnoredAny>()? {
            Some(_) => Some(map.next_value::<String>()?),
            None => None,
        };
        let value_of = |text: &str| text.parse::<f64>().ok().map(f64::to_bits);
        let same =
            digits.is_some_and(|d| value_of(&d).is_some() && value_of(&d) == value_of(token));
        if !same || map.next_key::<de::IgnoredAny>()?.is_some() {
            return Err(self.state.refuse(out_of_step()));
        }
        self.state
            .number_from(token)
            .map_err(|r| self.state.refuse(r))
    }
}

fn check_member_key(
    members: &Map<String, Value>,
    key: &str,
    path: &[String],
) -> Result<(), PayloadError> {
    check_nul(key, || member_pointer(path, key))?;
    if members.contains_key(key) {
        return Err(PayloadError::DuplicateKey {
            path: member_pointer(path, key),
            key: quote(&key),
        });
    }
    Ok(())
}

/// The first token of a JSON value or member key, as found in the text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Start<'t> {
    /// `null`, `true` or `false`.
    Literal,
    /// A string value or a member key.
    String,
    /// A number, the whole token as written.
    Number(&'t str),
    /// `[`.
    Array,
    /// `{`.
    Object,
}

/// Yields the first token of every value and member key of JSON text in document order, which
/// is the order `serde_json` hands them to the visitor in. Each is consulted only once
/// `serde_json` has read that token, so it only has to be right for valid JSON: outside strings,
/// whitespace and the separators `,` `:` `]` `}` are all that lies between two of them.
struct Starts<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Iterator for Starts<'t> {
    type Item = Start<'t>;

    fn next(&mut self) -> Option<Start<'t>> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.pos) {
            let start = self.pos;
            let found = match byte {
                b'"' => {
                    self.pos = string_end(bytes, start + 1);
                    Start::String
                }
                b'-' | b'0'..=b'9' => {
                    self.pos = number_end(bytes, start);
                    Start::Number(self.text.get(start..self.pos)?)
                }
                b'[' => {
                    self.pos += 1;
                    Start::Array
                }
                b'{' => {
                    self.pos += 1;
                    Start::Object
                }
                b't' | b'f' | b'n' => {
                    while bytes.get(self.pos).is_some_and(u8::is_ascii_alphabetic) {
                        self.pos += 1;
                    }
                    Start::Literal
                }
                _ => {
                    self.pos += 1;
                    continue;
                }
            };
            return Some(found);
        }
        None
    }
}

/// Index just past the closing quote of a string whose contents start at `pos`.
fn string_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b'\\' => pos += 2,
            b'"' => return pos + 1,
            _ => pos += 1,
        }
    }
    pos
}

/// Index just past the number starting at `pos`, following the JSON number grammar exactly
/// so that the token ends where `serde_json`'s did.
fn number_end(bytes: &[u8], mut pos: usize) -> usize {
    let digits = |mut pos: usize| {
        while bytes.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        pos
    };
    if bytes.get(pos) == Some(&b'-') {
        pos += 1;
    }
    pos = if bytes.get(pos) == Some(&b'0') {
        pos + 1
    } else {
        digits(pos)
    };
    if bytes.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    if matches!(bytes.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(bytes.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = digits(pos);
    }
    pos
}
