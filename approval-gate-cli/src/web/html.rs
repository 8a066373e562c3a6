//! The pages, rendered on the server.
//!
//! Every string an agent chose goes through [`text`]: first the terminal's escaping
//! ([`escape`]: control, bidi, zero-width and other invisible characters, and look-alike
//! letters, as visible `\u{…}` escapes), then HTML's. So the page shows exactly what the
//! terminal shows, nothing in it is markup, and the payload is shown whole
//! ([`payload_pretty`]: valid JSON, canonicalizing to the approved bytes). The pages carry no
//! inline script or style: the Content-Security-Policy forbids both.

use std::fmt::Write as _;

use approval_gate::{
    AuditRecord, EffectiveStatus, ListItem, Request, Standing, StatusReport, Timestamp,
};

use crate::term::display::{escape, json_safe, payload_pretty};
use crate::term::render;

/// HTML-escapes `raw` for text and for attribute values in double quotes.
pub(crate) fn attr(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Agent-supplied text as the page shows it: escaped as on the terminal, then for HTML.
pub(crate) fn text(raw: &str) -> String {
    attr(&escape(raw))
}

/// Who is looking, for the header and the forms. No page carries the session's page key:
/// a copied session cookie reads the pages, and must find no key in them.
pub(crate) struct Viewer<'a> {
    /// The signed-in principal.
    pub(crate) principal: Option<&'a str>,
}

/// A whole page around `body`.
pub(crate) fn page(title: &str, viewer: &Viewer<'_>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    out.push_str(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
",
    );
    let _ = write!(out, "<title>{} · approval-gate</title>", attr(title));
    out.push_str(
        "<link rel=\"stylesheet\" href=\"/static/app.css\">\
         <script src=\"/static/app.js\" defer></script></head>",
    );
    out.push_str("<body><header><a class=\"home\" href=\"/\">approval-gate</a>");
    match viewer.principal {
        Some(principal) => {
            let _ = write!(
                out,
                "<form class=\"who\" method=\"post\" action=\"/signout\">\
                 <span>signed in as <b>{}</b></span><button>Sign out</button></form>",
                text(principal),
            );
        }
        None => out.push_str("<a class=\"who\" href=\"/signin\">Sign in</a>"),
    }
    out.push_str("</header><main>");
    out.push_str(body);
    out.push_str("</main></body></html>\n");
    out
}

/// The pending list's body: the live region the page's script refreshes.
pub(crate) fn pending(items: &[ListItem], now: Timestamp, more: bool) -> String {
    let mut out = String::with_capacity(items.len() * 600 + 256);
    let requests = items.iter().filter(|i| i.report().is_some()).count();
    let _ = write!(
        out,
        "<p class=\"count\">{requests} pending request{}</p>",
        if requests == 1 { "" } else { "s" }
    );
    if items.is_empty() {
        out.push_str("<p class=\"empty\">Nothing is waiting for a decision.</p>");
    }
    out.push_str("<ul class=\"requests\">");
    for item in items {
        match item {
            ListItem::Request(report) => pending_item(&mut out, report, now),
            ListItem::Unreadable(record) => {
                let _ = write!(
                    out,
                    "<li class=\"request unreadable\"><b>{}</b> cannot be read: {} \
                     (run <code>approval-gate doctor</code>)</li>",
                    record.id(),
                    text(record.problem())
                );
            }
        }
    }
    out.push_str("</ul>");
    if more {
        out.push_str("<p class=\"more\">More are waiting than one page shows: decide these first, or use <code>approval-gate list</code>.</p>");
    }
    out
}

fn pending_item(out: &mut String, report: &StatusReport, now: Timestamp) {
    let request = report.request();
    let id = request.id();
    let _ = write!(
        out,
        "<li class=\"request\" id=\"r-{id}\"><a href=\"/requests/{id}\">\
         <span class=\"action\">{}</span><span class=\"meta\"><code>{id}</code>",
        text(request.action()),
    );
    if let Some(operation) = request.operation() {
        let _ = write!(out, " · <code>{}</code>", text(operation));
    }
    if let Some(by) = request.requested_by() {
        let _ = write!(out, " · by {}", text(by));
    }
    let _ = write!(
        out,
        " · expires {} · {} of {} approvals</span>",
        render::relative(now, request.expires_at()),
        report.counted_approvals(),
        report.required_approvals()
    );
    if !render::lookalike_warnings(request).is_empty() {
        out.push_str("<span class=\"warn\">look-alike letters: read it closely</span>");
    }
    out.push_str("</a></li>");
}

/// What the approve button needs: the challenge for this viewer and the credentials to ask.
pub(crate) struct ApproveButton {
    /// base64url of the decision statement's digest.
    pub(crate) challenge: String,
    /// The RP ID.
    pub(crate) rp_id: String,
    /// base64url credential ids of the viewer's passkeys, comma-separated.
    pub(crate) credentials: String,
}

