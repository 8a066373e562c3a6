use super::detect::{Shape, line_shape, record_shape};

const THEIR_RECORD: &str = "{\n  \"id\": \"9737e3836fcb\",\n  \"action\": \"x\",\n  \"reason\": \"r\",\n  \"status\": \"pending\",\n  \"createdAt\": \"2026-12-06T21:11:48.942Z\",\n  \"expiresAt\": \"2026-12-06T22:11:48.942Z\"\n}";

#[test]
fn their_records_and_lines_are_told_from_ours() {
    assert_eq!(record_shape(THEIR_RECORD.as_bytes()), Shape::Theirs);
    let ours = THEIR_RECORD.replacen('{', "{\"version\":1,", 1);
    assert_eq!(record_shape(ours.as_bytes()), Shape::Ours);
    // A key neither writes, or no status: not recognised as theirs.
    let odd = THEIR_RECORD.replacen('{', "{\"other\":1,", 1);
    assert_eq!(record_shape(odd.as_bytes()), Shape::Unknown);
    assert_eq!(record_shape(b"{\"id\":\"9737e3836fcb\"}"), Shape::Unknown);
    assert_eq!(record_shape(b""), Shape::Unknown);
    let line = br#"{"at":"2026-12-06T21:11:48.944Z","event":"requested","id":"9737e3836fcb"}"#;
    assert_eq!(line_shape(line), Shape::Theirs);
    let chained = br#"{"seq":1,"ts":"2026-12-06T21:11:48.944Z","event":"requested","id":"9737e3836fcb","prev":"0","hash":"0"}"#;
    assert_eq!(line_shape(chained), Shape::Ours);
    assert_eq!(line_shape(br#"{"at":"x"}"#), Shape::Unknown);
    assert_eq!(line_shape(b"{\"at\""), Shape::Unknown);
    // Cut short by a crash: still told by the first bytes.
    assert_eq!(record_shape(&THEIR_RECORD.as_bytes()[..30]), Shape::Theirs);
    assert_eq!(line_shape(&line[..20]), Shape::Theirs);
    assert_eq!(line_shape(&chained[..20]), Shape::Ours);
}
