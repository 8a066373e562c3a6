//! What a person does, in a real browser: headless Chromium with its virtual authenticator
//! enrolls approvers, signs in, approves a 2-of-2 request from two browsers so that the smtp
//! example sends exactly once, denies so that it sends nothing, and reads hostile requests
//! escaped, on a phone's width and a desktop's.
//!
//! The screenshots in docs/ come from here: `APPROVAL_GATE_SCREENSHOTS=docs cargo test -p
//! approval-gate-tests --test web browser` writes them there; otherwise they go to a
//! temporary directory, checked all the same.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use approval_gate::{CanonicalPayload, EffectiveStatus, NewRequest, RequestId};
use approval_gate_tests::http::free_port;
use serde_json::json;

use crate::cdp::{Authenticator, Browser, Page};
use crate::server::{Served, enroll_link_and_code};
use crate::smtp_run::start_with;
use crate::smtp_sink::SmtpSink;

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// Enrolls a passkey for `principal` with the page's virtual authenticator, as the approver
/// would: `passkey enroll`'s link opened, the button pressed. The line it printed, for
/// approving on `http://localhost:PORT`.
pub(crate) fn enroll(page: &Page, principal: &str, port: u16) -> String {
    let serve_url = format!("http://localhost:{port}");
    let (mut child, link, code) = enroll_link_and_code(principal, &["--serve-url", &serve_url]);
    page.navigate(&link);
    // The human types the code the terminal shows beside the link.
    page.fill("#enroll-code", &code.expect("the terminal shows a code"));
    page.click("#enroll");
    page.wait_for(
        "document.querySelector('#enroll-result').textContent.includes('Passkey created')",
        WAIT,
    );
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(status.success(), "enroll failed: {stdout}");
    stdout.trim().to_owned()
}

/// A page of its own browser context (its own cookies) with its own virtual authenticator
/// (which stays with the page until removed).
pub(crate) fn approver_page(browser: &Browser) -> (Page, Authenticator) {
    let page = browser.new_context().new_page();
    let authenticator = page.add_virtual_authenticator();
    (page, authenticator)
}

/// Enrolls alice's passkey with `page`'s authenticator, then serves a fresh store whose
/// approvers file trusts that line alone (`*=1`), on the port the line names.
pub(crate) fn serve_for_alice(page: &Page) -> Served {
    let port = free_port();
    let line = enroll(page, "alice@example.com", port);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let approvers = tmp.path().join("approvers");
    std::fs::write(&approvers, line + "\n").unwrap();
    approval_gate::Gate::open(&store).unwrap();
    let store = store.display().to_string();
    Served::start_on(tmp, store, approvers, "*=1", port, &[])
}

/// Signs the page in at `origin` with its passkey.
pub(crate) fn sign_in(page: &Page, origin: &str) {
    page.navigate(&format!("{origin}/"));
    assert!(page.url().contains("/signin"), "{}", page.url());
    page.expect_navigation(|| page.click("#signin"));
    assert_eq!(page.url(), format!("{origin}/"));
}

/// Approves `id` on its page; the page as reloaded after the approval.
fn approve(page: &Page, origin: &str, id: RequestId) -> String {
    page.navigate(&format!("{origin}/requests/{id}"));
    page.expect_navigation(|| page.click("#approve"));
    page.eval("document.body.innerText")
        .as_str()
        .unwrap()
        .to_owned()
}

fn screenshots() -> (Option<tempfile::TempDir>, PathBuf) {
    if let Some(dir) = std::env::var_os("APPROVAL_GATE_SCREENSHOTS") {
        let dir = PathBuf::from(dir);
        if dir.is_absolute() {
            return (None, dir);
        }
        return (
            None,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir),
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    (Some(tmp), dir)
}

/// A screenshot at `width` CSS pixels that is a PNG of that width, with nothing wider than
/// the viewport (no sideways scrolling on a phone).
fn shoot(page: &Page, width: u32, mobile: bool, path: &Path) {
    page.set_viewport(width, if mobile { 740 } else { 900 }, mobile);
    let overflow = page.eval("document.documentElement.scrollWidth - window.innerWidth");
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "{} is wider than {width} px by {overflow} px",
        page.url()
    );
    let png = page.screenshot_png(path);
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // The page's width: the viewport's, less a desktop's scrollbar.
    let shot = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert!(shot <= width && width - shot <= 20, "{shot} of {width} px");
}

