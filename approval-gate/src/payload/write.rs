//! The canonical writer: a `Value` to RFC 8785 text (or an indented rendering), and the
//! ECMAScript number layout it needs.

#[allow(clippy::wildcard_imports)] // the parent's helpers and imports, shared by design
use super::*;

/// Writes a `Value` as canonical (or indented) JSON, checking the rules as it goes so that
/// values built in code are held to the same standard as parsed text.
pub(super) struct Writer {
    out: String,
    path: Vec<String>,
    pretty: bool,
}

impl Writer {
    pub(super) fn render(value: &Value, pretty: bool) -> Result<String, PayloadError> {
        let mut writer = Self {
            out: String::new(),
            path: Vec::new(),
            pretty,
        };
        writer.value(value, 0)?;
        Ok(writer.out)
    }

    fn value(&mut self, value: &Value, depth: usize) -> Result<(), PayloadError> {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(true) => self.out.push_str("true"),
            Value::Bool(false) => self.out.push_str("false"),
            Value::Number(number) => {
                check_number(number, number, &self.path)?;
                self.out.push_str(&number_text(number));
            }
            Value::String(text) => {
                check_nul(text, || pointer(&self.path))?;
                write_string(&mut self.out, text);
            }
            Value::Array(items) => self.array(items, enter(depth, &self.path)?)?,
            Value::Object(members) => self.object(members, enter(depth, &self.path)?)?,
        }
        Ok(())
    }

    fn array(&mut self, items: &[Value], depth: usize) -> Result<(), PayloadError> {
        self.out.push('[');
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            self.line_break(depth);
            self.path.push(index.to_string());
            self.value(item, depth)?;
            self.path.pop();
        }
        if !items.is_empty() {
            self.line_break(depth - 1);
        }
        self.out.push(']');
        Ok(())
    }

    fn object(&mut self, members: &Map<String, Value>, depth: usize) -> Result<(), PayloadError> {
        let mut sorted: Vec<_> = members.iter().collect();
        // RFC 8785 orders keys by UTF-16 code units, which differs from UTF-8 byte order
        // (and so from serde_json's map order) once keys go beyond U+FFFF.
        sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
        self.out.push('{');
        for (index, (key, value)) in sorted.into_iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            self.line_break(depth);
            check_nul(key, || member_pointer(&self.path, key))?;
            write_string(&mut self.out, key);
            self.out.push_str(if self.pretty { ": " } else { ":" });
            self.path.push(key.clone());
            self.value(value, depth)?;
            self.path.pop();
        }
        if !members.is_empty() {
            self.line_break(depth - 1);
        }
        self.out.push('}');
        Ok(())
    }

    fn line_break(&mut self, level: usize) {
        if self.pretty {
            self.out.push('\n');
            self.out.push_str(&"  ".repeat(level));
        }
    }
}

/// Spells a number that already passed [`check_number`].
fn number_text(number: &Number) -> String {
    if let Some(integer) = number.as_u64() {
        integer.to_string()
    } else if let Some(integer) = number.as_i64() {
        integer.to_string()
    } else {
        format_number(number.as_f64().unwrap_or(f64::NAN))
    }
}

/// Writes a JSON string the way RFC 8785 (and ECMAScript's `JSON.stringify`) does: only
/// `"`, `\` and control characters are escaped, everything else is literal UTF-8.
pub(super) fn write_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0'..='\u{1f}' => {
                let code = c as u8;
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(code >> 4)]));
                out.push(char::from(HEX[usize::from(code & 0xf)]));
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript `Number.prototype.toString`, as RFC 8785 §3.2.2.3 requires for doubles.
pub(super) fn format_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        // Covers -0 as well, which ECMAScript prints as "0".
        return "0".to_owned();
    }
    let mut buffer = ryu::Buffer::new();
    let (digits, exponent) = shortest_digits(buffer.format_finite(value.abs()));
    let sign = if value < 0.0 { "-" } else { "" };
    format!("{sign}{}", es_layout(&digits, exponent))
}

/// Splits ryu's output into significant digits `d` (no leading or trailing zeros) and `n`
/// with value = 0.d × 10^n, the form ECMAScript's layout rules are stated in.
fn shortest_digits(shortest: &str) -> (String, i32) {
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((shortest, "0"));
    let exponent: i32 = exponent.parse().expect("ryu writes a decimal exponent");
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{whole}{fraction}");
    let significant = all.trim_start_matches('0');
    let leading_zeros = all.len() - significant.len();
    let n = exponent + small(whole.len()) - small(leading_zeros);
    (significant.trim_end_matches('0').to_owned(), n)
}

/// Lays out digits `d` with value 0.d × 10^n following ECMA-262 `Number::toString`.
fn es_layout(digits: &str, n: i32) -> String {
    let k = small(digits.len());
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k).unsigned_abs() as usize))
    } else if 0 < n && n <= 21 {
        let (whole, fraction) = digits.split_at(n.unsigned_abs() as usize);
        format!("{whole}.{fraction}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(n.unsigned_abs() as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let sign = if n > 0 { '+' } else { '-' };
        format!("{first}{point}{rest}e{sign}{}", (n - 1).unsigned_abs())
    }
}

/// Digit counts of a double's shortest form are tiny, so they always fit an `i32`.
fn small(count: usize) -> i32 {
    i32::try_from(count).expect("digit count fits in i32")
}
