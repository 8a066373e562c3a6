//! Which steps of the store a run calls, for the conformance suite only (feature
//! `store-trace`, off by default): the suite fails if a backend's run never calls one of
//! [`STEPS`], so that no method of the store is left unexercised on any backend.
//!
//! With the feature, every store is opened wrapped in a `Traced` store, which forwards each
//! call and, when the environment variable [`ENV`] names a file, appends a line `<backend>
//! <step>` to it (`dir` or `postgres`; the first call of each step per process). Processes
//! a test starts inherit the variable, so their calls count too. Not a stable API.

use std::collections::HashSet;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, PoisonError};

use super::{
    About, Caps, Chain, Entry, Filed, Guard, Loaded, Location, Marks, Recovery, Scope, Shelf,
    Spent, Store,
};
use crate::audit::{AuditRecord, AuditSummary, Reanchored};
use crate::change::ChangeSink;
use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::time::Timestamp;

/// The environment variable naming the file calls are noted in.
pub const ENV: &str = "APPROVAL_GATE_STORE_TRACE";

/// Every method of the store's two traits (`Store`, then `Chain`), by name.
pub const STEPS: [&str; 20] = [
    "about",
    "load",
    "concerns_record_only",
    "marks",
    "scan",
    "lock",
    "file",
    "decide",
    "spend",
    "refuse",
    "begin_execution",
    "finish_execution",
    "recover",
    "archive",
    "stray_entries",
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
    fn note(&self, step: &'static str) {
        static SEEN: OnceLock<Mutex<HashSet<(&'static str, &'static str)>>> = OnceLock::new();
        static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
        let Some(path) = PATH.get_or_init(|| std::env::var_os(ENV).map(PathBuf::from)) else {
            return;
        };
        let backend = match self.0.about().location {
            Location::Dir(_) => "dir",
            Location::Postgres(_) => "postgres",
        };
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
        self.note("load");
        self.0.load(id, place)
    }
    fn concerns_record_only(&self, id: RequestId, error: &Error) -> bool {
        self.note("concerns_record_only");
        self.0.concerns_record_only(id, error)
    }
    fn marks(&self, id: RequestId) -> Result<Marks, Error> {
        self.note("marks");
        self.0.marks(id)
    }
    fn scan(&self, scope: Scope) -> Result<Vec<Loaded>, Error> {
        self.note("scan");
        self.0.scan(scope)
    }
    fn lock(&self, id: RequestId) -> Result<Guard, Error> {
        self.note("lock");
        self.0.lock(id)
    }
    fn file(&self, request: &Request, caps: Caps, entry: &Entry<'_>) -> Result<Filed, Error> {
        self.note("file");
        self.0.file(request, caps, entry)
    }
    fn decide(
        &self,
        request: &Request,
        operation: &'static str,
        entry: &Entry<'_>,
    ) -> Result<Request, Error> {
        self.note("decide");
        self.0.decide(request, operation, entry)
    }
    fn spend(&self, id: RequestId, entry: &Entry<'_>) -> Result<Spent, Error> {
        self.note("spend");
        self.0.spend(id, entry)
    }
    fn refuse(&self, id: RequestId, entry: &Entry<'_>) -> Result<u64, Error> {
        self.note("refuse");
        self.0.refuse(id, entry)
    }
    fn begin_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<Guard, Error> {
        self.note("begin_execution");
        self.0.begin_execution(id, entry)
    }
    fn finish_execution(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.note("finish_execution");
        self.0.finish_execution(id, entry)
    }
    fn recover(&self, now: Timestamp) -> Result<Recovery, Error> {
        self.note("recover");
        self.0.recover(now)
    }
    fn archive(&self, id: RequestId, entry: &Entry<'_>) -> Result<(), Error> {
        self.note("archive");
        self.0.archive(id, entry)
    }
    fn stray_entries(&self) -> Result<Vec<PathBuf>, Error> {
        self.note("stray_entries");
        self.0.stray_entries()
    }
    fn watch(&self, sink: ChangeSink) -> Result<Guard, String> {
        self.note("watch");
        self.0.watch(sink)
    }
}

impl Chain for Traced {
    fn check_appendable(&self) -> Result<(), Error> {
        self.note("check_appendable");
        self.0.check_appendable()
    }
    fn verify_records(&self) -> Result<(AuditSummary, Vec<AuditRecord>), Error> {
        self.note("verify_records");
        self.0.verify_records()
    }
    fn records(&self) -> Result<Vec<AuditRecord>, Error> {
        self.note("records");
        self.0.records()
    }
    fn reanchor(&self, ts: Timestamp, by: &str) -> Result<Reanchored, Error> {
        self.note("reanchor");
        self.0.reanchor(ts, by)
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
            assert!(
                wrapper.contains(&format!("self.note(\"{step}\");\n        self.0.{step}(")),
                "the traced store notes {step} and forwards it"
            );
        }
    }
}
