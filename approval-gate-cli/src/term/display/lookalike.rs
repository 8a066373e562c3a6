//! Letters that look like other letters (Unicode TR39): `exаmple.com` with a Cyrillic `а`,
//! `ｐａｙｐａｌ` in fullwidth forms, a Cherokee `Ꭺ` for a Latin `A`.
//!
//! A human reading a request cannot tell such letters from the ones they imitate, so every
//! one of them is shown as an escape and named in a warning. The Unicode data (scripts,
//! script extensions, confusable skeletons, identifier status) comes from `unicode-security`
//! and `unicode-script`; the rules are ours, and deliberately narrow, so that honest text in
//! any one writing system (`Müller`, `Zoë`, `Ελλάδα`, `Москва`, Japanese mixing Han, Hiragana
//! and Katakana) raises nothing.
//!
//! The text is cut into tokens: runs of letters, digits and combining marks. Whitespace and
//! punctuation end a token; characters that are escaped anyway (invisible, control) are
//! skipped without ending it, so a zero-width space cannot split a word to hide a mix. A
//! character is flagged when:
//!
//! 1. **it breaks its token's script**: the token is not single-script in the TR39 sense
//!    (its resolved script set is empty), and not Latin mixed with Han, Hiragana, Katakana,
//!    Hangul or Bopomofo only (TR39's "highly restrictive" level, which honest Japanese,
//!    Chinese and Korean text reaches); then every letter outside the token's most frequent
//!    script is flagged (`pаypal`: the `а`; `Мoсква`: the Latin `o`);
//! 2. **it is a disguised ASCII letter or digit**: a letter or digit that TR39 does not allow
//!    in identifiers (fullwidth and mathematical forms, ligatures, Cherokee, IPA and other
//!    restricted letters) and whose confusable skeleton is different ASCII text;
//! 3. **it belongs to a whole-script look-alike of a Latin word**: a token in one non-Latin
//!    script made only of letters whose skeletons are ASCII (`реуа` in Cyrillic), inside a
//!    whitespace-separated word that also holds Latin letters (`alice@реуа.com`).

use unicode_script::{Script, UnicodeScript};
use unicode_security::{GeneralSecurityProfile, MixedScript, skeleton};

use super::needs_escape;

/// Which characters of a text are flagged, by character index.
#[derive(Debug, Default)]
pub(super) struct Flags {
    /// Empty when nothing is flagged; otherwise one entry per character of the text.
    marks: Vec<bool>,
}

impl Flags {
    /// Whether the `index`-th character of the text is flagged.
    pub(super) fn get(&self, index: usize) -> bool {
        self.marks.get(index).copied().unwrap_or(false)
    }

    /// Whether nothing is flagged.
    pub(super) fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}

/// Scripts that TR39 lets mix with Latin in honest East Asian text.
fn is_cjk(script: Script) -> bool {
    matches!(
        script,
        Script::Han | Script::Hiragana | Script::Katakana | Script::Hangul | Script::Bopomofo
    )
}

/// What a character counts towards when a token's most frequent script is chosen: Han,
/// Hiragana, Katakana, Hangul and Bopomofo count as one East Asian group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Cjk,
    Script(Script),
}

impl Group {
    fn of(c: char) -> Option<Self> {
        match c.script() {
            Script::Common | Script::Inherited | Script::Unknown => None,
            script if is_cjk(script) => Some(Self::Cjk),
            script => Some(Self::Script(script)),
        }
    }

    fn holds(self, c: char) -> bool {
        let extension = c.script_extension();
        if extension.is_common() || extension.is_inherited() {
            return true;
        }
        match self {
            Self::Cjk => extension.iter().any(is_cjk),
            Self::Script(script) => extension.contains_script(script),
        }
    }
}

/// Whether `c` is part of a token.
fn in_token(c: char) -> bool {
    c.is_alphanumeric() || c.script() == Script::Inherited
}

/// The ASCII text `c` is confusable with, if its skeleton is ASCII and not `c` itself.
pub(super) fn ascii_lookalike(c: char) -> Option<String> {
    let mut buffer = [0; 4];
    let shown: String = skeleton(c.encode_utf8(&mut buffer)).collect();
    let ascii = !shown.is_empty() && shown.bytes().all(|b| b.is_ascii_graphic());
    (ascii && shown.chars().ne([c])).then_some(shown)
}

/// Rule 2: a letter or digit restricted in identifiers that imitates ASCII.
fn disguised_ascii(c: char) -> bool {
    if c.is_ascii() || !c.is_alphanumeric() || c.identifier_allowed() {
        return false;
    }
    match ascii_lookalike(c) {
        // A number that stands for several characters (`½` for `1/2`) is drawn as one
        // small sign: it imitates no digit.
        Some(like) => c.is_alphabetic() || like.len() == 1,
        None => false,
    }
}

/// One token: the characters' indices in the text and the characters.
struct Token {
    chars: Vec<(usize, char)>,
}

