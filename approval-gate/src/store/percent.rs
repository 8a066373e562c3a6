//! Percent-decoding (`%XX`) of the parts of a store location: one decoder for a `file:` URL's
//! path and for a PostgreSQL store's URL.

/// Percent-decoding as the `postgres` crate (and libpq) does it: `%XX` is a byte, a `%` not
/// followed by two hex digits is itself, and `+` is a plus.
pub(super) fn decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(byte) = escape_at(bytes, i) {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// [`decode`] of a text in which every `%` starts an escape, as UTF-8: a stray `%` or bytes
/// that are not UTF-8 are refused, the error naming the text.
pub(super) fn decode_strict(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let stray = (0..bytes.len()).any(|i| bytes[i] == b'%' && escape_at(bytes, i).is_none());
    if stray {
        return Err(format!("{text:?} has a bad percent-escape"));
    }
    String::from_utf8(decode(text))
        .map_err(|_| format!("{text:?} decodes to bytes that are not UTF-8"))
}

/// The byte `%XX` at `i` stands for, if `bytes` has one there.
fn escape_at(bytes: &[u8], i: usize) -> Option<u8> {
    fn hex(byte: u8) -> Option<u8> {
        char::from(byte).to_digit(16).map(|digit| digit as u8)
    }
    if bytes[i] != b'%' {
        return None;
    }
    let high = bytes.get(i + 1).copied().and_then(hex)?;
    let low = bytes.get(i + 2).copied().and_then(hex)?;
    Some((high << 4) | low)
}

#[cfg(test)]
mod tests {
    use super::{decode, decode_strict};

    #[test]
    fn percent_decoding_is_libpqs() {
        assert_eq!(decode("a%20b%2Fc"), b"a b/c");
        assert_eq!(decode("100%"), b"100%");
        assert_eq!(decode("%zz%4"), b"%zz%4");
        assert_eq!(decode("a+b"), b"a+b");
        assert_eq!(decode("%C3%B6"), "ö".as_bytes());
        assert_eq!(decode("%%41"), b"%A");
        assert_eq!(decode("%ff"), [0xff]);
    }

    #[test]
    fn a_strict_decode_refuses_a_stray_percent_and_bytes_not_utf8() {
        assert_eq!(decode_strict("a%20b%2Fc").unwrap(), "a b/c");
        assert_eq!(decode_strict("/a%20b/%C3%A9").unwrap(), "/a b/\u{e9}");
        assert_eq!(decode_strict("a+b").unwrap(), "a+b");
        assert_eq!(decode_strict("").unwrap(), "");
        for bad in ["100%", "%zz", "a%2", "%%41", "%+1", "%-1", "%\u{e9}"] {
            let error = decode_strict(bad).expect_err(bad);
            assert!(error.contains("bad percent-escape"), "{bad:?}: {error}");
        }
        let error = decode_strict("%ff").unwrap_err();
        assert!(error.contains("not UTF-8"), "{error}");
    }
}
