//! The rules every value of a payload must meet, wherever it is read (text or a
//! `serde_json::Value`): size, depth, NUL characters and numbers; and the JSON Pointers that name
//! where a rule was broken.

use std::fmt;

use serde_json::Number;

use super::PayloadError;
use super::error::quote;
use crate::limits::{MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH, MAX_SAFE_INTEGER};

/// From this magnitude on, ECMAScript prints integral doubles with an exponent, so they
/// cannot be mistaken for integers.
pub(super) const EXPONENT_FORM_FROM: f64 = 1e21;

pub(super) fn check_size(actual: usize) -> Result<(), PayloadError> {
    if actual > MAX_PAYLOAD_BYTES {
        return Err(PayloadError::TooLarge {
            limit: MAX_PAYLOAD_BYTES,
            actual,
        });
    }
    Ok(())
}

/// Renders path segments as a JSON Pointer (RFC 6901).
pub(super) fn pointer(segments: &[String]) -> String {
    let mut out = String::new();
    for segment in segments {
        push_segment(&mut out, segment);
    }
    out
}

pub(super) fn push_segment(out: &mut String, segment: &str) {
    out.push('/');
    out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
}

pub(super) fn member_pointer(segments: &[String], key: &str) -> String {
    let mut out = pointer(segments);
    push_segment(&mut out, key);
    out
}

/// Returns the depth of a container opened at `depth`, or refuses it.
pub(super) fn enter(depth: usize, path: &[String]) -> Result<usize, PayloadError> {
    if depth >= MAX_PAYLOAD_DEPTH {
        return Err(PayloadError::TooDeep {
            limit: MAX_PAYLOAD_DEPTH,
            path: pointer(path),
        });
    }
    Ok(depth + 1)
}

pub(super) fn check_nul(text: &str, path: impl FnOnce() -> String) -> Result<(), PayloadError> {
    if text.contains('\0') {
        return Err(PayloadError::NulCharacter { path: path() });
    }
    Ok(())
}

/// Applies the number rules; `spelled` is how the number is shown in a refusal.
pub(super) fn check_number(
    number: &Number,
    spelled: &dyn fmt::Display,
    path: &[String],
) -> Result<(), PayloadError> {
    let magnitude = number
        .as_u64()
        .or_else(|| number.as_i64().map(i64::unsigned_abs));
    if let Some(magnitude) = magnitude {
        if magnitude > MAX_SAFE_INTEGER {
            return Err(PayloadError::IntegerOutOfRange {
                path: pointer(path),
                value: quote(spelled),
            });
        }
        return Ok(());
    }
    // Every other number has an f64 view, except, under serde_json's `arbitrary_precision`, one
    // whose digits overflow or do not parse: NaN makes that a refusal.
    let float = number.as_f64().unwrap_or(f64::NAN);
    if !float.is_finite() {
        return Err(PayloadError::NumberOutOfRange {
            path: pointer(path),
            value: quote(spelled),
        });
    }
    if float.fract() == 0.0 && float.abs() < EXPONENT_FORM_FROM {
        return Err(PayloadError::AmbiguousNumber {
            path: pointer(path),
            value: quote(spelled),
        });
    }
    Ok(())
}
