//! Every store is opened wrapped in a `Traced` store, which forwards each call inside a
//! `tracing` span (`store`, at TRACE: the step, the request, the backend) and ends it with
//! an event naming its outcome (`ok`, or the error's code), so that an application sees the
//! store's steps in its own traces.
//!
//! For the conformance suite (feature `store-trace`, off by default) it also notes which
//! steps a run calls: the suite fails if a backend's run never calls one of [`STEPS`], so
//! that no method of the store is left unexercised on any backend. When the environment
//! variable [`ENV`] names a file, each call appends a line `<backend> <step>` to it (`dir`
//! or `postgres`; the first call of each step per process). Processes a test starts inherit
//! the variable, so their calls count too. Not a stable API.

#[cfg(feature = "store-trace")]
use std::collections::HashSet;
use std::fmt;
#[cfg(feature = "store-trace")]
use std::io::Write;
use std::path::PathBuf;
#[cfg(feature = "store-trace")]
use std::sync::{Mutex, OnceLock, PoisonError};

use super::allowance::{Cosigned, Kept, Revoked, Under};
use super::{
    About, Caps, Chain, Entry, Filed, Guard, Loaded, MarkedAllowed, Marks, Recovery, Scope, Shelf,
    Spent, Store,
};
use crate::allowance::{AllowanceSignature, SignedAllowance};
use crate::audit::{AuditRecord, AuditSummary, Reanchored};
use crate::change::ChangeSink;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

/// The environment variable naming the file calls are noted in.
#[cfg(feature = "store-trace")]
pub const ENV: &str = "APPROVAL_GATE_STORE_TRACE";

/// Every method of the store's two traits (`Store`, then `Chain`), by name.
#[cfg(any(test, feature = "store-trace"))]
#[cfg_attr(not(feature = "store-trace"), allow(unreachable_pub))]
pub const STEPS: [&str; 33] = [
    "about",
    "load",
    "concerns_record_only",
    "marks",
    "load_marked",
    "load_marked_allowed",
    "scan",
    "lock",
    "lock_counters",
    "file",
    "decide",
    "spend",
    "spend_under",
    "refuse",
    "begin_execution",
    "defer_durability",
    "flush",
    "finish_execution",
    "recover",
    "archive",
    "grant_allowance",
    "cosign_allowance",
    "revoke_allowance",
    "allowance",
    "allowances",
    "stray_entries",
    "notices",
    "dead_letters",
    "watch",
    "check_appendable",
    "verify_records",
    "records",
    "reanchor",
];

/// A store whose every call is noted.
pub(crate) struct Traced(pub(crate) Box<dyn Store>);

impl fmt::Debug for Traced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Traced {
    /// The backend's name in traces and notes.
    fn backend(&self) -> &'static str {
        self.0.about().backend
    }

    /// Runs one step inside its span, and says how it ended.
    fn step<R>(
        &self,
        step: &'static str,
        id: Option<RequestId>,
        run: impl FnOnce() -> Result<R, Error>,
    ) -> Result<R, Error> {
        self.note(step);
        let span = tracing::trace_span!(
            "store",
            step,
            store = self.backend(),
            id = id.as_ref().map(RequestId::as_str)
        );
        let _entered = span.enter();
        let result = run();
        match &result {
            Ok(_) => tracing::trace!(outcome = "ok"),
            Err(error) => tracing::trace!(outcome = error.code().as_str()),
        }
        result
    }

    #[cfg(not(feature = "store-trace"))]
    #[allow(clippy::unused_self)]
    fn note(&self, _step: &'static str) {}

    #[cfg(feature = "store-trace")]
    fn note(&self, step: &'static str) {
        static SEEN: OnceLock<Mutex<HashSet<(&'static str, &'static str)>>> = OnceLock::new();
        static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
        let Some(path) = PATH.get_or_init(|| std::env::var_os(ENV).map(PathBuf::from)) else {
            return;
        };
        let backend = self.backend();
        let seen = SEEN.get_or_init(Mutex::default);
        let first = seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((backend, step));
        if first {
            // One short append per line: lines from several processes never interleave.
            let noted = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(format!("{backend} {step}\n").as_bytes()));
            if let Err(error) = noted {
                panic!(
                    "{ENV}: cannot note a store call in {}: {error}",
                    path.display()
                );
            }
        }
    }
}

