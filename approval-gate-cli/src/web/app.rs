//! The routes of `approval-gate serve`, and what each one checks.
//!
//! Everything but the sign-in page and the static files needs a session; every state change
//! is a POST that needs the browser's `Origin` to be ours and, once signed in, the session's
//! page key (its CSRF token), which only the page's script holds: the session cookie, which
//! every port of the host receives, reads but decides nothing on its own. Approving needs more
//! than a session: a passkey assertion over the request's decision statement, which the gate
//! verifies (and audits when refused) exactly as the executor will.

use std::sync::Arc;

use approval_gate::ListFilter;
use approval_gate::passkey;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

use super::decide::{approve, deny, revoke};
use super::guard::Site;
use super::html;
use super::listen::Origin;
use super::refused::{Refused, gate_refusal, html_type, parse_id};
use super::signin;
use super::state::{App, Shared};

/// The router: the pages here, the decisions (`decide`), sign-in (`signin`), and the static
/// files and headers of every answer (`guard`).
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
        .route(
            "/requests/{id}/allow",
            get(super::allow::offer).post(super::allow::grant),
        )
        .route("/allowances", get(super::allow::list))
        .route("/allowances/{id}/revoke", post(super::allow::revoke))
        .route(
            "/allowances/{id}/sign",
            get(super::cosign::page).post(super::cosign::sign),
        )
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
        "<h1>Pending requests</h1><p><a href=\"/allowances\">Allowances</a></p>\
         <section id=\"pending\" data-live=\"/events\" \
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
        .blocking(move |gate| {
            let report = gate.status(id)?;
            // The allowance that approved it, read after it; unreadable is said in words.
            let approved_by = report.request().allowance().map(|allowance| {
                crate::term::render::allowance::approved_by(allowance, &gate.allowance(allowance))
            });
            Ok((report, approved_by, gate.now()))
        })
        .await
    {
        Ok(shown) => shown,
        Err(error) => return gate_refusal(&error).into_response(),
    };
    let (report, approved_by, now) = shown;
    let button = approve_button(&app, &report, &session.principal);
    let viewer = App::viewer(&session);
    let body = html::request(
        &report,
        now,
        &viewer,
        button.as_ref(),
        approved_by.as_deref(),
    );
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
async fn not_found() -> Response {
    Refused(StatusCode::NOT_FOUND, "no such page".into()).into_response()
}
