//! Tests of the careful file operations: private modes, symbolic links refused everywhere, and
//! what cannot be inspected reported rather than taken for an absence.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use super::names::touch;
use super::*;
use crate::error::Error;
use crate::id::RequestId;

#[test]
fn created_files_and_dirs_have_private_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    ensure_dir(&dir).unwrap();
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    let file = dir.join("f");
    write_atomic(&file, b"x").unwrap();
    assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
    assert!(create_exclusive(&dir.join("c"), b"").unwrap());
    assert!(!create_exclusive(&dir.join("c"), b"").unwrap());
    assert_eq!(fs::metadata(dir.join("c")).unwrap().mode() & 0o777, 0o600);
}

#[test]
fn symlinks_are_refused_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    ensure_dir(&real).unwrap();
    fs::write(real.join("target"), b"secret").unwrap();
    let link_dir = tmp.path().join("link");
    symlink(&real, &link_dir).unwrap();
    assert!(matches!(
        ensure_dir(&link_dir),
        Err(Error::UnsafeState { .. })
    ));

    let link_file = real.join("file-link");
    symlink(real.join("target"), &link_file).unwrap();
    assert!(matches!(
        open_existing(&link_file),
        Err(Error::UnsafeState { .. })
    ));
    assert!(matches!(
        open_lock(&link_file),
        Err(Error::UnsafeState { .. })
    ));
    assert!(matches!(
        open_append(&link_file),
        Err(Error::UnsafeState { .. })
    ));
    assert!(matches!(exists(&link_file), Err(Error::UnsafeState { .. })));
    // An exclusive create never writes through a link, dangling or not.
    assert!(!create_exclusive(&link_file, b"claim").unwrap());
    let dangling = real.join("dangling");
    symlink(tmp.path().join("nowhere"), &dangling).unwrap();
    assert!(!create_exclusive(&dangling, b"claim").unwrap());
    assert!(!tmp.path().join("nowhere").exists());
    assert_eq!(fs::read(real.join("target")).unwrap(), b"secret");
}

#[test]
fn a_path_that_cannot_be_inspected_is_an_error_not_an_absence() {
    // `exists` answers whether a claim, an execution marker or an archived record is
    // there: an inspection that fails (here ENOTDIR, a path through a file) must not read
    // as "not there", which would show a spent approval as unspent.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    fs::write(&file, b"").unwrap();
    assert!(exists(&file).unwrap());
    assert!(!exists(&tmp.path().join("missing")).unwrap());
    assert!(matches!(
        exists(&file.join("x")),
        Err(Error::Io {
            op: "inspecting",
            ..
        })
    ));
}

#[test]
fn still_at_tells_the_held_file_from_a_replacement_and_reports_what_it_cannot_inspect() {
    // An execution marker is locked, then checked to be still at its name: only then is
    // the lock the one every other executor takes.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("m");
    fs::write(&path, b"").unwrap();
    let held = Meta::of_path(&path).unwrap();
    assert!(still_at(&held, &path).unwrap());
    // Another file on the same device, then that file renamed over the name.
    let other = tmp.path().join("other");
    fs::write(&other, b"").unwrap();
    assert!(!still_at(&held, &other).unwrap());
    fs::rename(&other, &path).unwrap();
    assert!(!still_at(&held, &path).unwrap());
    fs::remove_file(&path).unwrap();
    assert!(!still_at(&held, &path).unwrap());
    // A path through a file (ENOTDIR) is an error, not "another file is there now".
    fs::write(&other, b"").unwrap();
    assert!(matches!(
        still_at(&held, &other.join("x")),
        Err(Error::Io {
            op: "inspecting",
            ..
        })
    ));
}

#[test]
fn remove_if_exists_is_quiet_about_a_missing_file_only() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    fs::write(&file, b"").unwrap();
    remove_if_exists(&file).unwrap();
    assert!(!file.exists());
    remove_if_exists(&file).unwrap();
    // What cannot be removed (a directory: EISDIR, root included) is an error, not
    // "already gone": an execution marker left in place must not be reported removed.
    let dir = tmp.path().join("d");
    fs::create_dir(&dir).unwrap();
    assert!(matches!(
        remove_if_exists(&dir),
        Err(Error::Io { op: "removing", .. })
    ));
    assert!(dir.is_dir());
}

