//! Tests of canonical payloads: the RFC 8785 examples, every refusal, and the round trips.

use serde::Deserialize;
use serde::ser::SerializeMap;
use serde_json::json;

use super::*;
use crate::limits::{MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH};

const RFC_SAMPLE: &str = r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"#;
const RFC_SORTING: &str = r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}"#;

/// Every accepted sample used below, for the identity check.
const ACCEPTED: &[&str] = &[
    RFC_SAMPLE,
    RFC_SORTING,
    r#"{"\u00e9": 1, "\ud83d\ude00": 2, "\ufb01": 3}"#,
    r#"{ "b" : [ 1 , { "y" : null , "x" : true } ] , "a" : "s" }"#,
    "[9007199254740991, -9007199254740991, -0, 0, 1.5, 1E30, -2.5e-8, 1e21]",
    r#""\u0001\u001f\u007f\u2028\b\f\n\r\t\"\\/""#,
    r#"{"e\u0301": "NFD", "\u00e9": "NFC"}"#,
    "[[], {}, [[]], \"\"]",
    "0.1",
];

fn canonical(text: &str) -> String {
    CanonicalPayload::from_json_text(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .as_str()
        .to_owned()
}

fn refusal(text: &str) -> PayloadError {
    CanonicalPayload::from_json_text(text).expect_err(text)
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// Takes a deep `Value` apart iteratively; the derived drop would recurse off the stack.
fn dismantle(mut value: Value) {
    while let Value::Array(mut items) = value {
        value = items.pop().unwrap_or(Value::Null);
    }
}

#[test]
fn rfc8785_sample_canonicalizes_byte_for_byte() {
    assert_eq!(
        canonical(RFC_SAMPLE),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn rfc8785_sorting_example_orders_by_utf16() {
    let value = json!([
        "\r",
        "1",
        "\u{80}",
        "\u{f6}",
        "\u{20ac}",
        "\u{1f600}",
        "\u{fb33}"
    ]);
    let keys: Vec<&str> = value
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let text = canonical(RFC_SORTING);
    let mut positions: Vec<usize> = keys
        .iter()
        .map(|key| {
            let mut quoted = String::new();
            write_string(&mut quoted, key);
            text.find(&format!("{quoted}:")).expect(key)
        })
        .collect();
    let found = positions.clone();
    positions.sort_unstable();
    assert_eq!(found, positions, "{text}");
    assert!(text.starts_with(r#"{"\r":"Carriage Return","1":"One","#));
}

#[test]
fn keys_sort_by_utf16_not_utf8() {
    // UTF-8 would put U+FB01 before U+1F600; UTF-16 surrogates (D83D) sort first.
    assert_eq!(
        canonical(r#"{"\ufb01": 3, "\ud83d\ude00": 2, "\u00e9": 1}"#),
        "{\"\u{e9}\":1,\"\u{1f600}\":2,\"\u{fb01}\":3}"
    );
    let from_value =
        CanonicalPayload::from_value(&json!({"\u{fb01}": 3, "\u{1f600}": 2, "\u{e9}": 1})).unwrap();
    assert_eq!(
        from_value.as_str(),
        "{\"\u{e9}\":1,\"\u{1f600}\":2,\"\u{fb01}\":3}"
    );
}

#[test]
fn rfc8785_appendix_b_numbers() {
    let table = [
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"),
        ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ];
    for (bits, expected) in table {
        let value = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
        assert_eq!(format_number(value), expected, "{bits}");
    }
}

#[test]
fn format_number_layout_boundaries() {
    for (value, expected) in [
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (0.5, "0.5"),
        (123.456, "123.456"),
        (1e20, "100000000000000000000"),
        (1.5e20, "150000000000000000000"),
        (1.5e21, "1.5e+21"),
        (-1e30, "-1e+30"),
        (f64::NAN, "NaN"),
        (f64::NEG_INFINITY, "-Infinity"),
    ] {
        assert_eq!(format_number(value), expected, "{value:?}");
    }
}

#[test]
fn equivalent_texts_share_bytes_and_digest() {
    let a =
        CanonicalPayload::from_json_text(r#"{"to":["x@y.z"],"amount":1250,"memo":"hi"}"#).unwrap();
    let b = CanonicalPayload::from_json_text(
        "{\n  \"memo\" : \"h\\u0069\",\n\t\"amount\": 1250, \"to\": [ \"x@y.z\" ]\r\n}",
    )
    .unwrap();
    let c = CanonicalPayload::from_value(&json!({"memo": "hi", "to": ["x@y.z"], "amount": 1250}))
        .unwrap();
    assert_eq!(a.as_bytes(), b.as_bytes());
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a, c);
    assert_eq!(a.digest(), c.digest());
}

#[test]
fn different_meanings_give_different_bytes_and_digests() {
    let base = CanonicalPayload::from_json_text(r#"{"a":{"b":[1,2]},"n":"\u00e9"}"#).unwrap();
    for other in [
        r#"{"a":{"b":[1,3]},"n":"\u00e9"}"#,
        r#"{"a":{"c":[1,2]},"n":"\u00e9"}"#,
        r#"{"a":{"b":[1,2]},"n":"e\u0301"}"#,
        r#"{"a":{"b":[2,1]},"n":"\u00e9"}"#,
    ] {
        let other = CanonicalPayload::from_json_text(other).unwrap();
        assert_ne!(base.as_bytes(), other.as_bytes());
        assert_ne!(base.digest(), other.digest());
    }
    assert!(matches!(
        refusal(r#"{"a":{"b":[1.0,2]},"n":"\u00e9"}"#),
        PayloadError::AmbiguousNumber { .. }
    ));
}

#[test]
fn canonical_text_is_a_fixed_point() {
    for text in ACCEPTED {
        let once = canonical(text);
        assert_eq!(canonical(&once), once, "{text}");
        let from_value = CanonicalPayload::from_value(&serde_json::from_str(&once).unwrap());
        assert_eq!(from_value.unwrap().as_str(), once, "{text}");
        let payload = CanonicalPayload::from_json_text(text).unwrap();
        let value: Value = payload.deserialize_faithful().unwrap();
        assert_eq!(value, payload.to_value(), "{text}");
    }
}

#[test]
fn strings_escape_as_json_stringify() {
    assert_eq!(
        canonical(ACCEPTED[5]),
        "\"\\u0001\\u001f\u{7f}\u{2028}\\b\\f\\n\\r\\t\\\"\\\\/\""
    );
    assert_eq!(canonical(r#""\u00e9\ud83d\ude00""#), "\"\u{e9}\u{1f600}\"");
}

#[test]
fn every_top_level_type_but_null_is_a_payload() {
    for (text, canonical_text) in [
        (r#"{ "b": 1, "a": [null] }"#, r#"{"a":[null],"b":1}"#),
        ("[ 1, null ]", "[1,null]"),
        (r#""text""#, r#""text""#),
        ("12", "12"),
        ("-0.5", "-0.5"),
        ("true", "true"),
        ("false", "false"),
    ] {
        let payload = CanonicalPayload::from_json_text(text).unwrap();
        assert_eq!(payload.as_str(), canonical_text);
        let again = CanonicalPayload::from_value(&payload.to_value()).unwrap();
        assert_eq!(again, payload, "{text}");
    }
    for text in ["null", " null ", "\tnull\n"] {
        assert_eq!(refusal(text), PayloadError::Null, "{text:?}");
    }
    assert_eq!(
        CanonicalPayload::from_value(&Value::Null),
        Err(PayloadError::Null)
    );
    assert_eq!(
        CanonicalPayload::from_serialize(&None::<u8>),
        Err(PayloadError::Null)
    );
    assert_eq!(
        CanonicalPayload::from_serialize(&()),
        Err(PayloadError::Null)
    );
    assert!(PayloadError::Null.to_string().contains("omit the payload"));
}

#[test]
fn the_image_of_no_payload_is_faithful_to_unit_and_null() {
    let none = CanonicalPayload::no_payload();
    none.deserialize_faithful::<()>().unwrap();
    assert_eq!(none.deserialize_faithful::<Value>().unwrap(), Value::Null);
    assert!(none.deserialize_faithful::<Option<u8>>().unwrap().is_none());
    assert!(matches!(
        none.deserialize_faithful::<Vec<u8>>(),
        Err(PayloadError::Deserialize(_))
    ));
}

#[test]
fn oversized_text_is_refused() {
    let filler = |n: usize| format!("\"{}\"", "x".repeat(n - 2));
    assert!(CanonicalPayload::from_json_text(&filler(MAX_PAYLOAD_BYTES)).is_ok());
    assert_eq!(
        refusal(&filler(MAX_PAYLOAD_BYTES + 1)),
        PayloadError::TooLarge {
            limit: MAX_PAYLOAD_BYTES,
            actual: MAX_PAYLOAD_BYTES + 1
        }
    );
}

#[test]
fn oversized_canonical_form_is_refused() {
    // 1e-6 is 4 bytes of input but 8 of canonical output.
    let items = vec!["1e-6"; 9000].join(",");
    let text = format!("[{items}]");
    assert!(text.len() < MAX_PAYLOAD_BYTES);
    assert!(matches!(
        refusal(&text),
        PayloadError::TooLarge { actual, .. } if actual > MAX_PAYLOAD_BYTES
    ));
    let big = Value::String("x".repeat(MAX_PAYLOAD_BYTES));
    assert!(matches!(
        CanonicalPayload::from_value(&big),
        Err(PayloadError::TooLarge { .. })
    ));
}

#[test]
fn depth_limit_is_exact() {
    assert!(CanonicalPayload::from_json_text(&nested(MAX_PAYLOAD_DEPTH)).is_ok());
    assert_eq!(
        refusal(&nested(MAX_PAYLOAD_DEPTH + 1)),
        PayloadError::TooDeep {
            limit: MAX_PAYLOAD_DEPTH,
            path: "/0".repeat(MAX_PAYLOAD_DEPTH),
        }
    );
    let objects = format!("{}1{}", r#"{"k":"#.repeat(33), "}".repeat(33));
    assert!(matches!(refusal(&objects), PayloadError::TooDeep { path, .. } if path.len() == 64));
}

#[test]
fn extreme_nesting_is_too_deep_not_a_crash() {
    // 60 000 brackets (or 32 000 pairs) still fit under the size limit, so the depth rule must catch them.
    assert!(matches!(
        refusal(&"[".repeat(60_000)),
        PayloadError::TooDeep { .. }
    ));
    assert!(matches!(
        refusal(&nested(32_000)),
        PayloadError::TooDeep { .. }
    ));
    // Past the size limit the public constructor refuses on size first; the parser itself
    // must still stop at the depth limit.
    assert!(matches!(
        parse(&nested(100_000)),
        Err(PayloadError::TooDeep { .. })
    ));
    assert!(matches!(
        refusal(&nested(100_000)),
        PayloadError::TooLarge { .. }
    ));

    let mut deep = Value::Null;
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    assert!(matches!(
        CanonicalPayload::from_value(&deep),
        Err(PayloadError::TooDeep { .. })
    ));
    dismantle(deep);
}

#[test]
fn duplicate_keys_are_refused() {
    assert_eq!(
        refusal(r#"{"a":1,"a":1}"#),
        PayloadError::DuplicateKey {
            path: "/a".to_owned(),
            key: "a".to_owned()
        }
    );
    assert_eq!(
        refusal(r#"{"x":[{"b/c":1,"d":2,"b/c":3}]}"#),
        PayloadError::DuplicateKey {
            path: "/x/0/b~1c".to_owned(),
            key: "b/c".to_owned()
        }
    );
    assert!(matches!(
        refusal(r#"{"a":1,"\u0061":2}"#),
        PayloadError::DuplicateKey { key, .. } if key == "a"
    ));
}

#[test]
fn integers_must_be_safe() {
    assert_eq!(
        canonical("[9007199254740991,-9007199254740991]"),
        "[9007199254740991,-9007199254740991]"
    );
    for (text, path) in [
        ("9007199254740992", ""),
        ("[-9007199254740992]", "/0"),
        (r#"{"n":18446744073709551616}"#, "/n"),
        ("[100000000000000000000000]", "/0"),
        ("-9223372036854775809", ""),
    ] {
        let value = text.trim_matches(['[', ']']).trim_start_matches(r#"{"n":"#);
        assert_eq!(
            refusal(text),
            PayloadError::IntegerOutOfRange {
                path: path.to_owned(),
                value: value.trim_end_matches('}').to_owned()
            },
            "{text}"
        );
    }
    let unsafe_value = json!({"n": 9_007_199_254_740_992_u64});
    assert!(matches!(
        CanonicalPayload::from_value(&unsafe_value),
        Err(PayloadError::IntegerOutOfRange { path, .. }) if path == "/n"
    ));
    assert_eq!(canonical("-0"), "0");
}

#[test]
fn integral_floats_are_ambiguous() {
    for text in ["1.0", "1e3", "-0.0", "0.1e1", "1E2", "1e20", "100.000"] {
        assert!(
            matches!(refusal(text), PayloadError::AmbiguousNumber { value, .. } if value == text),
            "{text}"
        );
    }
    assert_eq!(canonical("[1.5,1E30,-2.5e-8]"), "[1.5,1e+30,-2.5e-8]");
    assert!(matches!(
        CanonicalPayload::from_value(&json!({"x": [1.0]})),
        Err(PayloadError::AmbiguousNumber { path, .. }) if path == "/x/0"
    ));
    assert!(CanonicalPayload::from_value(&json!({"x": [2.5, 1e30]})).is_ok());
}

#[test]
fn floats_are_correctly_rounded() {
    // serde_json's default float parsing is one unit in the last place off for these.
    for text in ["1.947700395895162e-169", "1.7599272438714224e-96"] {
        let approximate: f64 = serde_json::from_str(text).unwrap();
        assert_ne!(
            approximate.to_bits(),
            text.parse::<f64>().unwrap().to_bits()
        );
    }
    for text in [
        "1.947700395895162e-169",
        "1.7599272438714224e-96",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "0.30000000000000004",
        "5e-324",
    ] {
        let exact: f64 = text.parse().unwrap();
        let payload = CanonicalPayload::from_json_text(text).unwrap();
        assert_eq!(payload.as_str(), format_number(exact), "{text}");
        assert_eq!(payload.to_value().as_f64(), Some(exact), "{text}");
        assert_eq!(
            payload.deserialize::<f64>().unwrap().to_bits(),
            exact.to_bits()
        );
    }
    assert!(matches!(refusal("1e400"), PayloadError::Syntax(_)));
}

#[test]
fn nul_characters_are_refused() {
    assert_eq!(
        refusal(r#"{"a":["ok","x\u0000y"]}"#),
        PayloadError::NulCharacter {
            path: "/a/1".to_owned()
        }
    );
    assert_eq!(
        refusal(r#"{"a":{"k\u0000":1}}"#),
        PayloadError::NulCharacter {
            path: "/a/k\0".to_owned()
        }
    );
    assert!(matches!(
        CanonicalPayload::from_value(&json!({"k\u{0}": 1})),
        Err(PayloadError::NulCharacter { .. })
    ));
    assert!(matches!(
        CanonicalPayload::from_value(&json!(["\u{0}"])),
        Err(PayloadError::NulCharacter { path }) if path == "/0"
    ));
}

#[test]
fn malformed_text_is_a_syntax_error() {
    for text in [
        r#""\ud800""#,
        r#"["\udc00x"]"#,
        r#"{"a":1} x"#,
        "[1]]",
        "[1,]",
        "01",
        "[1-2]",
        "'a'",
        "NaN",
        "",
        "\u{feff}{}",
        "{\"a\" 1}",
    ] {
        match refusal(text) {
            PayloadError::Syntax(message) => {
                assert_eq!(message, message.to_lowercase(), "{text}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn messages_are_lowercase_and_point_at_the_value() {
    let message = refusal(r#"{"a":[1.0]}"#).to_string();
    assert!(message.contains(" at /a/0"), "{message}");
    assert!(message.contains("integer"), "{message}");
    assert_eq!(message, message.to_lowercase());
    let message = refusal("1.0").to_string();
    assert!(message.contains("at the top level"), "{message}");
    let message = refusal("{\"a\\nb\":1,\"a\\nb\":2}").to_string();
    assert!(!message.contains('\n'), "{message}");
}

struct Twice;

impl Serialize for Twice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("to", "alice")?;
        map.serialize_entry("to", "mallory")?;
        map.end()
    }
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Transfer {
    to: String,
    cents: u64,
}

#[derive(Serialize, Deserialize)]
struct Lossy {
    to: String,
}

#[derive(Serialize, Deserialize)]
struct Padded {
    to: String,
    cents: u64,
    #[serde(default)]
    memo: String,
}

#[derive(Serialize, Deserialize)]
struct Floaty {
    to: String,
    cents: f64,
}

#[test]
fn from_serialize_refuses_duplicate_keys() {
    assert!(matches!(
        CanonicalPayload::from_serialize(&Twice),
        Err(PayloadError::DuplicateKey { path, .. }) if path == "/to"
    ));
    let payload = CanonicalPayload::from_serialize(&Transfer {
        to: "bob".into(),
        cents: 5,
    })
    .unwrap();
    assert_eq!(payload.as_str(), r#"{"cents":5,"to":"bob"}"#);
}

#[test]
fn deserialize_faithful_refuses_lossy_types() {
    let payload = CanonicalPayload::from_json_text(r#"{"to":"bob","cents":1250}"#).unwrap();
    assert_eq!(
        payload.deserialize_faithful::<Transfer>().unwrap(),
        Transfer {
            to: "bob".into(),
            cents: 1250
        }
    );
    assert!(payload.deserialize::<Lossy>().is_ok());
    let unfaithful = |path: &str| PayloadError::Unfaithful {
        path: path.to_owned(),
    };
    assert_eq!(
        payload.deserialize_faithful::<Lossy>().err(),
        Some(unfaithful("/cents"))
    );
    assert_eq!(
        payload.deserialize_faithful::<Padded>().err(),
        Some(unfaithful("/memo"))
    );
    assert_eq!(
        payload.deserialize_faithful::<Floaty>().err(),
        Some(unfaithful("/cents"))
    );
    assert!(matches!(
        payload.deserialize_faithful::<Vec<u8>>(),
        Err(PayloadError::Deserialize(_))
    ));
}

#[test]
fn serialize_embeds_exact_canonical_bytes() {
    #[derive(Serialize)]
    struct Envelope<'a> {
        id: &'a str,
        payload: &'a CanonicalPayload,
    }
    let payload = CanonicalPayload::from_json_text(RFC_SAMPLE).unwrap();
    let text = serde_json::to_string(&Envelope {
        id: "r1",
        payload: &payload,
    })
    .unwrap();
    assert_eq!(text, format!(r#"{{"id":"r1","payload":{payload}}}"#));
    let pretty = serde_json::to_string_pretty(&Envelope {
        id: "r1",
        payload: &payload,
    })
    .unwrap();
    assert!(pretty.contains(payload.as_str()), "{pretty}");
}

#[test]
fn pretty_keeps_canonical_order_and_spelling() {
    let payload = CanonicalPayload::from_json_text(
        r#"{"b":[1,{"z\n":2.50,"y":[]}],"a":{},"\u00e9":"\u2028"}"#,
    )
    .unwrap();
    assert_eq!(
        payload.pretty(),
        "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"y\": [],\n      \"z\\n\": 2.5\n    }\n  ],\n  \"\u{e9}\": \"\u{2028}\"\n}"
    );
    assert_eq!(CanonicalPayload::from_json_text("7").unwrap().pretty(), "7");
}

#[test]
fn digest_text_form_is_strict() {
    let payload = CanonicalPayload::from_json_text("[1]").unwrap();
    let digest = payload.digest();
    let hex = digest.to_hex();
    assert_eq!(hex, blake3::hash(b"[1]").to_hex().as_str());
    assert_eq!(digest.to_string(), hex);
    assert_eq!(format!("{digest:?}"), format!("PayloadDigest({hex})"));
    assert_eq!(hex.parse::<PayloadDigest>(), Ok(digest));
    assert_eq!(digest.as_bytes(), blake3::hash(b"[1]").as_bytes());
    for bad in [
        hex.to_uppercase(),
        hex[1..].to_owned(),
        format!("{hex}0"),
        format!("{}g", &hex[1..]),
        format!(" {}", &hex[1..]),
        String::new(),
    ] {
        assert_eq!(
            bad.parse::<PayloadDigest>(),
            Err(PayloadError::InvalidDigest),
            "{bad}"
        );
    }
    let json = serde_json::to_string(&digest).unwrap();
    assert_eq!(json, format!("\"{hex}\""));
    assert_eq!(
        serde_json::from_str::<PayloadDigest>(&json).unwrap(),
        digest
    );
    assert!(serde_json::from_str::<PayloadDigest>(&json.to_uppercase()).is_err());
}

#[test]
fn debug_and_display_show_canonical_text() {
    let payload = CanonicalPayload::from_json_text(r#"{ "b":1, "a":2 }"#).unwrap();
    assert_eq!(payload.to_string(), r#"{"a":2,"b":1}"#);
    assert_eq!(format!("{payload:?}"), r#"CanonicalPayload({"a":2,"b":1})"#);
}

/// The corpus that tests-features/serde-json-features checks in a build with `serde_json`'s
/// `arbitrary_precision` and `preserve_order`: both builds must agree with it exactly.
const CORPUS: &str = include_str!("corpus.txt");

fn variant(error: &PayloadError) -> String {
    format!("{error:?}")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

#[test]
fn shared_corpus_gives_the_recorded_bytes_and_digests() {
    let mut cases = 0;
    for line in CORPUS
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let (input, expected) = (fields[0], fields[1]);
        let result = CanonicalPayload::from_json_text(input);
        if let Some(kind) = expected.strip_prefix("refused") {
            let error = result.expect_err(input);
            let kind = kind.trim();
            assert!(
                kind.is_empty() || variant(&error) == kind,
                "{input}: {error:?}"
            );
        } else {
            let payload = result.unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(payload.as_str(), expected, "{input}");
            assert_eq!(payload.digest().to_string(), fields[2], "{input}");
            let again = CanonicalPayload::from_value(&payload.to_value()).unwrap();
            assert_eq!(again, payload, "{input}: through a Value");
            let pretty = CanonicalPayload::from_json_text(&payload.pretty()).unwrap();
            assert_eq!(pretty, payload, "{input}: through the pretty form");
            assert_eq!(
                serde_json::to_string(&payload).unwrap(),
                expected,
                "{input}"
            );
        }
        cases += 1;
    }
    assert!(cases >= 45, "only {cases} cases: is the corpus truncated?");
}

/// A member key that `serde_json` uses as a private marker (for `arbitrary_precision` numbers
/// and raw values) is an ordinary key here, in any build: the text decides what is a number.
#[test]
fn serde_json_marker_keys_are_ordinary_keys() {
    for text in [
        r#"{"$serde_json::private::Number":"5"}"#,
        r#"[{"$serde_json::private::Number":"1.5"},1.5]"#,
        r#"{"$serde_json::private::RawValue":"{}"}"#,
    ] {
        let payload = CanonicalPayload::from_json_text(text).unwrap();
        assert_eq!(payload.as_str(), text);
        assert!(matches!(
            payload.to_value(),
            Value::Object(_) | Value::Array(_)
        ));
        // serde_json's own Value does read them as markers; the faithful check must refuse
        // rather than hand over a different document.
        match payload.deserialize_faithful::<Value>() {
            Ok(value) => assert_eq!(value, payload.to_value(), "{text}"),
            Err(error) => assert!(
                matches!(
                    error,
                    PayloadError::Unfaithful { .. } | PayloadError::Deserialize(_)
                ),
                "{text}: {error:?}"
            ),
        }
    }
}

/// tests-features/serde-json-features checks the corpus with both features on; here both must
/// be off, or the two builds would be the same build and prove nothing.
#[test]
fn serde_json_has_neither_preserve_order_nor_arbitrary_precision() {
    let object: Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
    assert_eq!(
        object.to_string(),
        r#"{"a":2,"b":1}"#,
        "preserve_order is enabled"
    );
    let number: Value = serde_json::from_str("1.10").unwrap();
    assert_eq!(number.to_string(), "1.1", "arbitrary_precision is enabled");
}
