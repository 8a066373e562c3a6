//! Messages for the channels' tests, the hostile actions among them: what an agent could
//! write to forge a link, a mention, an "approved" line, a header or markup in a message.

use super::super::message::{Delivery, Kind, Message};

/// The request every test message is about.
pub(crate) const ID: &str = "a1b2c3d4e5f6";
/// Its page.
pub(crate) const LINK: &str = "https://approvals.example.com/requests/a1b2c3d4e5f6";
/// Its delivery key on a channel named `team`.
pub(crate) const KEY: &str = "a1b2c3d4e5f6.team.filed";

/// Actions an agent might write to make a message lie. The 10,000-character one is
/// [`long_action`].
pub(crate) const HOSTILE: &[&str] = &[
    "<!channel> pay now",
    "<https://evil.example|Open the request>",
    "*APPROVED* by alice",
    "</b><script>alert(1)</script>",
    "x\r\nBcc: victim@example.com",
    "x\nSubject: approved\n\n<b>approved</b>",
    "@here",
    "pay \u{202e}0001$ \u{2066}to mallory\u{2069} \u{200b}\u{200d}\u{feff}now",
    "[Open the request](https://evil.example) `code` _it_ ~gone~",
];

/// 10,000 characters, `&` and `<` among them, so a cut and an escape meet.
pub(crate) fn long_action() -> String {
    "a<&".repeat(3_334)[..10_000].to_owned()
}

/// A filed request's message with `action`, every other agent field hostile too, linking to
/// [`LINK`] if `link`.
pub(crate) fn message(action: &str, link: bool) -> Message {
    Message {
        id: ID.parse().unwrap(),
        kind: Kind::Filed,
        operation: Some("payments.refund_*<!here>".to_owned()),
        action: action.to_owned(),
        requester: Some("agent <@U123> *bot*\r\nX-Evil: 1".to_owned()),
        digest: Some("0123456789abcdef".to_owned()),
        expires_at: "2026-12-07T01:00:00Z".to_owned(),
        link: link.then(|| LINK.to_owned()),
    }
}

/// The first attempt of [`KEY`].
pub(crate) fn first() -> Delivery<'static> {
    Delivery {
        key: KEY,
        attempt: 1,
    }
}

/// Whether `text` holds a character that hides or reorders text, or breaks a line.
pub(crate) fn hides_or_breaks(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c, '\r' | '\n' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' | '\u{feff}')
    })
}
