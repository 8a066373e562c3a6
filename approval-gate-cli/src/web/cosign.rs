//! Co-signing on the page (issue 41): an allowance for an operation that needs more
//! approvers than one is proposed with the first signature and approves nothing until the
//! others sign it; each signs it here, from the list.
//!
//! `GET /allowances/{id}/sign` shows the allowance as the store holds it, in words
//! ([`Allowance::describe`](approval_gate::allowance::Allowance::describe), escaped as
//! anything an agent wrote), and a passkey button whose challenge is the statement this
//! approver signs (every term, their own name, the quorum it was proposed as part of).
//! `POST /allowances/{id}/sign` carries the assertion only: the server reads the allowance
//! from the store again, and the gate verifies the signature over the statement it builds
//! from it, so nothing is signed that the page did not show.

use approval_gate::allowance::AllowanceSignature;
use approval_gate::{AllowanceReport, RequestId, passkey};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::json;

use super::allow_html::awaiting;
use super::ceremony::{self, PostedAssertion};
use super::cosign_html::{self, SignPage};
use super::html;
use super::refused::{Refused, forbidden, gate_refusal, html_type, parse_id, refusal_line};
use super::state::{App, Shared};

/// The signature the posted assertion makes as `principal`, armored as the library keeps a
/// passkey's: only by one of their own passkeys in the approvers file, and only made on this
/// page. `attempt` names it in the refusal line a passkey not theirs leaves ("signature of
/// allowance X"); `nothing` ends each refusal ("nothing was signed").
pub(super) fn armored(
    app: &App,
    principal: &str,
    posted: &PostedAssertion,
    attempt: &str,
    nothing: &str,
) -> Result<String, Refused> {
    let (assertion, _) = posted
        .decode()
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the assertion: {e}")))?;
    let passkey = app
        .passkeys_of(principal)
        .into_iter()
        .find(|(_, credential)| credential.as_deref() == Some(assertion.credential_id.as_slice()))
        .map(|(key, _)| key)
        .ok_or_else(|| {
            refusal_line(&format!(
                "{attempt} by {principal} with a passkey not theirs"
            ));
            forbidden(format!(
                "this passkey is not one of yours in the approvers file: {nothing}"
            ))
        })?;
    ceremony::made_here(&assertion, &app.origin)
        .map_err(|problem| forbidden(format!("the passkey assertion: {problem}: {nothing}")))?;
    assertion
        .armor(&passkey)
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the assertion: {e}")))
}

/// Why `principal` cannot sign the allowance `report` describes, in words: revoked, its
/// window ended, complete, or signed by them already.
fn unsignable(report: &AllowanceReport, principal: &str) -> Option<String> {
    let id = report.allowance.allowance.id();
    if report.revoked {
        return Some(format!(
            "allowance {id} was revoked: nothing was signed (a revoked allowance never \
             approves anything; propose a new one)"
        ));
    }
    if report.ended {
        let not_after = report.allowance.allowance.terms().bounds.not_after;
        return Some(format!(
            "allowance {id}'s window ended at {not_after}: nothing was signed (propose a new \
             one)"
        ));
    }
    if report.signatures_missing == 0 {
        return Some(format!(
            "allowance {id} has all the signatures it needs: nothing was signed"
        ));
    }
    if report
        .allowance
        .signatures
        .iter()
        .any(|s| s.principal == principal)
    {
        return Some(format!(
            "you have signed allowance {id} already ({principal}): another approver must sign \
             it; nothing was signed"
        ));
    }
    None
}

/// The allowance `id` as the store holds it, if `principal` may sign it.
async fn signable(app: &App, id: RequestId, principal: &str) -> Result<AllowanceReport, Refused> {
    let report = app
        .blocking(move |gate| gate.allowance(id))
        .await
        .map_err(|e| gate_refusal(&e))?;
    match unsignable(&report, principal) {
        Some(why) => Err(Refused(StatusCode::CONFLICT, why)),
        None => Ok(report),
    }
}

/// `GET /allowances/{id}/sign`: the allowance in words, and the passkey button that signs
/// its statement as this approver.
pub(crate) async fn page(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let session = match app.signed_in(&headers, &format!("/allowances/{id}/sign")) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let result = async {
        let report = signable(&app, id, &session.principal).await?;
        let signed = &report.allowance;
        let statement = signed
            .allowance
            .statement(&session.principal, signed.required)
            .map_err(|e| gate_refusal(&e))?;
        let credentials: Vec<String> = app
            .passkeys_of(&session.principal)
            .iter()
            .filter_map(|(_, id)| id.as_deref().map(|id| B64.encode(id)))
            .collect();
        Ok::<_, Refused>(cosign_html::page(&SignPage {
            report: &report,
            challenge: B64.encode(passkey::challenge(&statement)),
            rp_id: &app.rp_id,
            credentials: credentials.join(","),
        }))
    }
    .await;
    match result {
        Ok(body) => {
            let page = html::page(
                &format!("Sign allowance {id}"),
                &App::viewer(&session),
                &body,
            );
            (html_type(), page).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

/// `POST /allowances/{id}/sign`: adds the assertion's signature to the allowance the store
/// holds, if it verifies over the statement this approver signs.
pub(crate) async fn sign(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(posted): Json<PostedAssertion>,
) -> Response {
    match sign_inner(&app, &id, &headers, &posted).await {
        Ok((id, message)) => {
            Json(json!({ "ok": true, "id": id, "message": message })).into_response()
        }
        Err(Refused(status, message)) => {
            (status, Json(json!({ "ok": false, "message": message }))).into_response()
        }
    }
}

async fn sign_inner(
    app: &App,
    id: &str,
    headers: &HeaderMap,
    posted: &PostedAssertion,
) -> Result<(RequestId, String), Refused> {
    let id = parse_id(id)?;
    let session = app.post_session(headers, None)?;
    let armored = armored(
        app,
        &session.principal,
        posted,
        &format!("signature of allowance {id}"),
        "nothing was signed",
    )?;
    // Refusals in words before the gate's own checks, which hold under the store's lock.
    signable(app, id, &session.principal).await?;
    let signature = AllowanceSignature {
        principal: session.principal.clone(),
        signature: armored,
    };
    let report = app
        .blocking(move |gate| gate.cosign_allowance(id, &signature))
        .await
        .map_err(|e| {
            let Refused(status, message) = gate_refusal(&e);
            if message.contains("nothing was signed") {
                Refused(status, message)
            } else {
                Refused(status, format!("{message}: nothing was signed"))
            }
        })?;
    let message = match report.signatures_missing {
        0 => {
            format!("allowance {id} signed: it has all its signatures and approves what it allows")
        }
        n => format!(
            "allowance {id} signed: {}; the others sign it from the allowances page",
            awaiting(n)
        ),
    };
    Ok((id, message))
}
