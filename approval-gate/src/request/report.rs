//! A request together with where it stands.

use serde::Serialize;

use super::Request;
use crate::status::EffectiveStatus;

/// A request together with where it stands. Never an authorization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    #[serde(flatten)]
    request: Request,
    effective_status: EffectiveStatus,
    authorizes_execution: bool,
}

impl StatusReport {
    pub(crate) fn new(request: Request, effective_status: EffectiveStatus) -> Self {
        Self {
            request,
            effective_status,
            authorizes_execution: false,
        }
    }

    /// The request.
    #[must_use]
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Where it stands.
    #[must_use]
    pub fn effective_status(&self) -> EffectiveStatus {
        self.effective_status
    }

    /// Always `false`: a status never authorizes execution. Only a successful consume does.
    #[must_use]
    pub fn authorizes_execution(&self) -> bool {
        self.authorizes_execution
    }

    /// The request, dropping the status.
    #[must_use]
    pub fn into_request(self) -> Request {
        self.request
    }
}
