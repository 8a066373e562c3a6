//! Building errors inside the crate: from an invalid id, an I/O failure, and a failure after
//! an operation took effect.

use std::io;
use std::path::PathBuf;

use super::Error;
use crate::id::{InvalidId, RequestId};

impl From<InvalidId> for Error {
    fn from(invalid: InvalidId) -> Self {
        Self::InvalidId {
            id: invalid.into_text(),
        }
    }
}

impl Error {
    /// Builds an [`Error::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Wraps `self`, a failure after `operation` took effect on `id`.
    pub(crate) fn after_effect(self, id: RequestId, operation: &'static str) -> Self {
        if self.took_effect() {
            return self;
        }
        Self::NotRecorded {
            id,
            operation,
            source: Box::new(self),
        }
    }
}
