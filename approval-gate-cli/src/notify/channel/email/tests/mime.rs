//! Just enough MIME reading to see an email as its recipient's client would: headers
//! (unfolded, RFC 2047 words decoded) and the decoded body of each part.

use base64::Engine as _;

/// One email as the loopback server wrote it (its `X-Envelope-*` lines first).
pub(crate) struct Eml {
    /// Header names (lowercase) and unfolded values, in order.
    pub(crate) headers: Vec<(String, String)>,
    body: String,
}

/// Headers and body of one entity.
fn split(text: &str) -> (Vec<(String, String)>, String) {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no blank line after the headers: {text:?}"));
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", "\t");
    let headers = unfolded
        .split("\r\n")
        .map(|line| {
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("not a header line: {line:?}"));
            (name.to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    (headers, body.to_owned())
}

fn all<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// A header value with its `=?utf-8?b?...?=` words decoded (adjacent words joined).
fn decode_words(value: &str) -> String {
    let mut out = String::new();
    let mut last_encoded = false;
    for (i, token) in value.split(' ').enumerate() {
        let lower = token.to_ascii_lowercase();
        if let Some(inner) = lower
            .strip_prefix("=?utf-8?b?")
            .and_then(|t| t.strip_suffix("?="))
        {
            // Case matters in base64: take the same span of the original token.
            let inner = &token[10..10 + inner.len()];
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .unwrap();
            if i > 0 && !last_encoded {
                out.push(' ');
            }
            out.push_str(&String::from_utf8(bytes).unwrap());
            last_encoded = true;
        } else {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(token);
            last_encoded = false;
        }
    }
    out
}

/// `body` decoded as its `Content-Transfer-Encoding` says.
fn decode_body(encoding: &str, body: &str) -> String {
    match encoding.to_ascii_lowercase().as_str() {
        "base64" => {
            let joined: String = body.split_whitespace().collect();
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(joined)
                    .unwrap(),
            )
            .unwrap()
        }
        "quoted-printable" => {
            let text = body.replace("=\r\n", "");
            let bytes = text.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'=' && i + 2 < bytes.len() + 1 {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            String::from_utf8(out).unwrap()
        }
        _ => body.to_owned(),
    }
    .replace("\r\n", "\n")
}

impl Eml {
    /// Reads `text`.
    pub(crate) fn parse(text: &str) -> Self {
        let (headers, body) = split(text);
        Self { headers, body }
    }

    /// Every value of the header `name` (lowercase).
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        all(&self.headers, name)
    }

    /// The one value of the header `name`.
    pub(crate) fn one(&self, name: &str) -> &str {
        let values = self.all(name);
        assert_eq!(values.len(), 1, "{name}: {:?}", self.headers);
        values[0]
    }

    /// The subject, decoded.
    pub(crate) fn subject(&self) -> String {
        decode_words(self.one("subject"))
    }

    /// The decoded body of the one part whose type is `content_type`.
    pub(crate) fn part(&self, content_type: &str) -> String {
        let kind = self.one("content-type");
        let boundary = kind
            .split(';')
            .find_map(|p| p.trim().strip_prefix("boundary="))
            .unwrap_or_else(|| panic!("no boundary in {kind}"))
            .trim_matches('"');
        let delimiter = format!("--{boundary}");
        let parts: Vec<String> = self
            .body
            .split(&delimiter)
            .skip(1)
            .filter(|p| !p.starts_with("--"))
            .filter_map(|p| {
                let (headers, body) = split(p.trim_start_matches("\r\n"));
                let this = all(&headers, "content-type").first()?.to_ascii_lowercase();
                if !this.starts_with(content_type) {
                    return None;
                }
                let encoding = all(&headers, "content-transfer-encoding")
                    .first()
                    .copied()
                    .unwrap_or("7bit")
                    .to_owned();
                Some(decode_body(&encoding, body.trim_end_matches("\r\n")))
            })
            .collect();
        assert_eq!(parts.len(), 1, "{content_type} parts in {}", self.body);
        parts.into_iter().next().unwrap()
    }
}
