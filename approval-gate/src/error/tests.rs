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
    assert_eq!(seen.len(), 40);
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
