//! Allowances on the page (issue 41): from a pending request, "approve this and allow more
//! like it"; the list of allowances with their uses and budget left; revoking one.
//!
//! The offer is made from the request's own payload: each string or integer in it becomes a
//! constraint that it be exactly that value (`oneOf` of the value), which the approver may
//! leave out, with bounds the approver sets (uses, a window of at most seven days). The page
//! shows the allowance in words ([`Allowance::describe`], escaped as anything an agent wrote)
//! before any passkey prompt, and carries the challenge of its statement; the assertion is
//! posted back with the allowance as offered, and the gate grants it only if the signature
//! verifies over that statement under the approvers file, as an approval's does over a
//! decision statement. The server keeps nothing between the offer and the grant.

use std::fmt::Write as _;

use approval_gate::allowance::{
    Allowance, AllowanceSignature, Bounds, Constraint, MAX_USES, SignedAllowance, Terms, Test,
};
use approval_gate::{Decision, RequestId, StatusReport, passkey};
use axum::Json;
use axum::extract::{Form, Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::Deserialize;
use serde_json::{Value, json};

use super::allow_html::{self, Field, MAX_HOURS, Offer};
use super::ceremony::PostedAssertion;
use super::decide::DecisionForm;
use super::html;
use super::refused::{Refused, gate_refusal, html_type, parse_id};
use super::state::{App, Shared};

/// What the approver chose on the offer's form (the query of `GET /requests/{id}/allow`).
struct Chosen {
    uses: u32,
    hours: u64,
    /// The pointers kept; `None` before the form was sent (every one is kept).
    kept: Option<Vec<String>>,
}

impl Chosen {
    fn parse(query: Option<&str>) -> Result<Self, Refused> {
        let mut chosen = Self {
            uses: 3,
            hours: 24,
            kept: None,
        };
        let bad = |what: &str| Refused(StatusCode::BAD_REQUEST, what.to_owned());
        for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match key.as_ref() {
                "uses" => {
                    chosen.uses = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_USES).contains(n))
                        .ok_or_else(|| bad(&format!("uses must be 1 to {MAX_USES}")))?;
                    chosen.kept.get_or_insert_with(Vec::new);
                }
                "hours" => {
                    chosen.hours = value
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_HOURS).contains(n))
                        .ok_or_else(|| bad(&format!("hours must be 1 to {MAX_HOURS}")))?;
                }
                "c" => chosen
                    .kept
                    .get_or_insert_with(Vec::new)
                    .push(value.into_owned()),
                _ => return Err(bad("unknown field in the allowance form")),
            }
        }
        Ok(chosen)
    }
}

