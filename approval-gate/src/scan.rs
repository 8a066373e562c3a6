//! What a scan of the store finds: the requests it could read, and the records it could not,
//! which are set aside and named rather than stopping the scan.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::error::Error;
use crate::id::RequestId;
use crate::request::Request;
use crate::store::Store;

/// What a scan of the store found: the requests it could read, and the records it could not.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) requests: Vec<Request>,
    pub(crate) unreadable: Vec<UnreadableRecord>,
}

impl Scan {
    /// What reading the record of `id` gave, if the record could be read; a record that
    /// cannot (an error about that record alone) is set aside as unreadable and gives `None`;
    /// any other error ends the scan.
    pub(crate) fn readable<T>(
        &mut self,
        store: &dyn Store,
        id: RequestId,
        result: Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(error) if store.concerns_record_only(id, &error) => {
                let problem = match error {
                    Error::Unreadable { problem, .. } => problem,
                    other => other.to_string(),
                };
                self.unreadable.push(UnreadableRecord::new(id, problem));
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }
}

/// A record of the live store that cannot be read: damaged, truncated, of an unknown format
/// version, or failing its own consistency checks.
///
/// Every operation on its id refuses with [`Error::Unreadable`]; listings show it so that a
/// human notices, and nothing else is held up by it. In JSON it is
/// `{"id": ..., "unreadable": true, "problem": ..., "authorizesExecution": false}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableRecord {
    id: RequestId,
    problem: String,
}

impl UnreadableRecord {
    pub(crate) fn new(id: RequestId, problem: String) -> Self {
        Self { id, problem }
    }

    /// The id whose record cannot be read.
    #[must_use]
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// What is wrong with the record, in one line.
    #[must_use]
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl Serialize for UnreadableRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("UnreadableRecord", 4)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("unreadable", &true)?;
        out.serialize_field("problem", &self.problem)?;
        out.serialize_field("authorizesExecution", &false)?;
        out.end()
    }
}
