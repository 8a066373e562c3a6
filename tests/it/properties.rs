//! Properties of canonical payloads over generated JSON: canonicalization is idempotent,
//! independent of key order and whitespace, and the pretty form means the same payload.

use approval_gate::CanonicalPayload;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn leaf() -> impl Strategy<Value = Value> {
    let safe = i64::try_from(approval_gate::MAX_SAFE_INTEGER).unwrap();
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-safe..=safe).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite, not integral below 1e21", |x| {
                x.is_finite() && (x.fract() != 0.0 || x.abs() >= 1e21)
            })
            .prop_map(|x| Value::Number(Number::from_f64(x).unwrap())),
        "[^\u{0}]{0,12}".prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[^\u{0}]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Writes `value` as JSON with object members in reverse order and loose whitespace.
fn scrambled(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let parts: Vec<_> = items.iter().map(scrambled).collect();
            format!("[ {} ]", parts.join(" ,\n "))
        }
        Value::Object(map) => {
            let parts: Vec<_> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("{} :\t{}", Value::String(k.clone()), scrambled(v)))
                .collect();
            format!("{{ {} }}", parts.join(" , "))
        }
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn canonicalization_is_idempotent_and_order_free(value in json()) {
        let canonical = CanonicalPayload::from_value(&value).unwrap();
        let again = CanonicalPayload::from_json_text(canonical.as_str()).unwrap();
        prop_assert_eq!(again.as_str(), canonical.as_str());
        prop_assert_eq!(again.digest(), canonical.digest());

        let from_text = CanonicalPayload::from_json_text(&value.to_string()).unwrap();
        prop_assert_eq!(from_text.as_str(), canonical.as_str());

        let from_scrambled = CanonicalPayload::from_json_text(&scrambled(&value)).unwrap();
        prop_assert_eq!(from_scrambled.digest(), canonical.digest());

        let from_pretty = CanonicalPayload::from_json_text(&canonical.pretty()).unwrap();
        prop_assert_eq!(from_pretty.as_str(), canonical.as_str());
    }
}