impl Token {
    fn text(&self) -> String {
        self.chars.iter().map(|&(_, c)| c).collect()
    }

    /// Rule 1: the letters outside the most frequent script of a mixed-script token.
    fn mixed(&self, flags: &mut [bool]) {
        let text = self.text();
        if text.as_str().is_single_script() {
            return;
        }
        let non_latin: String = self
            .chars
            .iter()
            .map(|&(_, c)| c)
            .filter(|c| !c.script_extension().contains_script(Script::Latin))
            .collect();
        let rest = non_latin.as_str().resolve_script_set();
        if rest.hanb || rest.jpan || rest.kore {
            return;
        }
        let mut counts: Vec<(Group, usize)> = Vec::new();
        for &(_, c) in &self.chars {
            if let Some(group) = Group::of(c) {
                match counts.iter_mut().find(|(g, _)| *g == group) {
                    Some((_, count)) => *count += 1,
                    None => counts.push((group, 1)),
                }
            }
        }
        let most = counts.iter().map(|&(_, n)| n).max().unwrap_or(0);
        // On a tie Latin is taken as meant: the other letters are the look-alikes.
        let main = counts
            .iter()
            .filter(|&&(_, n)| n == most)
            .map(|&(g, _)| g)
            .find(|&g| g == Group::Script(Script::Latin))
            .or_else(|| counts.iter().find(|&&(_, n)| n == most).map(|&(g, _)| g));
        let Some(main) = main else { return };
        for &(index, c) in &self.chars {
            if !main.holds(c) {
                flags[index] = true;
            }
        }
    }

    /// Whether the token holds a Latin letter.
    fn has_latin(&self) -> bool {
        self.chars
            .iter()
            .any(|&(_, c)| c.is_alphabetic() && c.script() == Script::Latin)
    }

    /// Rule 3's token: one non-Latin script, every letter confusable with ASCII.
    fn imitates_latin(&self) -> bool {
        let text = self.text();
        let set = text.as_str().resolve_script_set();
        let letters: Vec<char> = self
            .chars
            .iter()
            .map(|&(_, c)| c)
            .filter(|c| c.is_alphabetic())
            .collect();
        !letters.is_empty()
            && !set.is_empty()
            && !set.is_all()
            && !set.base.contains_script(Script::Latin)
            && letters.iter().all(|&c| ascii_lookalike(c).is_some())
    }
}

/// The flagged characters of `text` (see the module docs for the rules).
pub(super) fn flags(text: &str) -> Flags {
    // ASCII is one script and imitates nothing.
    if text.is_ascii() {
        return Flags::default();
    }
    let count = text.chars().count();
    let mut marks = vec![false; count];
    // Words are whitespace-separated; tokens are runs of letters, digits and marks.
    let mut word: Vec<Token> = Vec::new();
    let mut token = Token { chars: Vec::new() };
    let mut chars = text.chars().enumerate();
    loop {
        let next = chars.next();
        let ends_token = match next {
            None => true,
            Some((_, c)) if c.is_whitespace() => true,
            // Invisible characters are escaped anyway; they neither join nor split a token.
            Some((_, c)) if needs_escape(c) => false,
            Some((_, c)) => !in_token(c),
        };
        if let Some((index, c)) = next
            && !ends_token
        {
            if !needs_escape(c) {
                if disguised_ascii(c) {
                    marks[index] = true;
                }
                token.chars.push((index, c));
            }
            continue;
        }
        if !token.chars.is_empty() {
            token.mixed(&mut marks);
            word.push(std::mem::replace(&mut token, Token { chars: Vec::new() }));
        }
        let ends_word = next.is_none_or(|(_, c)| c.is_whitespace());
        if ends_word {
            if word.iter().any(Token::has_latin) {
                for token in word.iter().filter(|t| t.imitates_latin()) {
                    for &(index, c) in &token.chars {
                        if c.is_alphabetic() {
                            marks[index] = true;
                        }
                    }
                }
            }
            word.clear();
        }
        if next.is_none() {
            break;
        }
    }
    if marks.iter().any(|&m| m) {
        Flags { marks }
    } else {
        Flags::default()
    }
}

#[cfg(test)]
mod tests {
    use crate::term::display::{escape, lookalike_warning, lookalikes, unescape};

