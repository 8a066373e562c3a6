//! The log's last line, read from its end in growing windows, and a torn tail found there.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::audit::MAX_LINE;
use crate::error::Error;

/// How much of the log's end the first read for its last line takes: a few lines, almost
/// always enough. The read grows from there, up to the most any last line can need.
pub(super) const TAIL_READ: u64 = 8 * 1024;

/// The last complete line and, if the file ends in a torn line, where that tail starts.
pub(super) type LastLine = (Option<String>, Option<u64>);

/// The log's [`LastLine`]. Reads the log's end in growing windows, from [`TAIL_READ`] up to twice the longest line,
/// stopping at the first window whose answer cannot change by reading further back: an
/// append's cost does not grow with the log (a whole-window read of a long log cost two
/// allocations and copies of half a megabyte per line written).
pub(super) fn last_line(log: &mut File, len: u64, path: &Path) -> Result<LastLine, Error> {
    let limit = len.min(2 * MAX_LINE as u64);
    let mut window = limit.min(TAIL_READ);
    loop {
        let start = len - window;
        let mut buf = vec![0u8; usize::try_from(window).expect("at most 512 KiB")];
        log.seek(SeekFrom::Start(start))
            .and_then(|_| log.read_exact(&mut buf))
            .map_err(|e| Error::io("reading", path, e))?;
        match last_line_in(buf, start, window == limit)? {
            Some(found) => return Ok(found),
            None => window = limit.min(window.saturating_mul(8)),
        }
    }
}

/// [`last_line`] within the `buf` read from `start` to the log's end: `None` when the answer
/// depends on bytes before `start` and `whole` (the widest window read) is false.
pub(super) fn last_line_in(
    mut buf: Vec<u8>,
    start: u64,
    whole: bool,
) -> Result<Option<LastLine>, Error> {
    if buf.is_empty() {
        return Ok(Some((None, None)));
    }
    // Whether the window reaches back far enough: to the file's start, or as far as it may.
    let settled = whole || start == 0;
    let torn_from = if buf.last() == Some(&b'\n') {
        None
    } else {
        let cut = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        if cut == 0 && !settled {
            return Ok(None);
        }
        buf.truncate(cut);
        Some(start + cut as u64)
    };
    if buf.is_empty() {
        return Ok(Some((None, torn_from)));
    }
    buf.pop();
    let begin = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    if begin == 0 && start > 0 {
        if !settled {
            return Ok(None);
        }
        return Err(Error::AuditBroken {
            line: 0,
            problem: "last line is longer than any audit record".into(),
        });
    }
    let line = String::from_utf8(buf.split_off(begin)).map_err(|_| Error::AuditBroken {
        line: 0,
        problem: "last line is not UTF-8".into(),
    })?;
    Ok(Some((Some(line), torn_from)))
}