/// One request in full; `approved_by` is the terminal's line of the allowance that approved
/// it ([`render::allowance::approved_by`], already escaped as agent text), if one did.
pub(crate) fn request(
    report: &StatusReport,
    now: Timestamp,
    viewer: &Viewer<'_>,
    approve: Option<&ApproveButton>,
    approved_by: Option<&str>,
) -> String {
    let request = report.request();
    let status = report.effective_status();
    let id = request.id();
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        "<h1>Request <code>{id}</code> <span class=\"status s-{}\">{}</span></h1>",
        status.as_str(),
        status_words(status)
    );
    let warnings = render::lookalike_warnings(request);
    if !warnings.is_empty() {
        out.push_str("<div class=\"warn\"><b>Look-alike letters</b>: letters that imitate others are shown as escapes.<ul>");
        for warning in &warnings {
            let _ = write!(out, "<li>{}</li>", attr(&warning.to_string()));
        }
        out.push_str("</ul></div>");
    }
    out.push_str("<dl class=\"fields\">");
    field(&mut out, "action", &text(request.action()));
    field(&mut out, "reason", &text(request.reason()));
    optional(&mut out, "requested by", request.requested_by());
    optional(&mut out, "filed by", request.filed_by());
    optional(&mut out, "operation", request.operation());
    field(
        &mut out,
        "created",
        &attr(&request.created_at().to_string()),
    );
    field(
        &mut out,
        "expires",
        &format!(
            "{} ({})",
            attr(&request.expires_at().to_string()),
            render::relative(now, request.expires_at())
        ),
    );
    field(
        &mut out,
        "approvals",
        &format!(
            "{} of {} needed",
            report.counted_approvals(),
            report.required_approvals()
        ),
    );
    optional(&mut out, "decided by", request.decided_by());
    optional(&mut out, "decision reason", request.decision_reason());
    if let Some(line) = approved_by {
        field(
            &mut out,
            "approved by",
            &format!("{} (<a href=\"/allowances\">allowances</a>)", attr(line)),
        );
    }
    match (request.payload(), request.payload_digest()) {
        (Some(payload), Some(digest)) => {
            field(
                &mut out,
                "payload digest",
                &format!("<code>{digest}</code>"),
            );
            out.push_str("</dl><h2>Payload</h2>");
            let _ = write!(
                out,
                "<pre class=\"payload\">{}</pre><dl class=\"fields\">",
                attr(&payload_pretty(payload))
            );
        }
        _ => field(&mut out, "payload", "none"),
    }
    out.push_str("</dl>");
    approvals(&mut out, report);
    let _ = write!(
        out,
        "<p><a href=\"/requests/{id}/audit\">Audit trail of this request</a></p>"
    );
    decisions(&mut out, report, viewer, approve);
    out
}

fn status_words(status: EffectiveStatus) -> &'static str {
    match status {
        EffectiveStatus::Pending => "pending",
        EffectiveStatus::ApprovedUnconsumed => "approved, not yet used",
        EffectiveStatus::ApprovedExpired => "approved, expired unused",
        EffectiveStatus::Consumed => "approved and used",
        EffectiveStatus::Denied => "denied",
        EffectiveStatus::Expired => "expired",
        EffectiveStatus::Revoked => "revoked",
    }
}

fn field(out: &mut String, name: &str, value_html: &str) {
    let _ = write!(out, "<dt>{name}</dt><dd>{value_html}</dd>");
}

fn optional(out: &mut String, name: &str, value: Option<&str>) {
    if let Some(value) = value {
        field(out, name, &text(value));
    }
}

fn approvals(out: &mut String, report: &StatusReport) {
    let request = report.request();
    if request.approvals().is_empty() {
        return;
    }
    out.push_str("<h2>Approvals</h2><ul class=\"approvals\">");
    for (approval, standing) in request.approvals().iter().zip(report.standings()) {
        let kind = if approval.signature().contains("WEBAUTHN") {
            "passkey"
        } else {
            "SSH key"
        };
        let verdict = match standing {
            Standing::Counts => "counts".to_owned(),
            Standing::Repeat => "repeat: counted once".to_owned(),
            other => format!(
                "does not count: {} {}",
                other.as_str(),
                other.detail().unwrap_or_default()
            ),
        };
        let _ = write!(
            out,
            "<li><b>{}</b> with a {kind}, recorded by {} at {}: {}</li>",
            text(approval.principal()),
            text(approval.decided_by()),
            attr(&approval.decided_at().to_string()),
            text(&verdict)
        );
    }
    out.push_str("</ul>");
}

