//! The agent-supplied text in a message, made safe for each channel and cut at a stated length.
//!
//! The request's action, operation and requester are written by the agent. A channel that
//! renders markup would otherwise let the agent forge a link, a mention or a fake "approved"
//! line in the approver's own chat. Each channel escapes by its own rules, after cutting.
//!
//! Every agent-supplied string goes out as [`shown`] makes it: first the terminal's and the
//! page's escaping ([`escape`]: control, bidi, zero-width and other invisible characters, and
//! look-alike letters, as visible `\u{…}` escapes; line breaks as `\n`), then cut at a stated
//! length. So a message shows what `approval-gate show` and the page show, on one line, and
//! no right-to-left override or zero-width space can hide or reorder a word of it. Then each
//! channel applies its own markup's rules: [`slack_mrkdwn`] where Slack parses mrkdwn,
//! [`html`] in an email's HTML part; JSON strings (Slack's `plain_text`, ntfy) need only
//! JSON's own escaping, which `serde_json` does.

use super::message::Kind;
use crate::term::display::escape;

/// The most characters of the agent's action a message shows; the page shows it whole.
pub(crate) const ACTION_SHOWN: usize = 200;
/// The most characters of any other agent-supplied field a message shows.
pub(crate) const FIELD_SHOWN: usize = 80;

/// What a message says in place of the link when `public_url` is not set.
pub(crate) const NO_LINK: &str = "no public_url set: run approval-gate serve and set public_url";

/// What every message says of deciding: only the page, with a passkey, approves.
pub(crate) const DECIDE_ON_THE_PAGE: &str =
    "Approving needs your passkey on the request's page; nothing in this message decides.";

/// A message's first words, by why it is sent (at most 50 characters, so a header with an
/// operation of [`FIELD_SHOWN`] fits Slack's 150).
pub(crate) fn headline(kind: Kind) -> &'static str {
    match kind {
        Kind::Filed => "Approval requested",
        Kind::Reminder => "Reminder: approval expires soon",
        Kind::Escalation => "Escalated: approval still undecided",
    }
}

/// `text` cut to at most `max` characters, ending in `…` when cut, with control characters
/// (line breaks included) each replaced by a space: a message's fields are one line each.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    let mut chars = text.chars().map(|c| if c.is_control() { ' ' } else { c });
    for _ in 0..max {
        match chars.next() {
            Some(c) => out.push(c),
            None => return out,
        }
    }
    if chars.next().is_some() {
        out.pop();
        out.push('…');
    }
    out
}

/// Agent-supplied `raw` as a message shows it: [`escape`]d, then cut to at most `max`
/// characters, ending in `…` when cut. A cut never splits an escape (`\u{202e}` is kept whole
/// or left out whole), so what is shown never reads as a different character.
pub(crate) fn shown(raw: &str, max: usize) -> String {
    /// Where the reading of the escaped text is.
    #[derive(Clone, Copy)]
    enum At {
        Text,
        Backslash,
        Braces,
    }
    let escaped = escape(raw);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut out = String::with_capacity(max * 4);
    let mut at = At::Text;
    // Where the escape being read began in `out`, while one is.
    let mut open = None;
    for c in escaped.chars().take(max.saturating_sub(1)) {
        at = match (at, c) {
            (At::Text, '\\') => {
                open = Some(out.len());
                At::Backslash
            }
            (At::Text, _) => At::Text,
            (At::Backslash, 'u') => At::Braces,
            (At::Backslash, _) | (At::Braces, '}') => {
                open = None;
                At::Text
            }
            (At::Braces, _) => At::Braces,
        };
        out.push(c);
    }
    if let Some(start) = open {
        out.truncate(start);
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// `text` (already [`shown`]) for a Slack `mrkdwn` text object or a message's `text`
/// fallback, where Slack parses markup.
///
/// `&`, `<` and `>` become `&amp;`, `&lt;` and `&gt;`, as Slack's formatting reference says
/// (<https://docs.slack.dev/messaging/formatting-message-text#escaping>): so no `<URL|label>`
/// link, `<!here>` or `<@U123>` mention and no `>` quote. mrkdwn has no escape for its
/// emphasis characters, so `*`, `_`, `~` and `` ` `` become look-alikes that Slack does not
/// parse (`∗` U+2217, `ˍ` U+02CD, `∼` U+223C, `ˋ` U+02CB), and `@` becomes `＠` (U+FF20), so
/// no `*APPROVED*` in bold, no code span and no `@here`, whatever Slack's `link_names` does.
pub(crate) fn slack_mrkdwn(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '*' => out.push('\u{2217}'),
            '_' => out.push('\u{2cd}'),
            '~' => out.push('\u{223c}'),
            '`' => out.push('\u{2cb}'),
            '@' => out.push('\u{ff20}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` for HTML text and double- or single-quoted attribute values: `&`, `<`, `>`, `"`
/// and `'` as entities, so nothing in it is markup.
pub(crate) fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
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

#[cfg(test)]
mod tests {
    use super::{cut, html, shown, slack_mrkdwn};

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("send", 10), "send");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
        assert_eq!(cut("a\nb\u{1b}c", 10), "a b c");
    }

    #[test]
    fn shown_makes_hidden_characters_visible_on_one_line() {
        assert_eq!(
            shown("x\r\nBcc: v@example.com", 80),
            "x\\r\\nBcc: v@example.com"
        );
        assert_eq!(shown("pay \u{202e}lla", 80), "pay \\u{202e}lla");
        assert_eq!(shown("a\u{200b}b", 80), "a\\u{200b}b");
        assert_eq!(shown("Müller", 80), "Müller");
    }

    #[test]
    fn shown_cuts_at_the_stated_length_and_never_inside_an_escape() {
        let long = "a".repeat(10_000);
        let out = shown(&long, 200);
        assert_eq!(out.chars().count(), 200);
        assert!(out.ends_with('…'));
        // "abc" then an 8-character escape: cut inside it, the whole escape goes.
        assert_eq!(shown("abc\u{202e}defghij", 8), "abc…");
        assert_eq!(shown("abc\u{202e}defghij", 12), "abc\\u{202e}…");
        assert_eq!(shown("ab\\cdefgh", 4), "ab…");
        assert_eq!(shown("abc", 0), "");
    }

    #[test]
    fn slack_mrkdwn_leaves_no_link_mention_or_emphasis() {
        assert_eq!(
            slack_mrkdwn("<https://evil.example|Open the request>"),
            "&lt;https://evil.example|Open the request&gt;"
        );
        assert_eq!(
            slack_mrkdwn("<!channel> pay & go"),
            "&lt;!channel&gt; pay &amp; go"
        );
        let out = slack_mrkdwn("*APPROVED* by _alice_ ~no~ `x` @here");
        for c in ['*', '_', '~', '`', '@', '<', '>'] {
            assert!(!out.contains(c), "{out}");
        }
    }

    #[test]
    fn html_leaves_no_markup() {
        assert_eq!(
            html("</b><script>alert('1')</script> & \"x\""),
            "&lt;/b&gt;&lt;script&gt;alert(&#39;1&#39;)&lt;/script&gt; &amp; &quot;x&quot;"
        );
    }
}
