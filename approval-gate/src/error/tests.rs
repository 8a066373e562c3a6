//! Unit tests of the error table.

use super::*;

#[test]
fn every_code_has_one_stable_snake_case_name_that_serde_agrees_with() {
    let mut seen = std::collections::HashSet::new();
    for code in ErrorCode::ALL {
        let name = code.as_str();
        assert!(seen.insert(name), "{name} twice");
        assert!(
            name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{name}"
        );
        // The name is the variant's own, in snake_case: each is written once, in the table,
        // and a typo there would otherwise go unnoticed.
        assert_eq!(name, snake_case(&format!("{code:?}")), "{code:?}");
        assert_eq!(code.to_string(), name);
        let json = serde_json::to_value(code).unwrap();
        assert_eq!(json, serde_json::Value::from(name));
        assert_eq!(serde_json::from_value::<ErrorCode>(json).unwrap(), *code);
    }
    assert_eq!(seen.len(), 43);
}

fn snake_case(camel: &str) -> String {
    let mut snake = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() && !snake.is_empty() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}

#[test]
fn a_refusal_names_its_request_and_where_it_stands() {
    let id: RequestId = "a1b2c3d4e5f6".parse().unwrap();
    let mismatch = Error::ActionMismatch(id);
    assert_eq!(mismatch.code(), ErrorCode::ActionMismatch);
    assert_eq!(mismatch.request_id(), Some(id));
    assert_eq!(mismatch.status(), Some(EffectiveStatus::ApprovedUnconsumed));
    let spent = Error::AlreadyConsumed(id);
    assert_eq!(spent.status(), Some(EffectiveStatus::Consumed));
    let lost = Error::NotFound(id);
    assert_eq!((lost.request_id(), lost.status()), (Some(id), None));
    assert_eq!(Error::NoStateDir.request_id(), None);
    // Each error's code is the code of its own variant, whatever the variant's shape.
    for error in [
        mismatch,
        lost,
        Error::NoStateDir,
        Error::Random("gone".into()),
    ] {
        assert!(format!("{error:?}").starts_with(&format!("{:?}", error.code())));
    }
}

#[test]
fn every_code_has_a_class_and_a_family_and_a_family_never_mixes_classes() {
    let mut class_of = std::collections::HashMap::new();
    for code in ErrorCode::ALL {
        let (class, family) = (code.class(), code.family());
        assert!(ErrorClass::ALL.contains(&class), "{code}");
        assert!(ErrorFamily::ALL.contains(&family), "{code}");
        // A front end may answer by family alone (exec's codes, HTTP statuses) or by class
        // alone (the CLI's exit code): the two must never disagree.
        let first = *class_of.entry(family).or_insert(class);
        assert_eq!(
            first, class,
            "{code} is {class} in family {family}, which is {first}"
        );
    }
    // Every family and every class is some code's: none is left for a front end to guess.
    assert_eq!(class_of.len(), ErrorFamily::ALL.len());
    for class in ErrorClass::ALL {
        assert!(class_of.values().any(|c| c == class), "{class}");
    }
}

#[test]
fn class_and_family_names_are_stable_and_serde_agrees() {
    let names = |all: Vec<(String, serde_json::Value)>| {
        let mut seen = std::collections::HashSet::new();
        for (name, json) in all {
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert_eq!(json, serde_json::Value::from(name.as_str()));
            assert!(seen.insert(name));
        }
        seen.len()
    };
    let classes = ErrorClass::ALL
        .iter()
        .map(|c| (c.to_string(), serde_json::to_value(c).unwrap()));
    assert_eq!(names(classes.collect()), 4);
    let families = ErrorFamily::ALL
        .iter()
        .map(|f| (f.to_string(), serde_json::to_value(f).unwrap()));
    assert_eq!(names(families.collect()), 17);
}

#[test]
fn only_incomplete_codes_and_a_spent_expiry_took_effect() {
    let id: RequestId = "a1b2c3d4e5f6".parse().unwrap();
    let at = Timestamp::from_unix_millis(0);
    let inner = || Box::new(Error::NoStateDir);
    let effects = [
        Error::DurabilityUnknown {
            id,
            operation: "deny",
            source: inner(),
        },
        Error::NotRecorded {
            id,
            operation: "deny",
            source: inner(),
        },
        Error::ExpiredDuringConsume { id, expired_at: at },
    ];
    for error in &effects {
        assert!(error.took_effect());
    }
    // The class says what a front end must do: the incomplete ones are checked before acting
    // again; an approval that expired while being consumed is a refusal (it is spent).
    assert_eq!(effects[0].code().class(), ErrorClass::Incomplete);
    assert_eq!(effects[1].code().class(), ErrorClass::Incomplete);
    assert_eq!(effects[2].code().class(), ErrorClass::Refused);
    let incomplete: Vec<_> = ErrorCode::ALL
        .iter()
        .filter(|c| c.class() == ErrorClass::Incomplete)
        .collect();
    assert_eq!(
        incomplete,
        [&ErrorCode::DurabilityUnknown, &ErrorCode::NotRecorded]
    );
}
