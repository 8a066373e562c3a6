//! The directory store's own tests (the conformance suite holds its behaviour).

use super::*;

#[test]
fn the_watched_directory_is_where_requests_are_saved() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::open(dir.path().join("g")).unwrap();
    let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
    let record = store.layout.request(id);
    assert_eq!(record.parent(), Some(store.layout.requests_dir().as_path()));
    assert_eq!(watch::request_of(&record), Some(id));
}