/// Two approvers in two browsers, each with a passkey, a 2-of-2 policy: the first approval
/// sends nothing, the second sends the email exactly once.
#[test]
fn two_approvers_in_two_browsers_send_the_email_exactly_once() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (alice_page, _alice_key) = approver_page(&browser);
    let (bob_page, _bob_key) = approver_page(&browser);
    let port = free_port();
    let lines = [
        enroll(&alice_page, "alice@example.com", port),
        enroll(&bob_page, "bob@example.com", port),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let approvers = tmp.path().join("approvers");
    std::fs::write(&approvers, lines.join("\n") + "\n").unwrap();
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = format!("smtp://{}", sink.addr());
    let signers = approvers.to_str().unwrap();
    let mut run = start_with(
        &["--approvers", signers, "--quorum", "2"],
        tmp,
        sink,
        &[("SMTP_URL", url.as_ref())],
    );
    let served = Served::start_on(
        tempfile::tempdir().unwrap(),
        run.store.display().to_string(),
        approvers,
        "smtp.send=2,*=1",
        port,
        &[],
    );
    let origin = served.origin.clone();

    sign_in(&alice_page, &origin);
    alice_page.wait_for(&format!("document.querySelector('#r-{}')", run.id), WAIT);
    let (_keep, dir) = screenshots();
    shoot(&alice_page, 360, true, &dir.join("web-list-phone.png"));
    let first = approve(&alice_page, &origin, run.id);
    assert!(first.contains("1 of 2 needed"), "{first}");
    assert!(
        first.contains("alice@example.com with a passkey"),
        "{first}"
    );
    let pending = served.agent().status(run.id).unwrap();
    assert_eq!(pending.effective_status(), EffectiveStatus::Pending);
    assert_eq!(std::fs::read_dir(run.sink.outbox()).unwrap().count(), 0);

    sign_in(&bob_page, &origin);
    bob_page.navigate(&format!("{origin}/requests/{}", run.id));
    shoot(&bob_page, 1280, false, &dir.join("web-request-desktop.png"));
    let second = approve(&bob_page, &origin, run.id);
    assert!(second.contains("2 of 2 needed"), "{second}");

    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 0, "{printed}");
    assert_eq!(delivered.len(), 1, "{printed}");
    assert!(printed.contains("sent to alice@example.com"), "{printed}");
    for page in [&alice_page, &bob_page] {
        page.assert_no_errors();
        let session = page
            .cookies()
            .into_iter()
            .find(|c| c.name == "__Host-approval-gate-session")
            .expect("a session cookie");
        assert!(session.http_only && session.secure, "{session:?}");
        assert_eq!(session.same_site.as_deref(), Some("Strict"));
    }
    browser.close();
}

/// Denied on the page: the example sends nothing, and says why.
#[test]
fn denied_on_the_page_the_executor_sends_nothing() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (page, _key) = approver_page(&browser);
    let port = free_port();
    let line = enroll(&page, "alice@example.com", port);
    let tmp = tempfile::tempdir().unwrap();
    let approvers = tmp.path().join("approvers");
    std::fs::write(&approvers, line + "\n").unwrap();
    let sink = SmtpSink::start(&tmp.path().join("outbox")).unwrap();
    let url = format!("smtp://{}", sink.addr());
    let signers = approvers.to_str().unwrap();
    let mut run = start_with(
        &["--approvers", signers],
        tmp,
        sink,
        &[("SMTP_URL", url.as_ref())],
    );
    let served = Served::start_on(
        tempfile::tempdir().unwrap(),
        run.store.display().to_string(),
        approvers,
        "*=1",
        port,
        &[],
    );
    sign_in(&page, &served.origin);
    page.navigate(&format!("{}/requests/{}", served.origin, run.id));
    page.fill(".deny input[name=reason]", "not this invoice");
    page.expect_navigation(|| page.click(".deny button"));
    let shown = page.text("h1");
    assert!(shown.contains("denied"), "{shown}");
    let (code, delivered, printed) = run.finish();
    assert_eq!(code, 1, "{printed}");
    assert!(delivered.is_empty(), "{printed}");
    assert!(
        printed.contains("not sent: the request is denied"),
        "{printed}"
    );
    page.assert_no_errors();
    browser.close();
}

