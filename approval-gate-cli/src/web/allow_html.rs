//! The allowance pages: the offer made from a request (its constraints and bounds in a form,
//! the allowance in words, the passkey button), and the list of allowances with revoke.
//! Every string from a payload or an allowance goes through [`text`], as an agent's does.

use std::fmt::Write as _;

use approval_gate::allowance::{Allowance, MAX_WINDOW};
use approval_gate::{AllowanceReport, RequestId};
use serde_json::Value;

use super::html::{attr, text};

/// The longest window the page offers, in hours: the library's cap of seven days.
pub(crate) const MAX_HOURS: u64 = MAX_WINDOW.as_secs() / 3600;

/// A string or integer of the payload: its pointer, its value, whether the offer keeps it.
pub(crate) type Field = (String, Value, bool);

/// What the offer page shows and the button carries.
pub(crate) struct Offer<'a> {
    /// The request it is made from.
    pub(crate) id: RequestId,
    /// The allowance as offered (its JSON goes back with the assertion).
    pub(crate) allowance: &'a Allowance,
    /// Each string or integer of the payload: its pointer, its value, whether it is kept.
    pub(crate) fields: &'a [Field],
    pub(crate) uses: u32,
    pub(crate) hours: u64,
    /// How many approvers must sign it.
    pub(crate) required: u32,
    /// How many approvals the request itself needs, and has counted so far.
    pub(crate) request_required: u32,
    pub(crate) request_counted: u32,
    /// The allowance statement's challenge, base64url.
    pub(crate) challenge: String,
    /// The request's decision statement's challenge, base64url; `None` if this approver
    /// has approved the request already (the passkey is asked once, for the allowance).
    pub(crate) approve_challenge: Option<String>,
    pub(crate) rp_id: &'a str,
    pub(crate) credentials: String,
}

/// The offer: a form (GET, so changing it makes a new offer) and, below, the allowance in
/// words and the button that signs exactly that.
pub(crate) fn offer(offer: &Offer<'_>) -> String {
    let id = offer.id;
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1>Approve <a href=\"/requests/{id}\">{id}</a> and allow more like it</h1>\
         <form class=\"allow-terms\" method=\"get\" action=\"/requests/{id}/allow\">\
         <fieldset><legend>Each request it approves must have exactly</legend>"
    );
    for (pointer, value, kept) in offer.fields {
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" name=\"c\" value=\"{}\"{}> <code>{}</code> = \
             <code>{}</code></label><br>",
            attr(pointer),
            if *kept { " checked" } else { "" },
            text(pointer),
            text(&value.to_string()),
        );
    }
    let _ = write!(
        out,
        "</fieldset><label>Uses <input type=\"number\" name=\"uses\" min=\"1\" value=\"{}\">\
         </label> <label>For hours <input type=\"number\" name=\"hours\" min=\"1\" \
         max=\"{MAX_HOURS}\" value=\"{}\"></label> <button>Show what I would allow</button>\
         </form>",
        offer.uses, offer.hours
    );
    out.push_str(
        "<section class=\"allowance\"><h2>You would allow</h2><ul id=\"allowance-words\">",
    );
    for line in offer.allowance.describe() {
        let _ = write!(out, "<li>{}</li>", text(&line));
    }
    let terms = offer.allowance.to_json().to_string();
    out.push_str("</ul>");
    if offer.required > 1 {
        let _ = write!(
            out,
            "<p class=\"proposal\">{} needs {} approvers: your signature proposes this \
             allowance; it approves nothing until {} it on the \
             <a href=\"/allowances\">allowances page</a>.</p>",
            text(&offer.allowance.terms().operation),
            offer.required,
            others(offer.required - 1),
        );
    }
    let _ = write!(out, "<p>{}</p>", prompts(offer));
    let approve = offer
        .approve_challenge
        .as_ref()
        .map_or_else(String::new, |challenge| {
            format!(
                " data-approve-url=\"/requests/{id}/approve\" data-approve-challenge=\"{}\"",
                attr(challenge)
            )
        });
    let _ = write!(
        out,
        "<button id=\"allow\" class=\"approve\" data-url=\"/requests/{id}/allow\"{approve} \
         data-challenge=\"{}\" data-rp=\"{}\" data-credentials=\"{}\" \
         data-allowance=\"{}\">{} with passkey</button>\
         <p id=\"allow-result\" class=\"result\" role=\"status\"></p></section>",
        attr(&offer.challenge),
        attr(offer.rp_id),
        attr(&offer.credentials),
        attr(&terms),
        if offer.required > 1 {
            "Propose the allowance and approve"
        } else {
            "Approve and allow"
        },
    );
    out
}

