//! What every handler shares ([`App`]), and the signed-in approver a request carries
//! ([`Session`]): read from its cookie, and for a POST checked against our origin and the
//! session's page key.

use std::sync::Arc;
use std::time::SystemTime;

use approval_gate::passkey::Passkey;
use approval_gate::{Error, Gate, Policy};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::cookies::{SESSION_COOKIE, cookie, encode_next};
use super::html::{self, Viewer};
use super::limit::Limiter;
use super::refused::{Refused, forbidden};
use super::session::Keys;

/// What every handler shares. Nothing here outlives the process but the store's content.
pub(crate) struct App {
    pub(crate) gate: Gate,
    pub(crate) policy: Policy,
    pub(crate) keys: Keys,
    /// The origin pages are served from, `https://host[:port]` (or `http://localhost:port`).
    pub(crate) origin: String,
    /// What the `Host` header must say: the origin's authority.
    pub(crate) host: String,
    pub(crate) rp_id: String,
    /// Whether the server speaks TLS itself (HSTS then).
    pub(crate) tls: bool,
    /// Bumped on every change hint of the store: what the event streams follow.
    pub(crate) changes: tokio::sync::watch::Receiver<u64>,
    pub(crate) limiter: Limiter,
    /// Sessions signed out before they expired.
    pub(crate) signed_out: super::session::SignedOut,
}

pub(crate) type Shared = Arc<App>;

/// A signed-in approver: the principal and the session cookie it came from.
pub(crate) struct Session {
    pub(crate) principal: String,
    pub(crate) cookie: String,
}

impl App {
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let cookie = cookie(headers, SESSION_COOKIE)?;
        let principal = self.keys.principal(&cookie, SystemTime::now())?;
        if self.signed_out.contains(&cookie) {
            return None;
        }
        // An approver taken out of the approvers file is signed out with it.
        if self.passkeys_of(&principal).is_empty() {
            return None;
        }
        Some(Session { principal, cookie })
    }

    /// The session, or the sign-in page with a way back.
    pub(crate) fn signed_in(&self, headers: &HeaderMap, back: &str) -> Result<Session, Response> {
        self.session(headers).ok_or_else(|| {
            Redirect::to(&format!("/signin?next={}", encode_next(back))).into_response()
        })
    }

    /// A POST is ours: the browser says it comes from our origin. Browsers send `Origin` on
    /// every POST; one without it did not come from a page of ours.
    pub(crate) fn same_origin(&self, headers: &HeaderMap) -> Result<(), Refused> {
        match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            Some(origin) if origin == self.origin => Ok(()),
            Some(other) => Err(forbidden(format!(
                "a request from {} is not accepted here: nothing was changed",
                html::text(other)
            ))),
            None => Err(forbidden(
                "a request without an Origin header is not accepted here: nothing was changed",
            )),
        }
    }

    /// A signed-in POST: our origin, a session, and its CSRF token.
    pub(crate) fn post_session(
        &self,
        headers: &HeaderMap,
        token: Option<&str>,
    ) -> Result<Session, Refused> {
        self.same_origin(headers)?;
        let session = self.session(headers).ok_or_else(|| {
            Refused(
                StatusCode::UNAUTHORIZED,
                "not signed in (or the session ended): nothing was changed".into(),
            )
        })?;
        let token = token
            .filter(|token| !token.is_empty())
            .or_else(|| headers.get("x-csrf-token").and_then(|t| t.to_str().ok()))
            .unwrap_or("");
        if !self.keys.csrf_matches(&session.cookie, token) {
            return Err(forbidden(
                "this page holds no key of this session (sign in again on this page): nothing \
                 was changed",
            ));
        }
        Ok(session)
    }

    /// The passkeys of `principal` whose lines name this server's origin (so its RP ID),
    /// with their credential ids.
    pub(crate) fn passkeys_of(&self, principal: &str) -> Vec<(Passkey, Option<Vec<u8>>)> {
        self.policy
            .passkeys_on(principal, &self.origin, self.gate.now())
            .into_iter()
            .filter(|(key, _)| key.rp_id() == self.rp_id)
            .collect()
    }

    pub(crate) fn viewer(session: &Session) -> Viewer<'_> {
        Viewer {
            principal: Some(&session.principal),
        }
    }

    /// Runs a gate call on a blocking thread: the store's I/O never holds the event loop.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Gate) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let gate = self.gate.clone();
        tokio::task::spawn_blocking(move || call(&gate))
            .await
            .unwrap_or_else(|join| {
                Err(Error::InvalidInput {
                    field: "server",
                    problem: format!("the store call failed: {join}"),
                })
            })
    }
}
