//! The times of `valid-after` and `valid-before`, read as ssh-keygen reads them with glibc's
//! `strptime` and `timegm`, in UTC only.

/// `YYYYMMDD[HHMM[SS]]` ending in `Z` or `UTC` (any case), in seconds since the epoch, as
/// misc.c `parse_absolute_time` reads it with glibc's `strptime` and `timegm`: a field may
/// start with blanks, a day past the month's end or a 60th or 61st second rolls over, and
/// the result must be after the epoch (ssh-keygen also refuses the epoch itself).
pub(super) fn parse_time(option: &str, text: &str) -> Result<i64, String> {
    let bytes = text.as_bytes();
    let (digits, utc) = if bytes.len() > 1 && bytes[bytes.len() - 1].eq_ignore_ascii_case(&b'z') {
        (&bytes[..bytes.len() - 1], true)
    } else if bytes.len() > 3 && bytes[bytes.len() - 3..].eq_ignore_ascii_case(b"utc") {
        (&bytes[..bytes.len() - 3], true)
    } else {
        (bytes, false)
    };
    let malformed = || format!("{option} time {text:?} is not YYYYMMDD[HHMM[SS]]Z");
    // (offset, width, smallest, largest) of each field, as strptime's %Y %m %d %H %M %S.
    let fields: &[(usize, usize, i64, i64)] = match digits.len() {
        8 => &[(0, 4, 0, 9999), (4, 2, 1, 12), (6, 2, 1, 31)],
        12 => &[
            (0, 4, 0, 9999),
            (4, 2, 1, 12),
            (6, 2, 1, 31),
            (8, 2, 0, 23),
            (10, 2, 0, 59),
        ],
        14 => &[
            (0, 4, 0, 9999),
            (4, 2, 1, 12),
            (6, 2, 1, 31),
            (8, 2, 0, 23),
            (10, 2, 0, 59),
            (12, 2, 0, 61),
        ],
        _ => return Err(malformed()),
    };
    let mut values = [0_i64; 6];
    for (value, &(at, width, smallest, largest)) in values.iter_mut().zip(fields) {
        *value =
            strptime_number(&digits[at..at + width], smallest, largest).ok_or_else(malformed)?;
    }
    let [year, month, day, hour, minute, second] = values;
    let seconds =
        (days_from_civil(year, month) + day - 1) * 86_400 + hour * 3600 + minute * 60 + second;
    if seconds < 0 {
        return Err(format!("{option} time {text:?} is before 1970"));
    }
    if !utc {
        return Err(format!(
            "{option} time {text:?} is in local time: write it in UTC with a trailing Z \
             (e.g. 20270101Z)"
        ));
    }
    if seconds == 0 {
        return Err(format!(
            "{option} time {text:?} is the epoch itself, which ssh-keygen refuses"
        ));
    }
    Ok(seconds)
}

/// One field as glibc's `strptime` reads a number: blanks, then at least one digit, no more
/// than the field holds, and nothing after (the separator that follows in ssh-keygen's
/// reformatted text would not match).
fn strptime_number(field: &[u8], smallest: i64, largest: i64) -> Option<i64> {
    let start = field
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let digits = &field[start..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // strptime stops reading once another digit would pass the largest value, and what is
    // left then fails to match: the same refusal as a value out of range, checked here once.
    let value = digits
        .iter()
        .fold(0_i64, |value, &digit| value * 10 + i64::from(digit - b'0'));
    (smallest..=largest).contains(&value).then_some(value)
}

/// Days from 1970-01-01 to the first of `month` in `year` (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}
