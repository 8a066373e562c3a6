//! The decisions taken on the page: approve (a passkey assertion over the decision
//! statement, verified by the gate as the executor will), deny and revoke (a signed-in POST:
//! they take authority away).

use approval_gate::{Decision, Error, Status};
use axum::Json;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::json;

use super::ceremony::{self, PostedAssertion};
use super::refused::{Refused, forbidden, gate_refusal, parse_id, refusal_line};
use super::state::{App, Shared};

pub(crate) async fn approve(
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

pub(crate) async fn deny(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    decide(&app, &id, &headers, &form, false).await
}

pub(crate) async fn revoke(
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
