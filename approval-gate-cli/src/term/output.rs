//! The only module that writes to stdout or stderr.
//!
//! Everything reaches the terminal through [`stdout`] and [`stderr_line`], so there is one
//! place to check that output is whole, flushed, and never made of raw agent text: callers
//! pass text already built from [`crate::term::display`] escapes. Writes go through `io::Write`
//! rather than `print!`, so a closed pipe is an error to handle rather than a panic.

use std::io::{self, IsTerminal, Write};

/// Writes `text` to stdout and flushes it.
pub(crate) fn stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Prints what clap has to say: help and version on stdout, errors on stderr.
pub(crate) fn clap_message(error: &clap::Error) {
    // Nothing useful can be done if the stream is gone.
    let _ = error.print();
}

/// Writes one line to stderr. The text must already be escaped.
pub(crate) fn stderr_line(text: &str) {
    let mut err = io::stderr().lock();
    // Nothing useful can be done if stderr itself is gone.
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

/// Colour, used only on a terminal without `NO_COLOR` or `TERM=dumb`, and only around text
/// the CLI wrote itself (headers, status words), never inside escaped agent text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour if stdout is a terminal that wants it.
    pub(crate) fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Self {
            color: !no_color && !dumb && io::stdout().is_terminal(),
        }
    }

    /// No colour at all.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self { color: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold, for headings and the confirmation code.
    pub(crate) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Bold red, for warnings about what is shown.
    pub(crate) fn warning(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// A status word in a colour that matches its meaning.
    pub(crate) fn status(self, status: approval_gate::EffectiveStatus, text: &str) -> String {
        use approval_gate::EffectiveStatus as S;
        let code = match status {
            S::Pending => "1;33",
            S::ApprovedUnconsumed => "1;32",
            S::Consumed => "32",
            S::Denied | S::Revoked => "31",
            _ => "2",
        };
        self.paint(code, text)
    }
}

/// Fewest columns lines are laid out for, however narrow a terminal or `COLUMNS` claims.
const MIN_WIDTH: usize = 40;
/// Columns assumed when neither the terminal nor `COLUMNS` says.
const DEFAULT_WIDTH: usize = 80;

/// Columns available for one line of stdout: the terminal's width when stdout is a terminal
/// that knows it, else `$COLUMNS`, else 80; never fewer than [`MIN_WIDTH`].
pub(crate) fn width() -> usize {
    let out = io::stdout();
    let terminal = if out.is_terminal() {
        rustix::termios::tcgetwinsize(&out)
            .ok()
            .map(|size| size.ws_col)
    } else {
        None
    };
    pick_width(terminal, std::env::var("COLUMNS").ok().as_deref())
}

/// The width from the terminal's column count and `COLUMNS`. A terminal that reports 0
/// columns (a pseudo-terminal nobody sized) and a `COLUMNS` that is not a positive number
/// say nothing.
fn pick_width(terminal: Option<u16>, columns: Option<&str>) -> usize {
    let terminal = terminal.filter(|&c| c > 0).map(usize::from);
    let columns = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    terminal.or(columns).unwrap_or(DEFAULT_WIDTH).max(MIN_WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_wins_then_columns_then_80_and_never_below_the_minimum() {
        assert_eq!(pick_width(Some(132), Some("50")), 132);
        assert_eq!(pick_width(Some(0), Some("150")), 150);
        assert_eq!(pick_width(None, Some(" 150 ")), 150);
        assert_eq!(pick_width(None, None), DEFAULT_WIDTH);
        for junk in ["", "wide", "-5", "0", "1e3", "99999999999999999999999"] {
            assert_eq!(pick_width(None, Some(junk)), DEFAULT_WIDTH, "{junk:?}");
        }
        assert_eq!(pick_width(Some(12), None), MIN_WIDTH);
        assert_eq!(pick_width(None, Some("5")), MIN_WIDTH);
        assert_eq!(pick_width(Some(u16::MAX), None), usize::from(u16::MAX));
    }
}
