//! Crash and fault tests: SIGKILL at every failpoint of the authorization path, and an I/O
//! error at every filesystem operation of consume, execute and the decisions. After each
//! run the store is reopened (which runs recovery) and the invariants are checked.

mod crash;
mod exec_marker;
mod invariants;
mod nth_op;
mod windows;