impl Store for Traced {
    fn about(&self) -> &About {
        self.note("about");
        self.0.about()
    }
    fn load(&self, id: RequestId, place: Shelf) -> Result<Option<Request>, Error> {
        self.step("load", Some(id), || self.0.load(id, place))
    }
    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool {
        self.note("concerns_record_only");
        self.0.concerns_record_only(id, error)
    }
    fn marks(&self, id: RequestId) -> Result<Marks, Error> {
        self.step("marks", Some(id), || self.0.marks(id))
    }
    fn load_marked(&self, id: RequestId) -> Result<(Option<Request>, Marks), Error> {
        self.step("load_marked", Some(id), || self.0.load_marked(id))
    }
    fn load_marked_allowed(&self, id: RequestId) -> Result<MarkedAllowed, Error> {
        self.step("load_marked_allowed", Some(id), || {
            self.0.load_marked_allowed(id)
        })
    }
    fn scan(&self, scope: Scope) -> Result<Vec<Loaded>, Error> {
        self.step("scan", None, || self.0.scan(scope))
    }
    fn lock(&self, id: RequestId) -> Result<Guard, Error> {
        self.step("lock", Some(id), || self.0.lock(id))
    }
    fn lock_counters(&self) -> Result<Guard, Error> {
        self.step("lock_counters", None, || self.0.lock_counters())
    }
    fn file(&self, request: &Request, caps: Caps, entry: &Entry<'_>) -> Result<Filed, Error> {
        self.step("file", Some(request.id()), || {
            self.0.file(request, caps, entry)
        })
    }
    fn decide(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<Request, Error> {
        self.step("decide", Some(request.id()), || {
            self.0.decide(request, operation, entry)
        })
    }
    fn spend(&self, id: RequestId, entry: &Entry<'_>) -> Result<Spent, Error> {
        self.step("spend", Some(id), || self.0.spend(id, entry))
    }
    fn spend_under(
        &self,
        id: RequestId,
        under: &Under<'_>,
        entry: &Entry<'_>,
    ) -> Result<Spent, Error> {
        self.step("spend_under", Some(id), || {
            self.0.spend_under(id, under, entry)
        })
    }
    fn refuse(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error> {
        self.step("refuse", Some(id), || self.0.refuse(id, entry))
    }
    fn defer_durability(&self, on: bool) {
        self.note("defer_durability");
        self.0.defer_durability(on);
    }
    fn flush(&self) -> Result<(), Error> {
        self.step("flush", None, || self.0.flush())
    }
    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error> {
        self.step("begin_execution", Some(id), || {
            self.0.begin_execution(id, entry)
        })
    }
    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.step("finish_execution", Some(id), || {
            self.0.finish_execution(id, entry)
        })
    }
    fn recover(&self, now: Timestamp) -> Result<Recovery, Error> {
        self.step("recover", None, || self.0.recover(now))
    }
    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.step("archive", Some(id), || self.0.archive(id, entry))
    }
    fn notices(&self) -> Result<Box<dyn crate::notices::Ledger>, Error> {
        self.step("notices", None, || self.0.notices())
    }
    fn dead_letters(&self) -> Result<Vec<crate::notices::DeadLetter>, Error> {
        self.step("dead_letters", None, || self.0.dead_letters())
    }
    fn grant_allowance(&self, signed: &SignedAllowance, entry: &Entry<'_>) -> Result<bool, Error> {
        self.step("grant_allowance", Some(signed.allowance.id()), || {
            self.0.grant_allowance(signed, entry)
        })
    }
    fn cosign_allowance(
        &self,
        id: RequestId,
        signature: &AllowanceSignature,
        entry: &Entry<'_>,
    ) -> Result<Cosigned, Error> {
        self.step("cosign_allowance", Some(id), || {
            self.0.cosign_allowance(id, signature, entry)
        })
    }
    fn revoke_allowance(&self, id: RequestId, entry: &Entry<'_>) -> Result<Revoked, Error> {
        self.step("revoke_allowance", Some(id), || {
            self.0.revoke_allowance(id, entry)
        })
    }
    fn allowance(&self, id: RequestId) -> Result<Option<Kept>, Error> {
        self.step("allowance", Some(id), || self.0.allowance(id))
    }
    fn allowances(&self) -> Result<Vec<Kept>, Error> {
        self.step("allowances", None, || self.0.allowances())
    }
    fn stray_entries(&self) -> Result<Vec<PathBuf>, Error> {
        self.step("stray_entries", None, || self.0.stray_entries())
    }
    fn watch(&self, sink: ChangeSink) -> Result<Guard, String> {
        self.note("watch");
        self.0.watch(sink)
    }
}

impl Chain for Traced {
    fn check_appendable(&self) -> Result<(), Error> {
        self.step("check_appendable", None, || self.0.check_appendable())
    }
    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        self.step("verify_records", None, || self.0.verify_records())
    }
    fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.step("records", None, || self.0.records())
    }
    fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error> {
        self.step("reanchor", None, || self.0.reanchor(ts, by))
    }
}

#[cfg(test)]
mod tests {
    use super::STEPS;

    /// The methods a trait declares in `source`, in order.
    fn methods(source: &str, header: &str) -> Vec<String> {
        let body = &source[source.find(header).expect("the trait")..];
        let body = &body[..body.find("\n}\n").expect("its end")];
        body.lines()
            .filter_map(|line| line.trim_start().strip_prefix("fn "))
            .map(|rest| rest[..rest.find(['(', '<']).unwrap_or(rest.len())].to_owned())
            .collect()
    }

    #[test]
    fn the_steps_are_the_traits_methods_and_each_is_noted() {
        let traits = include_str!("mod.rs");
        let mut declared = methods(traits, "pub(crate) trait Store");
        declared.extend(methods(traits, "pub(crate) trait Chain"));
        assert_eq!(declared, STEPS, "STEPS lists the traits' methods in order");
        let wrapper = include_str!("traced.rs");
        for step in STEPS {
            let noted =
                wrapper.contains(&format!("self.note(\"{step}\");\n        self.0.{step}("));
            let stepped = wrapper
                .find(&format!("self.step(\"{step}\", "))
                .and_then(|at| wrapper[at..].find("self.0.").map(|call| at + call))
                .is_some_and(|call| wrapper[call..].starts_with(&format!("self.0.{step}(")));
            assert!(
                noted || stepped,
                "the traced store notes {step} and forwards it"
            );
        }
    }
}
