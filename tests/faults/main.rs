//! Fault tests of the directory store: an I/O error at every filesystem operation of
//! consume, execute and the decisions, and the windows between its steps. After each run
//! the store is reopened (which runs recovery) and the invariants are checked. (SIGKILL at
//! every failpoint is crash recovery, in the conformance suite every backend runs.)

mod exec_marker;
mod nth_op;
mod windows;
