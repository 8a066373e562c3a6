//! Signing in and out: a passkey assertion over a challenge bound to this browser's ticket.

use std::net::SocketAddr;
use std::time::SystemTime;

use axum::Json;
use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;
use serde_json::json;

use super::ceremony::PostedAssertion;
use super::cookies::{SESSION_COOKIE, TICKET_COOKIE, cookie, local_next, set_cookie};
use super::decide::DecisionForm;
use super::html::{self, Viewer};
use super::limit::{self, Print};
use super::refused::{Refused, html_type, refusal_line};
use super::session;
use super::state::{App, Shared};

/// Where to go once signed in.
#[derive(Deserialize)]
pub(crate) struct Next {
    #[serde(default)]
    next: String,
}

pub(crate) async fn page(State(app): State<Shared>, Query(next): Query<Next>) -> Response {
    let viewer = Viewer { principal: None };
    let _ = &app;
    let page = html::page("Sign in", &viewer, &html::signin(local_next(&next.next)));
    (html_type(), page).into_response()
}

/// Starts a sign-in: a ticket in a cookie, and the challenge it stands for.
pub(crate) async fn begin(State(app): State<Shared>, headers: HeaderMap) -> Response {
    // Stateless and cheap (a MAC over a nonce): nothing to limit, so nobody to lock out.
    let result = (|| {
        app.same_origin(&headers)?;
        let (ticket, challenge) = app.keys.signin_ticket(SystemTime::now()).map_err(|e| {
            Refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("no randomness: {e}"),
            )
        })?;
        Ok::<_, Refused>((ticket, challenge))
    })();
    match result {
        Ok((ticket, challenge)) => (
            [set_cookie(
                TICKET_COOKIE,
                &ticket,
                session::SIGNIN_TTL.as_secs(),
            )],
            Json(json!({ "challenge": B64.encode(challenge), "rpId": app.rp_id })),
        )
            .into_response(),
        Err(Refused(status, message)) => {
            (status, Json(json!({ "ok": false, "message": message }))).into_response()
        }
    }
}

/// Finishes a sign-in: the assertion must answer this browser's ticket, be made by a passkey
/// of the approvers file, for the principal it names, with user verification.
pub(crate) async fn finish(
    State(app): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Json(posted): Json<PostedAssertion>,
) -> Response {
    match check(&app, &headers, &posted) {
        Ok(principal) => {
            let Ok(session) = app.keys.session(&principal, SystemTime::now()) else {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(json!({ "ok": false, "message": "no randomness for a session" })),
                )
                    .into_response();
            };
            (
                // Two Set-Cookie headers: appended, never one replacing the other.
                AppendHeaders([
                    set_cookie(SESSION_COOKIE, &session, session::SESSION_TTL.as_secs()),
                    set_cookie(TICKET_COOKIE, "", 0),
                ]),
                // The page key goes to the page's script alone, which keeps it in the
                // origin's storage: never in a cookie (every port of the host gets those).
                Json(json!({
                    "ok": true,
                    "principal": principal,
                    "key": app.keys.csrf(&session),
                })),
            )
                .into_response()
        }
        Err(Refused(status, message)) => {
            let line = format!("sign-in from {} refused: {message}", peer.ip());
            match app.limiter.refused(peer.ip()) {
                Print::Yes => refusal_line(&line),
                Print::Last => refusal_line(&format!(
                    "{line} (more refused sign-ins from there within {} s are not printed)",
                    limit::WINDOW.as_secs()
                )),
                Print::No => {}
            }
            (status, Json(json!({ "ok": false, "message": message }))).into_response()
        }
    }
}

fn check(app: &App, headers: &HeaderMap, posted: &PostedAssertion) -> Result<String, Refused> {
    app.same_origin(headers)?;
    let refused =
        |message: &str| Refused(StatusCode::FORBIDDEN, format!("sign-in refused: {message}"));
    let ticket = cookie(headers, TICKET_COOKIE)
        .ok_or_else(|| refused("no sign-in was started in this browser"))?;
    let challenge = app
        .keys
        .check_ticket(&ticket, SystemTime::now())
        .ok_or_else(|| refused("the sign-in expired or is not ours; start again"))?;
    let (assertion, handle) = posted
        .decode()
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the assertion: {e}")))?;
    let principal = handle
        .and_then(|h| String::from_utf8(h).ok())
        .ok_or_else(|| refused("the passkey named no approver"))?;
    let passkey = app
        .passkeys_of(&principal)
        .into_iter()
        .find(|(_, id)| id.as_deref() == Some(assertion.credential_id.as_slice()))
        .map(|(key, _)| key)
        .ok_or_else(|| {
            refused("this passkey is not one of that approver's in the approvers file")
        })?;
    let verified = passkey
        .verify(&challenge, &assertion)
        .map_err(|e| refused(&e))?;
    if verified.origin != app.origin {
        return Err(refused(&format!(
            "made for {}, not {}",
            verified.origin, app.origin
        )));
    }
    Ok(principal)
}

/// Signs out: the session ends on the server (until it would have expired), wherever its
/// cookie was copied to, and the cookie is cleared in this browser.
pub(crate) async fn signout(
    State(app): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    let ended = app
        .post_session(&headers, Some(&form.csrf))
        .and_then(|session| {
            // Ended here, not only in this browser: a copy of the cookie is signed out too.
            app.signed_out
                .end(&session.cookie, SystemTime::now())
                .map_err(|e| {
                    Refused(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("the session could not be ended: {e}"),
                    )
                })
        });
    match ended {
        Ok(()) => ([set_cookie(SESSION_COOKIE, "", 0)], Redirect::to("/signin")).into_response(),
        Err(refused) => refused.into_response(),
    }
}
