//! The directory store's change source: a file watcher (inotify on Linux, via `notify`) on
//! the directory of request records, which every filing, decision, recorded expiry and
//! archive renames a file into or out of, whichever process made it.

use std::path::Path;
use std::sync::Mutex;

use notify::{EventKind, RecursiveMode, Watcher};

use crate::change::{Change, ChangeSink};
use crate::id::RequestId;
use crate::store::Guard;

/// The request whose record `path` is; `None` for anything else (temporary files, whose
/// rename into place is the change that counts).
pub(super) fn request_of(path: &Path) -> Option<RequestId> {
    let name = path.file_name()?.to_str()?;
    RequestId::parse(name.strip_suffix(".json")?).ok()
}

/// Starts the platform's file watcher on `requests`, forwarding its events to `sink`.
pub(super) fn watch_records(requests: &Path, sink: ChangeSink) -> Result<Guard, String> {
    let forward = move |event: notify::Result<notify::Event>| match event {
        Err(_) => sink(Change::Unknown),
        Ok(event) if event.need_rescan() => sink(Change::Unknown),
        // Reading a record opens it; waking on reads would have every wait wake itself.
        Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
        Ok(event) => {
            for id in event.paths.iter().filter_map(|p| request_of(p)) {
                sink(Change::Request(id));
            }
        }
    };
    let mut watcher = notify::recommended_watcher(forward)
        .map_err(|e| format!("cannot start a file watcher: {e}"))?;
    watcher
        .watch(requests, RecursiveMode::NonRecursive)
        .map_err(|e| format!("cannot watch {}: {e}", requests.display()))?;
    // Guard only to keep it running; the lock makes it shareable whatever the platform's type.
    Ok(Guard::new(Mutex::new(watcher)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_request_records_name_a_request() {
        let id = RequestId::parse("a1b2c3d4e5f6").unwrap();
        assert_eq!(
            request_of(Path::new("/s/requests/a1b2c3d4e5f6.json")),
            Some(id)
        );
        for other in [
            "/s/requests/.a1b2c3d4e5f6.json.tmp-0011223344556677",
            "/s/requests/a1b2c3d4e5f6",
            "/s/requests/a1b2c3d4e5f6.json~",
            "/s/requests/A1B2C3D4E5F6.json",
            "/s/requests",
        ] {
            assert_eq!(request_of(Path::new(other)), None, "{other}");
        }
    }
}
