//! Request files: arbitrary bytes never panic the parser, and whatever parses re-serializes
//! to something that parses back to the same request.
#![no_main]

use approval_gate::Request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<Request>(data) else { return };
    let bytes = serde_json::to_vec(&request).expect("a parsed request serializes");
    let again: Request = serde_json::from_slice(&bytes).expect("and parses back");
    assert_eq!(again, request);
});
