//! An independent oracle for canonical payloads: on every input we accept, our canonical bytes
//! equal what serde_json_canonicalizer, a separate RFC 8785 implementation, makes of the same
//! text (its own parse, sort, escaping and ECMAScript number formatting) and of our parsed value.
//!
//! Where the two may differ we refuse, and then there is nothing to compare: duplicate keys
//! (it keeps the last), integers beyond ±(2^53 − 1) (it prints every digit), floats with an
//! integral value such as `1.0` (it prints `1`), NUL characters, deeper nesting or larger
//! payloads than our limits.
#![no_main]

use approval_gate::CanonicalPayload;
use libfuzzer_sys::fuzz_target;

/// serde_json's `Value` reads keys with this prefix as its own markers (raw JSON, and numbers
/// under `arbitrary_precision`), so through it the oracle would see another document. We keep
/// them as ordinary keys (a unit test and the corpus check that).
const MARKER: &str = "$serde_json::private::";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = match CanonicalPayload::from_json_text(text) {
        Ok(ours) => ours,
        // A refusal is fine, unless it is our value scanner disagreeing with serde_json's
        // parser: that would refuse valid payloads, and nothing else here would notice.
        Err(error) => {
            assert!(!error.to_string().contains("out of step"), "{error}");
            return;
        }
    };
    if ours.as_str().contains(MARKER) {
        return;
    }
    let theirs = serde_json_canonicalizer::pipe(text).expect("the oracle accepts what we accept");
    assert_eq!(
        ours.as_str(),
        theirs,
        "canonical text differs from the oracle's for the input"
    );
    let of_ours = serde_json_canonicalizer::to_string(&ours.to_value())
        .expect("the oracle serializes our value");
    assert_eq!(
        ours.as_str(),
        of_ours,
        "canonical text differs from the oracle's for our value"
    );
});