#[test]
fn writable_by_others_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    ensure_dir(&dir).unwrap();
    let file = dir.join("f");
    write_atomic(&file, b"x").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
    assert!(matches!(
        open_existing(&file),
        Err(Error::UnsafeState { .. })
    ));
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(ensure_dir(&dir), Err(Error::UnsafeState { .. })));
}

#[test]
fn readable_by_group_or_others_is_refused_with_the_mode_to_set() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    ensure_dir(&dir).unwrap();
    let file = dir.join("f");
    write_atomic(&file, b"x").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    match open_existing(&file) {
        Err(Error::UnsafeState { problem, .. }) => {
            assert!(
                problem.contains("mode 644") && problem.contains("chmod 600"),
                "{problem}"
            );
        }
        other => panic!("a 0644 file was accepted: {other:?}"),
    }
    assert!(matches!(open_lock(&file), Err(Error::UnsafeState { .. })));
    fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
    assert!(matches!(
        open_existing(&file),
        Err(Error::UnsafeState { .. })
    ));
    // Not changed behind the owner's back.
    assert_eq!(fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
    fs::set_permissions(&file, fs::Permissions::from_mode(0o400)).unwrap();
    assert!(
        open_existing(&file).unwrap().is_some(),
        "fewer bits are fine"
    );

    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    match ensure_dir(&dir) {
        Err(Error::UnsafeState { problem, .. }) => {
            assert!(
                problem.contains("mode 755") && problem.contains("chmod 700"),
                "{problem}"
            );
        }
        other => panic!("a 0755 directory was accepted: {other:?}"),
    }
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o755);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn a_failed_directory_sync_after_the_rename_is_told_apart() {
    let id = RequestId::parse("0123456789ab").unwrap();
    let error = Failed::After(Error::io("syncing directory", "d", io::Error::other("x")));
    assert!(matches!(
        error.on(id, "deny"),
        Error::DurabilityUnknown {
            operation: "deny",
            ..
        }
    ));
    let error = Failed::Before(Error::io("renaming", "d", io::Error::other("x")));
    assert!(matches!(error.on(id, "deny"), Error::Io { .. }));
}

#[test]
fn mark_names_the_file_again_or_makes_one_and_leaves_an_existing_mark() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let claim = dir.path().join("a.used");
    std::fs::write(&claim, b"{}").unwrap();
    let logged = dir.path().join("a.logged");
    mark(&claim, &logged).unwrap();
    let (c, l) = (claim.metadata().unwrap(), logged.metadata().unwrap());
    assert_eq!(
        (c.ino(), c.nlink()),
        (l.ino(), 2),
        "a second name of the claim"
    );
    // Again: the existing mark stays, and no error.
    mark(&claim, &logged).unwrap();
    assert_eq!(claim.metadata().unwrap().nlink(), 2);
    // Without the file to name, a new empty file.
    let orphan = dir.path().join("b.logged");
    mark(&dir.path().join("b.used"), &orphan).unwrap();
    assert_eq!(std::fs::read(&orphan).unwrap(), b"");
    // Nowhere to put it: the error of the fallback.
    let nowhere = dir.path().join("missing").join("c.logged");
    assert!(matches!(mark(&claim, &nowhere), Err(Error::Io { .. })));
}

#[test]
fn touch_makes_a_marker_once_and_reports_what_it_cannot_make() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("m");
    touch(&marker).unwrap();
    touch(&marker).unwrap();
    assert!(marker.exists());
    // No such directory: an error, not a marker silently missing.
    let nowhere = tmp.path().join("missing").join("m");
    assert!(matches!(touch(&nowhere), Err(Error::Io { .. })));
}

#[test]
fn bounded_read_refuses_oversized_files() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    write_atomic(&file, &[b'a'; 11]).unwrap();
    assert!(read_bounded(&file, 11).unwrap().is_some());
    assert!(matches!(
        read_bounded(&file, 10),
        Err(Error::Corrupt { .. })
    ));
    assert!(
        read_bounded(&tmp.path().join("missing"), 10)
            .unwrap()
            .is_none()
    );
}
