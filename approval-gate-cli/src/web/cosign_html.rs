//! The page an approver co-signs an allowance on: the allowance in words, as the store holds
//! it, who signed it so far and how many more must, and the passkey button. Every string of
//! the allowance goes through [`text`], as an agent's does.

use std::fmt::Write as _;

use approval_gate::AllowanceReport;

use super::allow_html::awaiting;
use super::html::{attr, text};

/// What the sign page shows and its button carries.
pub(crate) struct SignPage<'a> {
    /// The allowance as the store holds it.
    pub(crate) report: &'a AllowanceReport,
    /// The challenge of the statement this approver signs, base64url.
    pub(crate) challenge: String,
    pub(crate) rp_id: &'a str,
    pub(crate) credentials: String,
}

/// The sign page: the words first, then the button that signs exactly that.
pub(crate) fn page(page: &SignPage<'_>) -> String {
    let report = page.report;
    let signed = &report.allowance;
    let id = signed.allowance.id();
    let signers: Vec<&str> = signed
        .signatures
        .iter()
        .map(|s| s.principal.as_str())
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<h1>Sign allowance {id}</h1><section class=\"allowance\"><h2>You would allow, with \
         the approvers who signed it</h2><ul id=\"allowance-words\">"
    );
    for line in signed.allowance.describe() {
        let _ = write!(out, "<li>{}</li>", text(&line));
    }
    let _ = write!(
        out,
        "</ul><p class=\"proposal\">{} needs {} approvers; signed by {}, {}. Until it has them \
         all it approves nothing; with yours it approves what it allows, counting each use, \
         until it is revoked or its window ends.</p>\
         <button id=\"cosign\" class=\"approve\" data-url=\"/allowances/{id}/sign\" \
         data-challenge=\"{}\" data-rp=\"{}\" data-credentials=\"{}\">Sign this allowance \
         with passkey</button><p id=\"cosign-result\" class=\"result\" role=\"status\"></p>\
         </section>",
        text(&signed.allowance.terms().operation),
        signed.required,
        text(&signers.join(", ")),
        awaiting(report.signatures_missing),
        attr(&page.challenge),
        attr(page.rp_id),
        attr(&page.credentials),
    );
    out
}