/// A hostile request, live on the list and in full on its page: nothing in it is markup, the
/// invisible and look-alike characters are escapes, the page stays within a phone's width,
/// and an approver whose authenticator fails user verification approves nothing.
#[test]
fn a_hostile_request_arrives_live_and_renders_escaped() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let (page, authenticator) = approver_page(&browser);
    let served = serve_for_alice(&page);
    sign_in(&page, &served.origin);
    page.wait_for("document.body.dataset.live === 'open'", WAIT);

    // Filed while the page is open: it appears without a reload.
    let payload = json!({
        "to": "<img src=x onerror=alert(1)>",
        "memo": "\u{200b}hidden\u{2066} \u{202e}evil",
        "padding": "x".repeat(approval_gate::limits::MAX_PAYLOAD_BYTES - 200),
    });
    let id = served
        .agent()
        .request_approval(
            NewRequest::new(
                "pay <script>alert(1)</script> \u{202e}0001\u{202c} to ex\u{430}mple.com",
                "\"><script>alert(2)</script>",
            )
            .payload(CanonicalPayload::from_value(&payload).unwrap()),
        )
        .unwrap()
        .request
        .id();
    page.wait_for(&format!("document.querySelector('#r-{id}')"), WAIT);
    // A decision made elsewhere takes a request off the list, without a reload either.
    let other = served
        .agent()
        .request_approval(NewRequest::new("decided elsewhere", "test"))
        .unwrap()
        .request
        .id();
    page.wait_for(&format!("document.querySelector('#r-{other}')"), WAIT);
    served
        .agent()
        .deny(other, &approval_gate::Decision::by("bob"))
        .unwrap();
    page.wait_for(&format!("!document.querySelector('#r-{other}')"), WAIT);
    let listed = page.text(&format!("#r-{id}"));
    assert!(
        listed.contains("<script>alert(1)</script>"),
        "shown as text: {listed}"
    );
    assert!(listed.contains(r"\u{202e}0001\u{202c}"), "{listed}");
    assert!(listed.contains(r"ex\u{430}mple.com"), "{listed}");

    page.navigate(&format!("{}/requests/{id}", served.origin));
    let scripts = page.eval("document.scripts.length");
    assert_eq!(scripts, 1, "only the page's own script");
    assert_eq!(page.eval("document.images.length"), 0);
    let text = page.eval("document.body.innerText");
    let text = text.as_str().unwrap();
    for raw in ["\u{202e}", "\u{200b}", "\u{2066}", "\u{430}"] {
        assert!(!text.contains(raw), "{raw:?} reached the screen raw");
    }
    assert!(
        text.contains(r"\u200bhidden\u2066 \u202eevil"),
        "{}",
        &text[..500]
    );
    assert!(text.contains("Look-alike letters"));
    let (_keep, dir) = screenshots();
    shoot(&page, 360, true, &dir.join("web-hostile-phone.png"));

    // No user verification (no PIN, no fingerprint): the browser refuses, nothing is signed.
    authenticator.set_user_verified(false);
    page.set_viewport(1280, 900, false);
    page.navigate(&format!("{}/requests/{id}", served.origin));
    page.click("#approve");
    page.wait_for(
        "document.querySelector('#approve-result').textContent.includes('Nothing was approved')",
        WAIT,
    );
    let status = served.agent().status(id).unwrap().effective_status();
    assert_eq!(status, EffectiveStatus::Pending);
    page.assert_no_errors();
    browser.close();
}