    /// Honest text in one writing system (or TR39's East Asian sets), with the digits,
    /// punctuation and emoji that go with any script: nothing may be flagged.
    const HONEST: &[&str] = &[
        "Müller",
        "Zoë",
        "Ελλάδα",
        "Москва",
        "Straße, Đặng Thị, İstanbul ılık, København Ærø, Łódź, Ñandú",
        "Überweisung an Jürgen Groß: 1.250,00 € (Rechnung Nr. 42)",
        "Παραγγελία αρ. 42: 3 τεμάχια, σύνολο 12,50 €",
        "Счёт № 1042 на сумму 5 000 ₽ — оплатить до 01.12.",
        "件名：来週の会議について（確認のお願い）",
        "Windows の更新プログラム KB5031356 を適用しました",
        "会議は10時から、場所は東京オフィス3F",
        "한국어 제목: 회의 안내 (Zoom)",
        "中文标题：发票 #1042 已到期",
        "שלום עולם 2024",
        "مرحبا بالعالم ١٢٣",
        "नमस्ते दुनिया",
        "emoji 🙂👍🏽 🎉 and ❤ in a line",
        "50 m² ½ µs ™ © 3×4 ±1 °C",
        "alice@example.com, https://example.com/a?b=c#d",
        "send invoice 1042 to alice@example.com",
    ];

    /// Hostile strings and the letters in them that must be flagged, in order.
    const HOSTILE: &[(&str, &str)] = &[
        // Cyrillic and Greek letters inside Latin words.
        ("alice@ex\u{430}mple.com", "\u{430}"),
        ("p\u{430}ypal", "\u{430}"),
        ("pay\u{440}al.com", "\u{440}"),
        ("micr\u{3bf}soft", "\u{3bf}"),
        ("\u{391}pple ID", "\u{391}"),
        ("j\u{435}ff@b\u{430}nk.example", "\u{435}\u{430}"),
        // A Latin letter inside a Cyrillic word.
        ("Мoсква", "o"),
        // A zero-width space does not split a word to hide the mix.
        ("p\u{200b}\u{430}ypal", "\u{430}"),
        // A whole Cyrillic label beside Latin ones in a domain.
        (
            "alice@\u{440}\u{435}\u{443}\u{430}.com",
            "\u{440}\u{435}\u{443}\u{430}",
        ),
        (
            "\u{430}\u{440}\u{440}\u{4cf}\u{435}.com",
            "\u{430}\u{440}\u{440}\u{4cf}\u{435}",
        ),
        // Fullwidth and mathematical Latin, alone or among ASCII.
        ("\u{ff50}\u{ff41}\u{ff59}", "\u{ff50}\u{ff41}\u{ff59}"),
        ("amount: \u{ff11}00 usd", "\u{ff11}"),
        ("\u{1d429}\u{1d41a}\u{1d432}", "\u{1d429}\u{1d41a}\u{1d432}"),
        // Cherokee and Armenian look-alikes.
        ("pay to \u{13aa}pple", "\u{13aa}"),
        ("\u{13aa}\u{13f4}\u{13df}", "\u{13aa}\u{13f4}\u{13df}"),
        ("g\u{585}\u{585}gle.com", "\u{585}\u{585}"),
        // Restricted Latin letters and ligatures that imitate ASCII.
        ("\u{261}oogle", "\u{261}"),
        ("\u{fb01}le.txt", "\u{fb01}"),
    ];

    fn unescaped(text: &str) -> String {
        unescape(text).unwrap()
    }

    #[test]
    fn honest_text_raises_nothing() {
        for text in HONEST {
            assert_eq!(lookalikes(text), [], "{text}");
            assert_eq!(lookalike_warning("action", text), None, "{text}");
            assert_eq!(escape(text), *text);
        }
    }

    #[test]
    fn every_hostile_letter_is_flagged_and_escaped() {
        for &(text, expected) in HOSTILE {
            let text = unescaped(text);
            let found: String = lookalikes(&text).iter().map(|l| l.character).collect();
            assert_eq!(found, unescaped(expected), "{}", escape(&text));
            let shown = escape(&text);
            for c in found.chars() {
                assert!(!shown.contains(c), "{c:?} raw in {shown}");
                assert!(
                    shown.contains(&format!("\\u{{{:x}}}", u32::from(c))),
                    "{shown}"
                );
            }
            assert_eq!(unescape(&shown).as_deref(), Ok(text.as_str()));
            let warning = lookalike_warning("payload.to", &text)
                .expect("a warning")
                .to_string();
            assert!(
                warning.starts_with("look-alike letters in payload.to: \\u{"),
                "{warning}"
            );
            assert!(!warning.contains('\n'));
        }
    }

    #[test]
    fn warnings_say_what_the_letter_imitates() {
        let warning = lookalike_warning("action", "alice@ex\u{430}mple.com").unwrap();
        assert_eq!(
            warning.to_string(),
            r#"look-alike letters in action: \u{430} (Cyrillic, like "a")"#
        );
        let warning = lookalike_warning("reason", "Мoсква").unwrap();
        assert_eq!(warning.letters, r"\u{6f} (Latin)");
        let many = "\u{ff41}\u{ff42}\u{ff43}\u{ff44}\u{ff45}\u{ff46}\u{ff41}";
        let warning = lookalike_warning("action", many).unwrap();
        assert!(
            warning.letters.ends_with(" and 2 more"),
            "{}",
            warning.letters
        );
        assert_eq!(warning.letters.matches("(Latin, like").count(), 4);
    }
}
