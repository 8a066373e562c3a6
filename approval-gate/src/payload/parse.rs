//! The strict parser: JSON text to a `Value`, refusing what a `Value` would silently lose.

#[allow(clippy::wildcard_imports)] // the parent's helpers and imports, shared by design
use super::*;

/// Parses JSON text into a `Value`, refusing what a `Value` would silently lose: duplicate
/// keys, the integer/float distinction, and correctly rounded floats.
///
/// `serde_json` does the tokenizing, string unescaping and syntax errors; a seeded visitor adds
/// the rules; and because serde's visitor API hides how a number was written, each number is
/// re-read from the text by [`NumberTokens`].
pub(super) fn parse(text: &str) -> Result<Value, PayloadError> {
    let mut state = ParseState {
        numbers: NumberTokens { text, pos: 0 },
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
    numbers: NumberTokens<'t>,
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

    /// Reads the next number token from the text and converts it under the number rules.
    fn number(&mut self) -> Result<Value, PayloadError> {
        let Some(token) = self.numbers.next() else {
            return Err(PayloadError::Syntax(
                "number token out of step with the parser".to_owned(),
            ));
        };
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
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
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
        check_nul(value, || pointer(&self.state.path)).map_err(|r| self.state.refuse(r))?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
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

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = enter(self.depth, &self.state.path).map_err(|r| self.state.refuse(r))?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
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

/// Yields the number tokens of JSON text in document order, which is the order `serde_json`
/// visits numbers in. Only ever consulted on a prefix `serde_json` has already accepted, so it
/// only has to be right for valid JSON: outside strings, `-` and digits start numbers.
struct NumberTokens<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Iterator for NumberTokens<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.pos) {
            match byte {
                b'"' => self.pos = string_end(bytes, self.pos + 1),
                b'-' | b'0'..=b'9' => {
                    let start = self.pos;
                    self.pos = number_end(bytes, start);
                    return self.text.get(start..self.pos);
                }
                _ => self.pos += 1,
            }
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