fn decisions(
    out: &mut String,
    report: &StatusReport,
    viewer: &Viewer<'_>,
    approve: Option<&ApproveButton>,
) {
    let status = report.effective_status();
    let id = report.request().id();
    if viewer.principal.is_none() {
        if matches!(
            status,
            EffectiveStatus::Pending | EffectiveStatus::ApprovedUnconsumed
        ) {
            let _ = write!(
                out,
                "<p class=\"signin\"><a href=\"/signin?next=/requests/{id}\">Sign in with your \
                 passkey</a> to decide.</p>"
            );
        }
        return;
    }
    out.push_str("<div class=\"decide\">");
    if status == EffectiveStatus::Pending {
        if approve.is_none() {
            out.push_str(
                "<p class=\"result ok\">Your approval is recorded; it waits for the other \
                 approvers.</p>",
            );
        }
        if let Some(button) = approve {
            let _ = write!(
                out,
                "<button id=\"approve\" class=\"approve\" data-url=\"/requests/{id}/approve\" \
                 data-challenge=\"{}\" data-rp=\"{}\" data-credentials=\"{}\">Approve with \
                 passkey</button><p id=\"approve-result\" class=\"result\" role=\"status\"></p>",
                attr(&button.challenge),
                attr(&button.rp_id),
                attr(&button.credentials),
            );
        }
        if approve.is_some() && report.request().operation().is_some() {
            let _ = write!(
                out,
                "<p><a class=\"allow\" href=\"/requests/{id}/allow\">Approve this and allow \
                 more like it</a></p>"
            );
        }
        decision_form(out, id, "deny", "Deny");
    }
    if status == EffectiveStatus::ApprovedUnconsumed {
        decision_form(out, id, "revoke", "Revoke the approval");
    }
    out.push_str("</div>");
}

fn decision_form(out: &mut String, id: approval_gate::RequestId, verb: &str, label: &str) {
    let _ = write!(
        out,
        "<form class=\"{verb}\" method=\"post\" action=\"/requests/{id}/{verb}\">\
         <label>Reason <input name=\"reason\" maxlength=\"1000\" autocomplete=\"off\"></label>\
         <button>{label}</button><output class=\"result\" role=\"status\"></output></form>"
    );
}

/// A request's audit trail.
pub(crate) fn audit(id: approval_gate::RequestId, records: &[AuditRecord]) -> String {
    let mut out = format!(
        "<h1>Audit trail of <a href=\"/requests/{id}\"><code>{id}</code></a></h1>\
         <ol class=\"audit\">"
    );
    for record in records {
        let details = serde_json::to_string(&record.details).unwrap_or_default();
        let event = serde_json::to_value(record.event).unwrap_or_default();
        let _ = write!(
            out,
            "<li><span class=\"seq\">#{}</span> {} <b>{}</b> <code>{}</code></li>",
            record.seq,
            attr(&record.ts.to_string()),
            attr(event.as_str().unwrap_or("?")),
            attr(&json_safe(&details))
        );
    }
    out.push_str("</ol>");
    if records.is_empty() {
        out.push_str("<p>No line of the audit log names this request.</p>");
    }
    out
}

/// The sign-in page.
pub(crate) fn signin(next: &str) -> String {
    format!(
        "<h1>Sign in</h1><p>Approvers sign in with the passkey they enrolled.</p>\
         <button id=\"signin\" data-next=\"{}\">Sign in with passkey</button>\
         <p id=\"signin-result\" class=\"result\" role=\"status\"></p>",
        attr(next)
    )
}

/// The one-time enrollment page.
pub(crate) fn enroll(principal: &str, token: &str) -> String {
    format!(
        "<h1>Enroll a passkey</h1><p>This registers a passkey for <b>{}</b>. The operator adds \
         the line it prints to the approvers file; until then the passkey approves nothing.</p>\
         <p><label for=\"enroll-code\">The code shown beside this link in the terminal \
         (from the operator, never from this page)</label> <input id=\"enroll-code\" \
         autocomplete=\"off\" spellcheck=\"false\" maxlength=\"16\" \
         placeholder=\"ABCD-EFGH\"></p>\
         <button id=\"enroll\" data-url=\"/enroll/{}\">Create passkey</button>\
         <p id=\"enroll-result\" class=\"result\" role=\"status\"></p>",
        text(principal),
        attr(token)
    )
}

/// A page saying what went wrong.
pub(crate) fn problem(title: &str, message: &str) -> String {
    format!(
        "<h1>{}</h1><p class=\"error\">{}</p>",
        attr(title),
        text(message)
    )
}

/// The request page's title.
pub(crate) fn request_title(request: &Request) -> String {
    format!("Request {}", request.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_entities_and_agent_text_is_escaped_first() {
        assert_eq!(
            attr(r#"<a href="x" onclick='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(
            text("pay\u{202e} <b>5</b>\r\n"),
            r"pay\u{202e} &lt;b&gt;5&lt;/b&gt;\r\n"
        );
        assert_eq!(text("ex\u{430}mple"), r"ex\u{430}mple");
        assert_eq!(text("Müller"), "Müller");
    }

    #[test]
    fn the_page_carries_no_inline_script_or_style() {
        let viewer = Viewer {
            principal: Some("<alice>"),
        };
        let page = page("a <title>", &viewer, "<p>body</p>");
        assert_eq!(page.matches("<script").count(), 1);
        assert!(page.contains("<script src=\"/static/app.js\" defer></script>"));
        assert!(!page.contains("<style"));
        assert!(!page.contains(" style="));
        assert!(!page.contains(" on"));
        assert!(page.contains("&lt;alice&gt;"));
        assert!(!page.contains("csrf"), "no page carries the page key");
        assert!(page.contains("<title>a &lt;title&gt; · approval-gate</title>"));
    }
}
