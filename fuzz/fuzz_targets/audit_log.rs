//! Audit lines: arbitrary bytes never panic the chain parser; a log it accepts has
//! consecutive sequence numbers from 1.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(records) = approval_gate::__fuzz::parse_audit_log(data) {
        for (i, record) in records.iter().enumerate() {
            assert_eq!(record.seq, i as u64 + 1);
        }
    }
});
