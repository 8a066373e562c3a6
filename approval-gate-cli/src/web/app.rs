//! The routes of `approval-gate serve`, and what each one checks.
//!
//! Everything but the sign-in page and the static files needs a session; every state change
//! is a POST that needs the browser's `Origin` to be ours and, once signed in, the session's
//! page key (its CSRF token), which only the page's script holds: the session cookie, which
//! every port of the host receives, reads but decides nothing on its own. Approving needs more
//! than a session: a passkey assertion over the request's decision statement, which the gate
//! verifies (and audits when refused) exactly as the executor will.

use std::sync::Arc;
use std::time::SystemTime;

use approval_gate::passkey::{self, Passkey};
use approval_gate::{Decision, Error, Gate, ListFilter, Policy, RequestId, Status};
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;
use serde_json::json;

use super::ceremony::{self, PostedAssertion};
use super::guard::Site;
use super::html::{self, Viewer};
use super::limit::Limiter;
use super::listen::Origin;
use super::session::Keys;
use super::signin;

/// The session cookie. `__Host-`: Secure, no Domain, Path=/, so no other host sets it.
pub(crate) const SESSION_COOKIE: &str = "__Host-approval-gate-session";
/// The sign-in ticket cookie, binding an assertion to the browser that asked for it.
pub(crate) const TICKET_COOKIE: &str = "__Host-approval-gate-signin";

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

/// The router.
pub(crate) fn router(app: Shared) -> Router {
    let site = Arc::new(Site {
        origin: Origin {
            url: app.origin.clone(),
            host: app.host.clone(),
            rp_id: app.rp_id.clone(),
            // The guard reads the URL and the host; the port is the bind's business.
            port: url::Url::parse(&app.origin)
                .ok()
                .and_then(|url| url.port_or_known_default())
                .unwrap_or_default(),
        },
        tls: app.tls,
    });
    Router::new()
        .route("/", get(list))
        .route("/fragment/pending", get(fragment))
        .route("/events", get(events))
        .route("/requests/{id}", get(show))
        .route("/requests/{id}/audit", get(audit))
        .route("/requests/{id}/approve", post(approve))
        .route("/requests/{id}/deny", post(deny))
        .route("/requests/{id}/revoke", post(revoke))
        .route("/signin", get(signin::page))
        .route("/signin/begin", post(signin::begin))
        .route("/signin/finish", post(signin::finish))
        .route("/signout", post(signin::signout))
        .fallback(not_found)
        .with_state(app)
        .merge(super::guard::assets())
        .layer(axum::middleware::from_fn_with_state(
            site,
            super::guard::headers,
        ))
}

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
    fn signed_in(&self, headers: &HeaderMap, back: &str) -> Result<Session, Response> {
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

    fn viewer(session: &Session) -> Viewer<'_> {
        Viewer {
            principal: Some(&session.principal),
        }
    }

    /// Runs a gate call on a blocking thread: the store's I/O never holds the event loop.
    async fn blocking<T: Send + 'static>(
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

/// A cookie's value from the `Cookie` headers.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

pub(crate) fn set_cookie(name: &str, value: &str, max_age: u64) -> (header::HeaderName, String) {
    (
        header::SET_COOKIE,
        format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; Secure; SameSite=Strict"),
    )
}

/// Only a local path may be where sign-in returns to: never another site.
pub(crate) fn local_next(next: &str) -> &str {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic());
    if local { next } else { "/" }
}

