//! OpenSSH's pattern lists (`ssh_config(5)` PATTERNS): `*`, `?` and `!` over comma-separated
//! patterns, for principals and namespaces.

/// OpenSSH's `match_pattern_list`: true if `name` matches a pattern of the comma-separated
/// `list` and no negated (`!`) pattern before a match decides; case-sensitive. As OpenSSH,
/// a pattern of 1,023 bytes or more ends the search with "no match" where it stands.
pub(crate) fn match_pattern_list(name: &str, list: &str) -> bool {
    /// `sizeof(sub) - 1` in match.c.
    const LONGEST: usize = 1023;
    let list = list.as_bytes();
    let mut matched = false;
    let mut at = 0;
    while at < list.len() {
        let negated = list[at] == b'!';
        if negated {
            at += 1;
        }
        let start = at;
        while at < list.len() && at - start < LONGEST && list[at] != b',' {
            at += 1;
        }
        if at - start >= LONGEST {
            return false;
        }
        let pattern = &list[start..at];
        if at < list.len() && list[at] == b',' {
            at += 1;
        }
        if glob(name.as_bytes(), pattern) {
            if negated {
                return false;
            }
            matched = true;
        }
    }
    matched
}

/// `*` matches any run of bytes, `?` any one byte, everything else itself.
pub(crate) fn glob(name: &[u8], pattern: &[u8]) -> bool {
    let (mut n, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                n += 1;
                p += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}
