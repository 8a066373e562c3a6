//! The display escaper: whatever an agent writes, the escaped form holds no control or
//! invisible character, and unescaping gives back exactly the original text. The JSON form
//! of a payload is still JSON meaning the same payload.
#![no_main]

use approval_gate::CanonicalPayload;
use approval_gate_mcp::display::{escape, json_safe, needs_escape, unescape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let shown = escape(text);
    assert!(!shown.chars().any(needs_escape), "raw character left in {shown:?}");
    assert_eq!(unescape(&shown).expect("escaped text unescapes"), text);
    if let Ok(payload) = CanonicalPayload::from_json_text(text) {
        let safe = json_safe(payload.as_str());
        assert!(!safe.chars().any(needs_escape));
        let back = CanonicalPayload::from_json_text(&safe).expect("still JSON");
        assert_eq!(back.as_str(), payload.as_str());
    }
});
