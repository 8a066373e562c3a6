//! What the store asks of a file's metadata: its kind, owner, mode, length and identity,
//! never its times.
//!
//! Asking for a file's times marks them as seen. Linux (6.13 and later) stamps a file with
//! a coarse clock, which moves once a tick, unless its times were seen since the last
//! change: then the next write gets a fine-grained time, which always differs, and so
//! dirties the inode. A dirty inode next to the journal's makes the journal's `fdatasync`
//! write the inode table too, on ext4 a second I/O before the cache flush: on this
//! project's test machine an overwrite and `fdatasync` of a small file costs about 120 µs,
//! and about 180 µs with a `stat` before each write (docs/benchmarks.md, "Asking a file's
//! times costs a second write at every sync"). `std`'s `metadata` asks for every basic
//! field, times included, so the store's files are inspected here, with `statx` asked for
//! what the store uses and nothing else. Elsewhere (and on a kernel without `statx`) this
//! is `std`'s metadata.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// A file's kind, owner, mode, length and identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    kind: Kind,
    uid: u32,
    mode: u32,
    len: u64,
    dev: u64,
    ino: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

impl Meta {
    /// The metadata of an open file.
    pub(crate) fn of_file(file: &File) -> io::Result<Self> {
        let from_std = || file.metadata().map(|meta| Self::from_std(&meta));
        #[cfg(target_os = "linux")]
        return or_else(
            linux::statx(file, "", rustix::fs::AtFlags::EMPTY_PATH),
            from_std,
        );
        #[cfg(not(target_os = "linux"))]
        from_std()
    }

    /// The metadata of what `path` names, not following a symbolic link there.
    pub(crate) fn of_path(path: &Path) -> io::Result<Self> {
        let from_std = || fs::symlink_metadata(path).map(|meta| Self::from_std(&meta));
        #[cfg(target_os = "linux")]
        return or_else(
            linux::statx(rustix::fs::CWD, path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW),
            from_std,
        );
        #[cfg(not(target_os = "linux"))]
        from_std()
    }

    fn from_std(meta: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        let kind = meta.file_type();
        Self {
            kind: if kind.is_symlink() {
                Kind::Symlink
            } else if kind.is_dir() {
                Kind::Dir
            } else if kind.is_file() {
                Kind::File
            } else {
                Kind::Other
            },
            uid: meta.uid(),
            mode: meta.mode() & 0o7777,
            len: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    pub(crate) fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    pub(crate) fn is_symlink(&self) -> bool {
        self.kind == Kind::Symlink
    }

    pub(crate) fn uid(&self) -> u32 {
        self.uid
    }

    /// The permission bits (with set-id and sticky bits), without the file type.
    pub(crate) fn mode(&self) -> u32 {
        self.mode
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether both describe the same file (device and inode).
    pub(crate) fn same_file(&self, other: &Self) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }
}

/// `statx`'s answer, or `std`'s where the kernel has no `statx` (before Linux 4.11).
#[cfg(target_os = "linux")]
fn or_else(statx: io::Result<Meta>, std: impl FnOnce() -> io::Result<Meta>) -> io::Result<Meta> {
    match statx {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOSYS.raw_os_error()) => std(),
        answer => answer,
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::AsFd;

    use rustix::fs::{AtFlags, FileType, StatxFlags};

    use super::{Kind, Meta};

    /// What the store reads: no times (see the module's documentation).
    const FIELDS: StatxFlags = StatxFlags::TYPE
        .union(StatxFlags::MODE)
        .union(StatxFlags::UID)
        .union(StatxFlags::INO)
        .union(StatxFlags::SIZE);

    pub(super) fn statx<P: rustix::path::Arg>(
        at: impl AsFd,
        path: P,
        flags: AtFlags,
    ) -> io::Result<Meta> {
        let got = rustix::fs::statx(at, path, flags, FIELDS)?;
        if !StatxFlags::from_bits_retain(got.stx_mask).contains(FIELDS) {
            return Err(io::Error::other(
                "the file system did not report a file's type, mode, owner, inode and size",
            ));
        }
        let mode = u32::from(got.stx_mode);
        Ok(Meta {
            kind: match FileType::from_raw_mode(mode) {
                FileType::RegularFile => Kind::File,
                FileType::Directory => Kind::Dir,
                FileType::Symlink => Kind::Symlink,
                _ => Kind::Other,
            },
            uid: got.stx_uid,
            mode: mode & 0o7777,
            len: got.stx_size,
            dev: rustix::fs::makedev(got.stx_dev_major, got.stx_dev_minor),
            ino: got.stx_ino,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::*;

    fn agrees(meta: &Meta, std: &fs::Metadata) {
        assert_eq!(*meta, Meta::from_std(std));
        assert_eq!(
            (meta.uid(), meta.mode(), meta.len()),
            (std.uid(), std.mode() & 0o7777, std.len())
        );
    }

    #[test]
    fn says_what_std_says_of_files_directories_and_links() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        fs::write(&file, b"twelve bytes").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        let link = tmp.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();

        let opened = File::open(&file).unwrap();
        let of_file = Meta::of_file(&opened).unwrap();
        agrees(&of_file, &opened.metadata().unwrap());
        assert!(of_file.is_file() && !of_file.is_dir() && !of_file.is_symlink());
        assert_eq!((of_file.len(), of_file.mode()), (12, 0o640));

        let of_path = Meta::of_path(&file).unwrap();
        assert_eq!(of_path, of_file);
        assert!(of_path.same_file(&of_file));

        let dir = Meta::of_path(tmp.path()).unwrap();
        agrees(&dir, &fs::symlink_metadata(tmp.path()).unwrap());
        assert!(dir.is_dir() && !dir.is_file());
        assert!(!dir.same_file(&of_file));

        // The link itself, not what it names.
        let of_link = Meta::of_path(&link).unwrap();
        agrees(&of_link, &fs::symlink_metadata(&link).unwrap());
        assert!(of_link.is_symlink() && !of_link.is_file());
        assert!(!of_link.same_file(&of_file));

        let missing = Meta::of_path(&tmp.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn the_owner_is_the_files_not_this_users() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        fs::write(&file, b"").unwrap();
        let mine = Meta::of_path(&file).unwrap().uid();
        assert_eq!(mine, rustix::process::geteuid().as_raw());
        // As root (as CI runs), give it to nobody; otherwise this user's uid is not 0.
        if mine == 0 {
            std::os::unix::fs::chown(&file, Some(65_534), None).unwrap();
            assert_eq!(Meta::of_path(&file).unwrap().uid(), 65_534);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn std_answers_only_where_the_kernel_has_no_statx() {
        let tmp = tempfile::tempdir().unwrap();
        let std = || Meta::of_path(tmp.path());
        let nosys = io::Error::from_raw_os_error(rustix::io::Errno::NOSYS.raw_os_error());
        assert_eq!(or_else(Err(nosys), std).unwrap(), std().unwrap());
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(
            or_else(Err(missing), std).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let file = Meta::of_file(&File::open(tmp.path()).unwrap()).unwrap();
        assert!(
            or_else(Ok(file), || unreachable!())
                .unwrap()
                .same_file(&file)
        );
    }

    #[test]
    fn a_file_replaced_at_its_name_is_another_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (path, other) = (tmp.path().join("a"), tmp.path().join("b"));
        fs::write(&path, b"1").unwrap();
        fs::write(&other, b"2").unwrap();
        let held = Meta::of_path(&path).unwrap();
        fs::rename(&other, &path).unwrap();
        assert!(!Meta::of_path(&path).unwrap().same_file(&held));
    }
}
