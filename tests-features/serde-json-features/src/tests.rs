use approval_gate::{Binding, CanonicalPayload, Decision, Error, Gate, NewRequest, PayloadError, Grant};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The corpus the library's unit tests check in the normal build.
const CORPUS: &str = include_str!("../../../approval-gate/src/payload/corpus.txt");

/// Keys `serde_json::Value` reads as its own markers rather than as keys.
const MARKER: &str = "$serde_json::private::";

fn variant(error: &PayloadError) -> String {
    format!("{error:?}")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

/// Without both features this crate would prove nothing.
#[test]
fn serde_json_features_are_on() {
    let number: Value = serde_json::from_str("1.10").unwrap();
    assert_eq!(number.to_string(), "1.10", "arbitrary_precision is off");
    let object: Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
    assert_eq!(
        object.to_string(),
        r#"{"b":1,"a":2}"#,
        "preserve_order is off"
    );
}

#[test]
fn corpus_gives_the_bytes_and_digests_of_the_normal_build() {
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
            let embedded = serde_json::to_string(&payload).unwrap();
            assert_eq!(embedded, expected, "{input}: serialized");
            match payload.deserialize_faithful::<Value>() {
                Ok(value) => assert_eq!(CanonicalPayload::from_value(&value).unwrap(), payload),
                // serde_json's own Value reads marker keys as a number or raw JSON (or fails):
                // the result must be a refusal, never a different document handed over.
                Err(PayloadError::Unfaithful { .. } | PayloadError::Deserialize(_))
                    if expected.contains(MARKER) => {}
                Err(e) => panic!("{input}: {e}"),
            }
        }
        cases += 1;
    }
    assert!(cases >= 45, "only {cases} cases: is the corpus truncated?");
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Payment {
    fee: f64,
    amount_cents: u64,
    memo: String,
}

/// The case from the issue, through every constructor: typed, as text and as a `Value`.
#[test]
fn the_issue_example_keeps_its_bytes() {
    let expected = r#"{"amount_cents":100,"fee":0.5,"memo":"x"}"#;
    let typed = Payment {
        fee: 0.5,
        amount_cents: 100,
        memo: "x".into(),
    };
    let from_typed = CanonicalPayload::from_serialize(&typed).unwrap();
    assert_eq!(from_typed.as_str(), expected);
    let text = r#"{"fee":0.5,"amount_cents":100,"memo":"x"}"#;
    assert_eq!(CanonicalPayload::from_json_text(text).unwrap(), from_typed);
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(CanonicalPayload::from_value(&value).unwrap(), from_typed);
    assert_eq!(from_typed.deserialize_faithful::<Payment>().unwrap(), typed);
}

/// Numbers a `Value` holds as arbitrary-precision text are judged by their value, as in the
/// normal build, whatever spelling they came with.
#[test]
fn arbitrary_precision_values_follow_the_number_rules() {
    let canonical = |text: &str| {
        let value: Value = serde_json::from_str(text).unwrap();
        CanonicalPayload::from_value(&value).map(|p| p.as_str().to_owned())
    };
    assert_eq!(
        canonical("[4.50, 1E30, 2e-3]").unwrap(),
        "[4.5,1e+30,0.002]"
    );
    assert_eq!(canonical("9007199254740991").unwrap(), "9007199254740991");
    for (text, kind) in [
        ("1.0", "AmbiguousNumber"),
        ("1e3", "AmbiguousNumber"),
        ("18446744073709551616", "AmbiguousNumber"),
        ("9007199254740992", "IntegerOutOfRange"),
        ("1e400", "NumberOutOfRange"),
    ] {
        let error = canonical(text).expect_err(text);
        assert_eq!(variant(&error), kind, "{text}: {error}");
    }
}

/// A payload goes through a store (request file, audit log, consume) unchanged.
#[test]
fn a_payload_survives_a_request_life_in_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::open(dir.path().join("approvals")).unwrap();
    let payment = Payment {
        fee: 0.5,
        amount_cents: 100,
        memo: "invoice 1042".into(),
    };
    let payload = CanonicalPayload::from_serialize(&payment).unwrap();
    let ask = NewRequest::new("pay 1.00 with a fee of 0.5", "the invoice is due")
        .operation("pay")
        .payload(payload.clone());
    let id = gate.request_approval(ask).unwrap().request.id();
    let stored = gate.status(id).unwrap();
    assert_eq!(stored.request().payload(), Some(&payload));
    assert_eq!(stored.request().payload_digest(), Some(payload.digest()));
    gate.approve(id, &Decision::by("alice")).unwrap();
    let binding = Binding::new("pay 1.00 with a fee of 0.5")
        .operation("pay")
        .payload_of(&payment)
        .unwrap();
    let paid = gate
        .execute_approved(id, &binding, |run: &Grant<Payment>| {
            Ok::<_, Error>(run.payload().fee)
        })
        .unwrap();
    assert_eq!(paid.to_bits(), 0.5_f64.to_bits());
    gate.verify_audit().unwrap();
}
