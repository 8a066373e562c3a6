//! The conformance suite, run against every backend this build has: the model-based test,
//! the races, every refusal, the audit trail and crash recovery (`tests/src/suite`). A
//! backend plugs in with one line.

approval_gate_tests::conformance!(directory, approval_gate_tests::backend::Directory);
approval_gate_tests::conformance!(postgres, approval_gate_tests::backend::Postgres);
