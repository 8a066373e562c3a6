//! Many tabs of the page in one browser: the browser opens at most six connections to a host
//! over HTTP/1.1, so the live list must not hold one per tab.

use approval_gate::{EffectiveStatus, NewRequest};

use crate::browser::{WAIT, serve_for_alice, sign_in};
use crate::cdp::Browser;

/// Seven list tabs open in one browser: each still follows the store, and a decision taken
/// in an eighth completes.
#[test]
fn seven_list_tabs_leave_room_to_decide() {
    let Some(browser) = Browser::launch() else {
        return;
    };
    let context = browser.new_context();
    let first = context.new_page();
    let _authenticator = first.add_virtual_authenticator();
    let served = serve_for_alice(&first);
    let origin = served.origin.clone();
    sign_in(&first, &origin);
    first.wait_for("document.body.dataset.live", WAIT);

    let mut tabs = vec![first];
    for _ in 1..7 {
        let tab = context.new_page();
        tab.navigate(&format!("{origin}/"));
        tab.wait_for("document.body.dataset.live", WAIT);
        tabs.push(tab);
    }
    // Filed now: every tab shows it without a reload.
    let id = served
        .agent()
        .request_approval(NewRequest::new("pay 5 EUR", "test"))
        .unwrap()
        .request
        .id();
    for tab in &tabs {
        tab.wait_for(&format!("document.querySelector('#r-{id}')"), WAIT);
    }
    // An eighth tab opens the request and denies it.
    let decide = context.new_page();
    decide.navigate(&format!("{origin}/requests/{id}"));
    decide.fill(".deny input[name=reason]", "not this one");
    decide.expect_navigation(|| decide.click(".deny button"));
    let shown = decide.text("h1");
    assert!(shown.contains("denied"), "{shown}");
    assert_eq!(
        served.agent().status(id).unwrap().effective_status(),
        EffectiveStatus::Denied
    );
    // And every list tab takes it off.
    for tab in &tabs {
        tab.wait_for(&format!("!document.querySelector('#r-{id}')"), WAIT);
        tab.assert_no_errors();
    }
    drop(tabs);
    browser.close();
}