/// "awaiting 1 more signature", "awaiting 2 more signatures".
pub(crate) fn awaiting(missing: u32) -> String {
    let plural = if missing == 1 { "" } else { "s" };
    format!("awaiting {missing} more signature{plural}")
}

/// "another approver signs", "2 other approvers sign".
fn others(n: u32) -> String {
    if n == 1 {
        "another approver signs".to_owned()
    } else {
        format!("{n} other approvers sign")
    }
}

/// What the passkey prompts of the offer do: the first signs (or proposes) the allowance,
/// the second approves the request, which may be only one of its approvals, unless this
/// approver has approved it already.
fn prompts(offer: &Offer<'_>) -> String {
    let id = offer.id;
    let first = if offer.required > 1 {
        "to propose the allowance above"
    } else {
        "for the allowance above"
    };
    if offer.approve_challenge.is_none() {
        return format!(
            "Your passkey is asked once, {first}: you have approved request {id} already."
        );
    }
    let mut words =
        format!("Your passkey is asked twice: first {first}, then to approve request {id}.");
    let (required, counted) = (offer.request_required, offer.request_counted);
    if required > 1 {
        let after = required.saturating_sub(counted).saturating_sub(1);
        let _ = write!(
            words,
            " The request itself needs {required} approvals: yours is one of them"
        );
        if after > 0 {
            let _ = write!(
                words,
                ", and it stays pending until {} approve{} it too.",
                if after == 1 {
                    "another approver".to_owned()
                } else {
                    format!("{after} more approvers")
                },
                if after == 1 { "s" } else { "" }
            );
        } else {
            words.push_str(", the last it needs.");
        }
    }
    words
}

/// The list of allowances: state, uses and budget left, who signed, the words; revoke for
/// an active one or a proposal; for a proposal `viewer` has not signed, the way to sign it.
pub(crate) fn list(all: &[AllowanceReport], viewer: &str) -> String {
    let mut out = String::from("<h1>Allowances</h1>");
    if all.is_empty() {
        out.push_str("<p>No allowances.</p>");
        return out;
    }
    out.push_str("<ul class=\"allowances\">");
    for report in all {
        let allowance = &report.allowance.allowance;
        let id = allowance.id();
        let (state, words) = if report.revoked {
            ("revoked", "revoked".to_owned())
        } else if report.ended {
            ("ended", "ended".to_owned())
        } else if report.signatures_missing > 0 {
            ("proposed", awaiting(report.signatures_missing))
        } else {
            ("active", "active".to_owned())
        };
        let _ = write!(
            out,
            "<li class=\"allowance {state}\" id=\"allowance-{id}\"><b>{id}</b> {words}, \
             {} uses so far",
            report.usage.uses
        );
        if let Some(left) = report.uses_left() {
            let _ = write!(out, ", <span class=\"uses-left\">{left}</span> uses left");
        }
        if let Some(left) = report.budget_left() {
            let _ = write!(
                out,
                ", <span class=\"budget-left\">{left}</span> budget left"
            );
        }
        let signers: Vec<&str> = report
            .allowance
            .signatures
            .iter()
            .map(|s| s.principal.as_str())
            .collect();
        let _ = write!(out, "; signed by {}<ul>", text(&signers.join(", ")));
        for line in allowance.describe() {
            let _ = write!(out, "<li>{}</li>", text(&line));
        }
        out.push_str("</ul>");
        let proposed = state == "proposed";
        if proposed && !signers.contains(&viewer) {
            let _ = write!(
                out,
                "<p><a class=\"cosign\" href=\"/allowances/{id}/sign\">Sign this allowance</a>\
                 </p>"
            );
        }
        if report.is_active() || proposed {
            let _ = write!(
                out,
                "<form class=\"revoke\" method=\"post\" action=\"/allowances/{id}/revoke\">\
                 <label>Reason <input name=\"reason\" maxlength=\"1000\" autocomplete=\"off\">\
                 </label><button>Revoke the allowance</button>\
                 <output class=\"result\" role=\"status\"></output></form>"
            );
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>");
    out
}
