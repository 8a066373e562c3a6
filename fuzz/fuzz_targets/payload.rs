//! Payload parsing and canonicalization: never panics; whatever is accepted canonicalizes to
//! text that is itself accepted and canonicalizes to the same bytes (idempotence), with the
//! same digest, and survives a round trip through `serde_json::Value`.
#![no_main]

use approval_gate::CanonicalPayload;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(payload) = CanonicalPayload::from_json_text(text) else { return };
    let again = CanonicalPayload::from_json_text(payload.as_str())
        .expect("canonical text must be accepted");
    assert_eq!(again.as_str(), payload.as_str(), "canonicalization is idempotent");
    assert_eq!(again.digest(), payload.digest());
    let via_value = CanonicalPayload::from_value(&payload.to_value())
        .expect("the canonical value must be accepted");
    assert_eq!(via_value.as_str(), payload.as_str());
    let pretty = CanonicalPayload::from_json_text(&payload.pretty()).expect("pretty parses");
    assert_eq!(pretty.as_str(), payload.as_str(), "pretty form means the same payload");
});
