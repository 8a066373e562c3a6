//! The agent-supplied text in a message, made safe for each channel and cut at a stated length.
//!
//! The request's action, operation and requester are written by the agent. A channel that
//! renders markup would otherwise let the agent forge a link, a mention or a fake "approved"
//! line in the approver's own chat. Each channel escapes by its own rules, after cutting.

/// The most characters of the agent's action a message shows; the page shows it whole.
pub(crate) const ACTION_SHOWN: usize = 200;
/// The most characters of any other agent-supplied field a message shows.
pub(crate) const FIELD_SHOWN: usize = 80;

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

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("send", 10), "send");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
        assert_eq!(cut("a\nb\u{1b}c", 10), "a b c");
    }
}