/// Every string or integer of `payload`, with its JSON Pointer, in document order: what the
/// offer prefills as "exactly this value".
pub(crate) fn leaves(payload: &Value) -> Vec<(String, Value)> {
    fn walk(value: &Value, pointer: &mut String, out: &mut Vec<(String, Value)>) {
        match value {
            Value::String(_) => out.push((pointer.clone(), value.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => {
                out.push((pointer.clone(), value.clone()));
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    walk(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = pointer.len();
                    let _ = write!(pointer, "/{i}");
                    walk(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(payload, &mut String::new(), &mut out);
    out
}

/// The allowance the page offers for `report` as `chosen` says, made now under a new id.
fn offered(
    report: &StatusReport,
    chosen: &Chosen,
    now: approval_gate::Timestamp,
) -> Result<(Allowance, Vec<Field>), Refused> {
    let request = report.request();
    let unfit = |why: &str| Refused(StatusCode::CONFLICT, why.to_owned());
    let operation = request
        .operation()
        .ok_or_else(|| unfit("this request names no operation: an allowance needs one"))?;
    let payload = request
        .payload()
        .map_or(Value::Null, approval_gate::CanonicalPayload::to_value);
    let mut fields = Vec::new();
    let mut constraints = Vec::new();
    for (pointer, value) in leaves(&payload) {
        let kept = chosen
            .kept
            .as_ref()
            .is_none_or(|kept| kept.contains(&pointer));
        if kept {
            let constraint = Constraint::new(pointer.clone(), Test::OneOf(vec![value.clone()]))
                .map_err(|e| unfit(&e))?;
            constraints.push(constraint);
        }
        fields.push((pointer, value, kept));
    }
    let terms = Terms {
        operation: operation.to_owned(),
        constraints,
        bounds: Bounds {
            uses: Some(chosen.uses),
            budget: None,
            rate: None,
            not_before: now,
            not_after: now.saturating_add(std::time::Duration::from_secs(chosen.hours * 3600)),
        },
        agent: None,
        reason: format!("allowed from request {} on the page", request.id()),
    };
    let allowance = Allowance::new(terms, now).map_err(|e| unfit(&e.to_string()))?;
    Ok((allowance, fields))
}

/// `GET /requests/{id}/allow`: the offer, in words, with the passkey button.
pub(crate) async fn offer(
    State(app): State<Shared>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let session = match app.signed_in(&headers, &format!("/requests/{id}/allow")) {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    let result = async {
        let chosen = Chosen::parse(query.as_deref())?;
        let (report, now) = app
            .blocking(move |gate| Ok((gate.status(id)?, gate.now())))
            .await
            .map_err(|e| gate_refusal(&e))?;
        if report.effective_status() != approval_gate::EffectiveStatus::Pending {
            return Err(Refused(
                StatusCode::CONFLICT,
                format!("request {id} is not pending: there is nothing to approve"),
            ));
        }
        let (allowance, fields) = offered(&report, &chosen, now)?;
        let principal = session.principal.clone();
        let required = app.policy.allowance_quorum(&allowance.terms().operation);
        let statement = allowance
            .statement(&principal, required)
            .map_err(|e| gate_refusal(&e))?;
        let approved_already = report
            .request()
            .approvals()
            .iter()
            .any(|a| a.principal() == principal);
        let decision = report
            .decision_statement(&principal)
            .map_err(|e| gate_refusal(&e))?;
        let credentials: Vec<String> = app
            .passkeys_of(&principal)
            .iter()
            .filter_map(|(_, id)| id.as_deref().map(|id| B64.encode(id)))
            .collect();
        let offer = Offer {
            id,
            allowance: &allowance,
            fields: &fields,
            uses: chosen.uses,
            hours: chosen.hours,
            required,
            request_required: report.required_approvals(),
            request_counted: report.counted_approvals(),
            challenge: B64.encode(passkey::challenge(&statement)),
            approve_challenge: (!approved_already)
                .then(|| B64.encode(passkey::challenge(&decision))),
            rp_id: &app.rp_id,
            credentials: credentials.join(","),
        };
        Ok::<_, Refused>(allow_html::offer(&offer))
    }
    .await;
    match result {
        Ok(body) => {
            let page = html::page(
                &format!("Allow more like {id}"),
                &App::viewer(&session),
                &body,
            );
            (html_type(), page).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

/// What the page posts to grant an allowance: the passkey assertion and the allowance as
/// offered.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PostedAllowance {
    assertion: PostedAssertion,
    allowance: Value,
}

/// `POST /requests/{id}/allow`: grants the allowance the assertion signed.
pub(crate) async fn grant(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(posted): Json<PostedAllowance>,
) -> Response {
    match grant_inner(&app, &id, &headers, posted).await {
        Ok((aid, message)) => {
            Json(json!({ "ok": true, "id": aid, "message": message })).into_response()
        }
        Err(Refused(status, message)) => {
            (status, Json(json!({ "ok": false, "message": message }))).into_response()
        }
    }
}

async fn grant_inner(
    app: &App,
    id: &str,
    headers: &HeaderMap,
    posted: PostedAllowance,
) -> Result<(RequestId, String), Refused> {
    let id = parse_id(id)?;
    let session = app.post_session(headers, None)?;
    let allowance = Allowance::from_json(&posted.allowance)
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("the allowance: {e}")))?;
    let armored = super::cosign::armored(
        app,
        &session.principal,
        &posted.assertion,
        &format!("allowance from {id}"),
        "nothing was allowed",
    )?;
    let required = app.policy.allowance_quorum(&allowance.terms().operation);
    let signed = SignedAllowance {
        allowance,
        required,
        signatures: vec![AllowanceSignature {
            principal: session.principal.clone(),
            signature: armored,
        }],
    };
    // An operation that needs more approvers than one: this signature proposes it, and the
    // others sign it from the list.
    let report = app
        .blocking(move |gate| {
            if required > 1 {
                gate.propose_allowance(signed)
            } else {
                gate.allow(signed)
            }
        })
        .await
        .map_err(|e| gate_refusal(&e))?;
    let aid = report.allowance.allowance.id();
    Ok((aid, granted_words(aid, report.signatures_missing)))
}

/// What the page says of an allowance just signed: granted, or how many signatures it
/// still needs and where they are made.
fn granted_words(aid: RequestId, missing: u32) -> String {
    match missing {
        0 => format!("allowance {aid} granted"),
        1 => format!(
            "allowance {aid} proposed: it needs 1 more approver's signature; they sign it from \
             the allowances page"
        ),
        n => format!(
            "allowance {aid} proposed: it needs {n} more approvers' signatures; they sign it \
             from the allowances page"
        ),
    }
}

/// `GET /allowances`: every allowance, with its uses and budget left.
pub(crate) async fn list(State(app): State<Shared>, headers: HeaderMap) -> Response {
    let session = match app.signed_in(&headers, "/allowances") {
        Ok(session) => session,
        Err(redirect) => return redirect,
    };
    match app.blocking(approval_gate::Gate::allowances).await {
        Ok(all) => {
            let body = allow_html::list(&all, &session.principal);
            let page = html::page("Allowances", &App::viewer(&session), &body);
            (html_type(), page).into_response()
        }
        Err(error) => gate_refusal(&error).into_response(),
    }
}

/// `POST /allowances/{id}/revoke`: a signed-in POST, as deny and revoke: it takes authority
/// away.
pub(crate) async fn revoke(
    State(app): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecisionForm>,
) -> Response {
    let result = async {
        let id = parse_id(&id)?;
        let session = app.post_session(&headers, Some(&form.csrf))?;
        let decision = Decision::by(format!("{} (web)", session.principal)).reason(&form.reason);
        app.blocking(move |gate| gate.revoke_allowance(id, &decision))
            .await
            .map_err(|e| gate_refusal(&e))?;
        Ok::<_, Refused>(())
    }
    .await;
    match result {
        Ok(()) => Redirect::to("/allowances").into_response(),
        Err(refused) => refused.into_response(),
    }
}