fn encode_next(path: &str) -> String {
    path.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/-_.".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
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

fn parse_id(text: &str) -> Result<RequestId, Refused> {
    RequestId::parse(text).map_err(|e| Refused(StatusCode::NOT_FOUND, e.to_string()))
}

async fn list(State(app): State<Shared>, headers: HeaderMap) -> Response {
    let session = match app.signed_in(&headers, "/") {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let body = match pending_html(&app).await {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let body = format!(
        "<h1>Pending requests</h1><section id=\"pending\" data-live=\"/events\" \
         data-fragment=\"/fragment/pending\" aria-live=\"polite\">{body}</section>"
    );
    let page = html::page("Pending", &App::viewer(&session), &body);
    (html_type(), page).into_response()
}

async fn pending_html(app: &App) -> Result<String, Refused> {
    let page = app
        .blocking(|gate| {
            let page = gate.list(ListFilter::Pending, None, approval_gate::limits::MAX_PAGE)?;
            Ok((page, gate.now()))
        })
        .await
        .map_err(|e| gate_refusal(&e))?;
    let (page, now) = page;
    Ok(html::pending(&page.items, now, page.next_after.is_some()))
}

async fn fragment(State(app): State<Shared>, headers: HeaderMap) -> Response {
    if app.session(&headers).is_none() {
        return Refused(StatusCode::UNAUTHORIZED, "not signed in".into()).into_response();
    }
    match pending_html(&app).await {
        Ok(body) => (html_type(), body).into_response(),
        Err(refused) => refused.into_response(),
    }
}

/// Server-sent events: one `change` event per change hint of the store (coalesced), so the
/// list page fetches its fragment again. The hints come from the store's change feed
/// (inotify, LISTEN/NOTIFY) with its fallback re-read; a hint is never evidence, the page
/// reads the store again.
async fn events(State(app): State<Shared>, headers: HeaderMap) -> Response {
    if app.session(&headers).is_none() {
        return Refused(StatusCode::UNAUTHORIZED, "not signed in".into()).into_response();
    }
    let changes = app.changes.clone();
    let stream = futures_util::stream::unfold(changes, |mut changes| async move {
        changes.changed().await.ok()?;
        let seen = *changes.borrow_and_update();
        let event = Event::default().event("change").data(seen.to_string());
        Some((Ok::<_, std::convert::Infallible>(event), changes))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn show(State(app): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let session = match app.signed_in(&headers, &format!("/requests/{id}")) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let shown = match app
        .blocking(move |gate| Ok((gate.status(id)?, gate.now())))
        .await
    {
        Ok(shown) => shown,
        Err(error) => return gate_refusal(&error).into_response(),
    };
    let (report, now) = shown;
    let button = approve_button(&app, &report, &session.principal);
    let viewer = App::viewer(&session);
    let body = html::request(&report, now, &viewer, button.as_ref());
    let page = html::page(&html::request_title(report.request()), &viewer, &body);
    (html_type(), page).into_response()
}

/// The approve button of a pending request for `principal`: the challenge is the digest of
/// the decision statement they would sign. None once their approval counts: a second one
/// would be refused.
fn approve_button(
    app: &App,
    report: &approval_gate::StatusReport,
    principal: &str,
) -> Option<html::ApproveButton> {
    let request = report.request();
    let counted = request
        .approvals()
        .iter()
        .zip(report.standings())
        .any(|(approval, standing)| approval.principal() == principal && standing.is_trusted());
    if counted {
        return None;
    }
    let statement = report.decision_statement(principal).ok()?;
    let credentials: Vec<String> = app
        .passkeys_of(principal)
        .iter()
        .filter_map(|(_, id)| id.as_deref().map(|id| B64.encode(id)))
        .collect();
    Some(html::ApproveButton {
        challenge: B64.encode(passkey::challenge(&statement)),
        rp_id: app.rp_id.clone(),
        credentials: credentials.join(","),
    })
}

async fn audit(State(app): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let session = match app.signed_in(&headers, &format!("/requests/{id}/audit")) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let records = app
        .blocking(move |gate| {
            gate.status(id)?;
            Ok(gate
                .audit_records()?
                .into_iter()
                .filter(|record| record.id == id)
                .collect::<Vec<_>>())
        })
        .await;
    let records = match records {
        Ok(records) => records,
        Err(error) => return gate_refusal(&error).into_response(),
    };
    let page = html::page(
        &format!("Audit trail of {id}"),
        &App::viewer(&session),
        &html::audit(id, &records),
    );
    (html_type(), page).into_response()
}

/// Approves with a passkey assertion over the decision statement of the request as it is
/// stored now. The gate verifies it against the approvers file (and records a refusal when
/// it does not hold), so what is accepted here is exactly what the executor will count.
async fn approve(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(posted): Json<PostedAssertion>,
) -> Response {
    let result = approve_inner(&app, &id, &headers, &posted).await;
    match result {
        Ok(message) => Json(json!({ "ok": true, "message": message })).into_response(),
        Err(Refused(status, message)) => {
            (status, Json(json!({ "ok": false, "message": message }))).into_response()
        }
    }
}

async fn approve_inner(
    app: &App,
    id: &str,
    headers: &HeaderMap,
    posted: &PostedAssertion,
) -> Result<String, Refused> {
    let id = parse_id(id)?;
    let session = app.post_session(headers, None)?;
    let (assertion, _) = posted
        .decode()
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the assertion: {e}")))?;
    // The key is the one the approvers file holds for this credential and this approver.
    let passkey = app
        .passkeys_of(&session.principal)
        .into_iter()
        .find(|(_, credential)| credential.as_deref() == Some(assertion.credential_id.as_slice()))
        .map(|(key, _)| key)
        .ok_or_else(|| {
            refusal_line(&format!(
                "approve of {id} by {} with a passkey not theirs",
                session.principal
            ));
            forbidden(
                "this passkey is not one of yours in the approvers file: nothing was approved",
            )
        })?;
    if let Err(problem) = ceremony::made_here(&assertion, &app.origin) {
        let principal = session.principal.clone();
        let refusal = Error::BadSignature {
            id,
            principal,
            problem,
        };
        let refused = app.blocking(move |gate| {
            gate.record_refused_approval(id, &refusal);
            Err::<(), _>(refusal)
        });
        refused.await.map_err(|e| gate_refusal(&e))?;
    }
    let armored = assertion
        .armor(&passkey)
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the assertion: {e}")))?;
    // The gate checks the signature counter (§7.2 step 22) against the approvals the store
    // holds, under the store's lock, and records a refusal as for a bad signature.
    let principal = session.principal.clone();
    let report = app
        .blocking(move |gate| {
            let shown = gate.status(id)?;
            let decision = Decision::by(format!("{principal} (web)")).signed(principal, armored);
            gate.approve_as_shown(shown.request(), &decision)
        })
        .await
        .map_err(|e| gate_refusal(&e))?;
    let count = report.counted_approvals();
    let required = report.required_approvals();
    Ok(if report.request().status() == Status::Pending {
        format!("approval recorded: {count} of {required}; it needs more approvers")
    } else {
        format!("approved ({count} of {required}): trusted code may now run it once")
    })
}

#[derive(Deserialize)]
pub(crate) struct DecisionForm {
    #[serde(default)]
    pub(crate) csrf: String,
    #[serde(default)]
    pub(crate) reason: String,
}

async fn deny(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    decide(&app, &id, &headers, &form, false).await
}

async fn revoke(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    decide(&app, &id, &headers, &form, true).await
}

/// Deny and revoke: they take authority away, so a session suffices.
async fn decide(
    app: &App,
    id: &str,
    headers: &HeaderMap,
    form: &DecisionForm,
    revoke: bool,
) -> Response {
    let result = async {
        let id = parse_id(id)?;
        let session = app.post_session(headers, Some(&form.csrf))?;
        let decision = Decision::by(format!("{} (web)", session.principal)).reason(&form.reason);
        app.blocking(move |gate| {
            if revoke {
                gate.revoke(id, &decision)
            } else {
                gate.deny(id, &decision)
            }
        })
        .await
        .map_err(|e| gate_refusal(&e))?;
        Ok::<_, Refused>(id)
    }
    .await;
    match result {
        Ok(id) => Redirect::to(&format!("/requests/{id}")).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn not_found() -> Response {
    Refused(StatusCode::NOT_FOUND, "no such page".into()).into_response()
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
