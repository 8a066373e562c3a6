//! A refusal as the page answers it: [`Refused`], axum's `IntoResponse` for it, and the
//! HTTP status for each library error, derived from its family in the error table.

use approval_gate::{Error, RequestId};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::html::{self, Viewer};

/// A refusal as the page shows it.
pub(crate) struct Refused(pub(crate) StatusCode, pub(crate) String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let viewer = Viewer { principal: None };
        // A "no" is a refusal; anything else went wrong and is said so.
        let title = if self.0.is_server_error() {
            "Error"
        } else {
            "Refused"
        };
        let body = html::page(title, &viewer, &html::problem(title, &self.1));
        (self.0, html_type(), body).into_response()
    }
}

pub(crate) fn html_type() -> [(header::HeaderName, HeaderValue); 1] {
    [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    )]
}

/// A refusal the audit log cannot hold (no request is concerned), on the server's stderr:
/// always shown, escaped, one line.
pub(crate) fn refusal_line(message: &str) {
    crate::term::output::stderr_line(&format!(
        "approval-gate: refused: {}",
        crate::term::display::escape(message)
    ));
}

pub(crate) fn forbidden(message: impl Into<String>) -> Refused {
    Refused(StatusCode::FORBIDDEN, message.into())
}

/// The HTTP status for a library error: its family, from the error table (no wildcard: a
/// family added to the library must be decided here).
#[deny(clippy::wildcard_enum_match_arm)]
pub(crate) fn gate_refusal(error: &Error) -> Refused {
    use approval_gate::ErrorFamily as F;
    let status = match error.code().family() {
        F::Missing => StatusCode::NOT_FOUND,
        F::Input => StatusCode::BAD_REQUEST,
        F::Signature | F::Permission => StatusCode::FORBIDDEN,
        // The request's state, its binding or a limit says no.
        F::Pending
        | F::Denied
        | F::Expired
        | F::Revoked
        | F::Spent
        | F::Binding
        | F::Quorum
        | F::State
        | F::Capacity => StatusCode::CONFLICT,
        F::Damage | F::Setup | F::Store | F::Incomplete => StatusCode::INTERNAL_SERVER_ERROR,
    };
    Refused(status, error.to_string())
}

pub(crate) fn parse_id(text: &str) -> Result<RequestId, Refused> {
    RequestId::parse(text).map_err(|e| Refused(StatusCode::NOT_FOUND, e.to_string()))
}
