//! Failpoints for the crash and fault tests, compiled to nothing without the `failpoints`
//! feature.
//!
//! Every step of the authorization path is a named failpoint (see `docs/reliability.md`),
//! and every filesystem operation also passes `fs::op`, so a test can fail the N-th
//! operation with `fs::op=N*off->return`. Configure them with the `fail` crate
//! (`fail::cfg`, or `FAILPOINTS=name=action` read by `fail::FailScenario::setup`):
//! `return(kill)` sends SIGKILL to the process at that point, a crash with nothing flushed
//! or unwound; any other `return` makes the operation fail with an I/O error.

/// Hits the named failpoint in a function returning `Result<_, Error>`.
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        {
            if let Some(error) = ::fail::eval($name, |arg| {
                $crate::faults::triggered($name, arg.as_deref())
            }) {
                return Err(error.into());
            }
        }
    };
}
pub(crate) use failpoint;

/// What an activated failpoint does.
#[cfg(feature = "failpoints")]
pub(crate) fn triggered(name: &'static str, arg: Option<&str>) -> crate::error::Error {
    if arg == Some("kill") {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        // SIGKILL cannot be caught; wait for it to land.
        loop {
            std::thread::park();
        }
    }
    crate::error::Error::io(
        "failpoint",
        name,
        std::io::Error::other(format!("injected fault at {name}")),
    )
}
