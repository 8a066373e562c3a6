//! Audit lines: arbitrary bytes never panic the chain parser or the check of what the lines
//! say; a log it accepts has consecutive sequence numbers from 1, and the check accepts no
//! more than the parser.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(records) = approval_gate::__fuzz::parse_audit_log(data) {
        for (i, record) in records.iter().enumerate() {
            assert_eq!(record.seq, i as u64 + 1);
        }
    }
    if let Ok(records) = approval_gate::__fuzz::check_audit_log(data) {
        assert!(approval_gate::__fuzz::parse_audit_log(data).is_ok_and(|all| all == records));
    }
});
