//! Node.js bindings of approval-gate: the N-API module of the npm package.
//!
//! Everything that decides goes through the Rust library itself: payloads are canonicalized by
//! its `CanonicalPayload`, consumes and executions are its `Gate::consume` and
//! `Gate::execute_approved`, refusals are its `Error`s. This module only carries values between
//! JavaScript and Rust (JSON text both ways), and runs the library's file and database work on
//! libuv's thread pool or on a thread of its own, never on Node's event loop: every call that
//! touches the store returns a Promise. The JavaScript package (`lib/`) adds `executeApproved`,
//! the grant objects, the error classes and the types.

pub mod binding;
pub mod execute;
pub mod gate;
pub mod grant;

use approval_gate::{CanonicalPayload, Error, ErrorCode, RequestId};
use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName};
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::json;

/// The first characters of every refusal's message that this module throws: the rest is a JSON
/// object (`code`, `message`, `requestId`, `status`, `tookEffect`) from which `lib/errors.js`
/// builds the error class of the code.
pub(crate) const ERROR_PREFIX: &str = "approval-gate-error:";

/// A library error as the JavaScript error `lib/errors.js` rebuilds: its code is the napi
/// error's status, its details the JSON after [`ERROR_PREFIX`].
pub(crate) fn to_js(error: &Error) -> napi::Error {
    let details = json!({
        "code": error.code().as_str(),
        "message": error.to_string(),
        "requestId": error.request_id().map(|id| id.as_str().to_owned()),
        "status": error.status().map(approval_gate::EffectiveStatus::as_str),
        "tookEffect": error.took_effect(),
    });
    napi::Error::from_reason(format!("{ERROR_PREFIX}{details}"))
}

/// Parses a request id, refusing anything else with `invalid_id`.
pub(crate) fn parse_id(id: &str) -> napi::Result<RequestId> {
    RequestId::parse(id).map_err(|invalid| to_js(&Error::from(invalid)))
}

/// A payload given as JSON text (what `lib/payload.js` made of a JavaScript value), as the
/// library's canonical payload; `invalid_payload` for what cannot be one.
pub(crate) fn canonical(text: &str) -> Result<CanonicalPayload, Error> {
    Ok(CanonicalPayload::from_json_text(text)?)
}

/// Work for libuv's thread pool: `compute` runs the closure there, `resolve` hands its value to
/// JavaScript as the Promise's value.
pub struct Job<T> {
    work: Option<Box<dyn FnOnce() -> napi::Result<T> + Send>>,
}

impl<T> Job<T> {
    /// The Promise of `work`, run on libuv's pool.
    pub(crate) fn spawn(work: impl FnOnce() -> napi::Result<T> + Send + 'static) -> AsyncTask<Self>
    where
        Self: Task,
    {
        AsyncTask::new(Self {
            work: Some(Box::new(work)),
        })
    }
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for Job<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        match self.work.take() {
            Some(work) => work(),
            None => Err(napi::Error::from_reason("this task already ran")),
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
        Ok(output)
    }
}

/// The canonical form (RFC 8785) of a payload given as JSON text, and its BLAKE3 digest.
#[napi(object)]
pub struct Canonical {
    /// The canonical JSON text: exactly the bytes the library stores and digests.
    pub text: String,
    /// The BLAKE3 digest of those bytes, 64 lowercase hex characters.
    pub digest: String,
}

/// The canonical text (RFC 8785) and BLAKE3 digest of a payload given as JSON text, as the
/// library computes them; throws `invalid_payload` for what cannot be one. Pure computation:
/// synchronous.
#[napi]
pub fn canonicalize(json_text: String) -> napi::Result<Canonical> {
    let payload = canonical(&json_text).map_err(|e| to_js(&e))?;
    Ok(Canonical {
        text: payload.as_str().to_owned(),
        digest: payload.digest().to_hex(),
    })
}

/// One row of the library's error table.
#[napi(object)]
pub struct ErrorRow {
    /// The stable error code, such as `already_consumed`.
    pub code: String,
    /// Its class: `refused`, `invalid`, `fault` or `incomplete`.
    pub class: String,
    /// Its family, such as `binding`.
    pub family: String,
}

/// The library's error table, in declaration order: every code, its class and family. The
/// JavaScript error classes are made from it, so no code can be missed.
#[napi]
pub fn error_table() -> Vec<ErrorRow> {
    ErrorCode::ALL
        .iter()
        .map(|code| ErrorRow {
            code: code.as_str().to_owned(),
            class: code.class().as_str().to_owned(),
            family: code.family().as_str().to_owned(),
        })
        .collect()
}

/// Throws `invalid_input` unless `name` is a valid operation name (the library's
/// `check_operation_name`): what `requiresApproval` checks when it wraps.
#[napi]
pub fn check_operation_name(name: String) -> napi::Result<()> {
    approval_gate::check_operation_name(&name).map_err(|e| to_js(&e))
}

/// Applies the PostgreSQL store's schema to the database at `url` (what `approval-gate db
/// init` does), on libuv's pool; resolves to its version. An operator's step, run once per
/// database.
#[napi]
pub fn postgres_init(url: String) -> AsyncTask<Job<u32>> {
    Job::spawn(move || approval_gate::postgres::init(&url).map_err(|e| to_js(&e)))
}
