//! The display escaper: whatever an agent writes, the escaped form holds no control or
//! invisible character, and unescaping gives back exactly the original text. The JSON form
//! of a payload is still JSON meaning the same payload. Look-alike letters are found at
//! real characters, and the warnings naming them are safe to print.
#![no_main]

use approval_gate::CanonicalPayload;
use approval_gate_cli::term::display::{
    escape, json_safe, lookalike_warning, lookalikes, needs_escape, payload_lookalike_warnings,
    unescape,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let shown = escape(text);
    assert!(!shown.chars().any(needs_escape), "raw character left in {shown:?}");
    assert_eq!(unescape(&shown).expect("escaped text unescapes"), text);
    // Every look-alike is a character of the text, in order, and what is flagged is warned of.
    let found = lookalikes(text);
    assert!(found.windows(2).all(|w| w[0].offset < w[1].offset));
    for lookalike in &found {
        assert_eq!(text[lookalike.offset..].chars().next(), Some(lookalike.character));
    }
    let warning = lookalike_warning("field", text);
    assert_eq!(warning.is_some(), !found.is_empty());
    if let Some(warning) = warning {
        let line = warning.to_string();
        assert!(!line.chars().any(needs_escape), "raw character in {line:?}");
    }
    if let Ok(payload) = CanonicalPayload::from_json_text(text) {
        let safe = json_safe(payload.as_str());
        assert!(!safe.chars().any(needs_escape));
        let back = CanonicalPayload::from_json_text(&safe).expect("still JSON");
        assert_eq!(back.as_str(), payload.as_str());
        for warning in payload_lookalike_warnings(&payload) {
            let line = warning.to_string();
            assert!(!line.chars().any(needs_escape), "raw character in {line:?}");
        }
    }
});
