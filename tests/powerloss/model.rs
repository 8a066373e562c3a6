//! The states a power loss can leave on disk, worked out from the trace of one operation.
//!
//! The model, after ALICE (OSDI '14) and `CrashMonkey` (OSDI '18), kept deliberately small:
//! - the store's directory before the operation is durable (the harness starts from a
//!   store whose earlier operations all completed, and treats their files as persisted);
//! - each file and each directory is an object; a file's data operations (appends, writes,
//!   truncations) are covered by a later fsync of that file, a directory's entry operations
//!   (creates, mkdirs, renames into it, unlinks) by a later fsync of that directory;
//! - after a crash, each object keeps every covered operation and some prefix of the ones
//!   that are not covered: a journal keeps each object's changes in order, but objects are
//!   independent, so a name can survive without its data, a rename can revert while the
//!   file written before it stays, and a later file can survive an earlier one;
//! - the last kept append of a file may be torn (half of it reaches the disk);
//! - a `pwrite` of a sector or less is whole or absent (the 144-byte audit anchor); a larger
//!   one (a journal entry, the zeros kept ahead of them) may be torn like an append;
//! - a `syncfs` covers every change before it.
//!
//! A crash can come after any prefix of the trace, including the whole of it: an operation
//! that returned may still lose whatever it did not fsync.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use approval_gate::fs_trace::FsOp;

/// A `pwrite` no larger than this is whole or absent after a power loss.
const SECTOR: usize = 512;

/// Everything under the store's directory: directories and files with their bytes, by
/// path relative to the store.
pub(crate) type Disk = BTreeMap<PathBuf, Option<Vec<u8>>>;

/// Reads the store's directory as it is now.
pub(crate) fn snapshot(root: &Path) -> Disk {
    fn walk(root: &Path, dir: &Path, out: &mut Disk) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            // The 256 request locks hold no state (the store makes them again on opening):
            // left out, so that each of the thousands of states written out is a dozen
            // files, not three hundred.
            if rel.parent() == Some(Path::new("locks")) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Disk::new();
    walk(root, root, &mut out);
    out
}

/// Writes `disk` out as a fresh store directory at `root`, with the modes the store keeps
/// (`0700` directories, `0600` files): a power loss does not change modes, and the store
/// refuses anything open to group or others.
pub(crate) fn materialize(disk: &Disk, root: &Path) {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

    // The lock files the last state's store made are kept (see `snapshot`).
    if root.exists() {
        for entry in std::fs::read_dir(root).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() == "locks" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                std::fs::remove_dir_all(entry.path()).unwrap();
            } else {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
    }
    let mut dirs = std::fs::DirBuilder::new();
    dirs.recursive(true).mode(0o700);
    dirs.create(root).unwrap();
    for (path, content) in disk {
        let full = root.join(path);
        match content {
            None => dirs.create(&full).unwrap(),
            Some(bytes) => {
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&full)
                    .unwrap();
                std::io::Write::write_all(&mut file, bytes).unwrap();
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Node {
    Dir,
    File(usize),
}

#[derive(Debug, Clone)]
enum Data {
    Append(Vec<u8>),
    WriteAt(u64, Vec<u8>),
    Truncate(u64),
}

#[derive(Debug, Clone)]
enum Effect {
    Mkdir(PathBuf),
    Link(PathBuf, usize),
    Rename(PathBuf, PathBuf),
    Unlink(PathBuf),
    Data(usize, Data),
    SyncFile(usize),
    SyncDir(PathBuf),
    /// `syncfs`: every object's changes so far.
    SyncAll,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Object {
    Dir(PathBuf),
    File(usize),
}

impl Effect {
    /// The object this step changes, or syncs.
    fn object(&self) -> Object {
        match self {
            Effect::Mkdir(p) | Effect::Link(p, _) | Effect::Unlink(p) | Effect::Rename(_, p) => {
                Object::Dir(parent(p))
            }
            Effect::Data(i, _) | Effect::SyncFile(i) => Object::File(*i),
            Effect::SyncDir(d) => Object::Dir(d.clone()),
            Effect::SyncAll => Object::Dir(PathBuf::new()),
        }
    }

    fn is_sync(&self) -> bool {
        matches!(
            self,
            Effect::SyncFile(_) | Effect::SyncDir(_) | Effect::SyncAll
        )
    }
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// One operation's trace, resolved to the objects it touches.
pub(crate) struct Trace {
    base: BTreeMap<PathBuf, Node>,
    base_data: Vec<Vec<u8>>,
    steps: Vec<(FsOp, Effect)>,
}

/// One state a power loss can leave.
pub(crate) struct CrashState {
    /// How many recorded operations had been issued when the power went.
    pub(crate) after: usize,
    /// The disk as it comes back.
    pub(crate) disk: Disk,
    /// What was lost, for the failure message.
    pub(crate) lost: String,
    /// Whether anything was lost or torn.
    pub(crate) lossy: bool,
}

impl Trace {
    /// Resolves `ops` (recorded in the store at `root`) against the disk `before` them.
    pub(crate) fn new(root: &Path, before: &Disk, ops: Vec<FsOp>) -> Self {
        let mut base = BTreeMap::new();
        let mut base_data = Vec::new();
        for (path, content) in before {
            let node = match content {
                None => Node::Dir,
                Some(bytes) => {
                    base_data.push(bytes.clone());
                    Node::File(base_data.len() - 1)
                }
            };
            base.insert(path.clone(), node);
        }
        let mut live = base.clone();
        let mut inodes = base_data.len();
        let rel = |p: &Path| p.strip_prefix(root).ok().map(Path::to_path_buf);
        let file = |live: &BTreeMap<PathBuf, Node>, p: &Path| match live.get(p) {
            Some(Node::File(i)) => *i,
            other => panic!("the trace writes {} but it is {other:?}", p.display()),
        };
        let mut steps = Vec::new();
        for op in ops {
            let effect = match &op {
                // Outside the store (the directories above it): not part of its state.
                FsOp::Mkdir { path } if rel(path).is_none() => continue,
                FsOp::Mkdir { path } => {
                    let p = rel(path).unwrap();
                    live.insert(p.clone(), Node::Dir);
                    Effect::Mkdir(p)
                }
                FsOp::Create { path } => {
                    let p = rel(path).unwrap();
                    live.insert(p.clone(), Node::File(inodes));
                    inodes += 1;
                    Effect::Link(p, inodes - 1)
                }
                FsOp::Link { from, to } => {
                    let (from, to) = (rel(from).unwrap(), rel(to).unwrap());
                    let inode = file(&live, &from);
                    live.insert(to.clone(), Node::File(inode));
                    Effect::Link(to, inode)
                }
                FsOp::Rename { from, to } => {
                    let (from, to) = (rel(from).unwrap(), rel(to).unwrap());
                    // Only same-directory renames are modelled: a rename across directories
                    // would belong to two objects at once.
                    assert_eq!(parent(&from), parent(&to), "rename across directories");
                    let node = live.remove(&from).unwrap();
                    live.insert(to.clone(), node);
                    Effect::Rename(from, to)
                }
                FsOp::Unlink { path } => {
                    let p = rel(path).unwrap();
                    live.remove(&p);
                    Effect::Unlink(p)
                }
                FsOp::Append { path, bytes } => Effect::Data(
                    file(&live, &rel(path).unwrap()),
                    Data::Append(bytes.clone()),
                ),
                FsOp::WriteAt {
                    path,
                    offset,
                    bytes,
                } => Effect::Data(
                    file(&live, &rel(path).unwrap()),
                    Data::WriteAt(*offset, bytes.clone()),
                ),
                FsOp::Truncate { path, len } => {
                    Effect::Data(file(&live, &rel(path).unwrap()), Data::Truncate(*len))
                }
                FsOp::Fsync { path } => Effect::SyncFile(file(&live, &rel(path).unwrap())),
                FsOp::FsyncDir { path } => Effect::SyncDir(rel(path).unwrap()),
                FsOp::SyncFs { .. } => Effect::SyncAll,
            };
            steps.push((op, effect));
        }
        Trace {
            base,
            base_data,
            steps,
        }
    }

    /// How many operations the trace holds.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// Every distinct state a power loss after the first `after` operations can leave.
    pub(crate) fn crash_states(&self, after: usize) -> Vec<CrashState> {
        let mut seen = HashSet::new();
        let prefix = &self.steps[..after];
        // Per object, the steps not covered by a later sync within the prefix.
        let mut uncovered: BTreeMap<Object, Vec<usize>> = BTreeMap::new();
        for (j, (_, effect)) in prefix.iter().enumerate() {
            let object = effect.object();
            if matches!(effect, Effect::SyncAll) {
                uncovered.clear();
            } else if effect.is_sync() {
                uncovered.remove(&object);
            } else {
                uncovered.entry(object).or_default().push(j);
            }
        }
        // Each object's choices: keep the first `c` uncovered steps, the last one torn or not.
        let choices: Vec<Vec<(usize, bool)>> = uncovered
            .values()
            .map(|steps| {
                let mut options = vec![(0, false)];
                for c in 1..=steps.len() {
                    options.push((c, false));
                    match &prefix[steps[c - 1]].1 {
                        Effect::Data(_, Data::Append(bytes)) if bytes.len() > 1 => {
                            options.push((c, true));
                        }
                        // A write larger than a sector (a journal entry) can be torn too.
                        Effect::Data(_, Data::WriteAt(_, bytes)) if bytes.len() > SECTOR => {
                            options.push((c, true));
                        }
                        _ => {}
                    }
                }
                options
            })
            .collect();
        let mut states = Vec::new();
        let mut pick = vec![0usize; choices.len()];
        loop {
            // keep[j]: None = lost, Some(true) = torn, Some(false) = whole.
            let mut keep: Vec<Option<bool>> = vec![Some(false); after];
            let mut lost = String::new();
            for ((steps, options), &p) in uncovered.values().zip(&choices).zip(&pick) {
                let (c, torn) = options[p];
                for (n, &j) in steps.iter().enumerate() {
                    if n >= c {
                        keep[j] = None;
                        let _ = write!(lost, " lost #{j} {:?};", short(&prefix[j].0));
                    } else if torn && n + 1 == c {
                        keep[j] = Some(true);
                        let _ = write!(lost, " torn #{j} {:?};", short(&prefix[j].0));
                    }
                }
            }
            let disk = self.apply(prefix, &keep);
            if seen.insert(disk.clone()) {
                states.push(CrashState {
                    after,
                    disk,
                    lossy: !lost.is_empty(),
                    lost: if lost.is_empty() {
                        " nothing lost".into()
                    } else {
                        lost
                    },
                });
            }
            // Next combination (odometer).
            let mut i = 0;
            loop {
                if i == pick.len() {
                    return states;
                }
                pick[i] += 1;
                if pick[i] < choices[i].len() {
                    break;
                }
                pick[i] = 0;
                i += 1;
            }
        }
    }

    fn apply(&self, prefix: &[(FsOp, Effect)], keep: &[Option<bool>]) -> Disk {
        let mut nodes = self.base.clone();
        let mut data = self.base_data.clone();
        for ((_, effect), keep) in prefix.iter().zip(keep) {
            let Some(torn) = *keep else { continue };
            match effect {
                Effect::Mkdir(p) => {
                    nodes.insert(p.clone(), Node::Dir);
                }
                Effect::Link(p, i) => {
                    if data.len() <= *i {
                        data.resize(*i + 1, Vec::new());
                    }
                    nodes.insert(p.clone(), Node::File(*i));
                }
                Effect::Rename(from, to) => {
                    if let Some(node) = nodes.remove(from) {
                        nodes.insert(to.clone(), node);
                    }
                }
                Effect::Unlink(p) => {
                    nodes.remove(p);
                }
                Effect::Data(i, op) => {
                    if data.len() <= *i {
                        data.resize(*i + 1, Vec::new());
                    }
                    let bytes = &mut data[*i];
                    match op {
                        Data::Append(more) if torn => {
                            bytes.extend_from_slice(&more[..more.len() / 2]);
                        }
                        Data::Append(more) => bytes.extend_from_slice(more),
                        Data::WriteAt(offset, more) if torn => {
                            let start = *offset as usize;
                            let half = &more[..more.len() / 2];
                            if bytes.len() < start + half.len() {
                                bytes.resize(start + half.len(), 0);
                            }
                            bytes[start..start + half.len()].copy_from_slice(half);
                        }
                        Data::WriteAt(offset, more) => {
                            let start = *offset as usize;
                            if bytes.len() < start + more.len() {
                                bytes.resize(start + more.len(), 0);
                            }
                            bytes[start..start + more.len()].copy_from_slice(more);
                        }
                        Data::Truncate(len) => bytes.resize(*len as usize, 0),
                    }
                }
                Effect::SyncFile(_) | Effect::SyncDir(_) | Effect::SyncAll => {}
            }
        }
        let dirs: BTreeSet<&PathBuf> = nodes
            .iter()
            .filter(|(_, n)| **n == Node::Dir)
            .map(|(p, _)| p)
            .collect();
        nodes
            .iter()
            // An entry whose directory did not survive is not reachable.
            .filter(|(p, _)| {
                let up = parent(p);
                up.as_os_str().is_empty() || dirs.contains(&up)
            })
            .map(|(p, n)| {
                let content = match n {
                    Node::Dir => None,
                    Node::File(i) => Some(data.get(*i).cloned().unwrap_or_default()),
                };
                (p.clone(), content)
            })
            .collect()
    }
}

/// An operation without its bytes, for messages.
fn short(op: &FsOp) -> String {
    let name = |p: &Path| {
        let mut parts: Vec<_> = p.iter().rev().take(2).collect();
        parts.reverse();
        parts.iter().collect::<PathBuf>().display().to_string()
    };
    match op {
        FsOp::Mkdir { path } => format!("mkdir {}", name(path)),
        FsOp::Create { path } => format!("create {}", name(path)),
        FsOp::Append { path, bytes } => format!("append {} ({} bytes)", name(path), bytes.len()),
        FsOp::WriteAt { path, bytes, .. } => {
            format!("pwrite {} ({} bytes)", name(path), bytes.len())
        }
        FsOp::Truncate { path, len } => format!("truncate {} to {len}", name(path)),
        FsOp::Link { from, to } => format!("link {} -> {}", name(from), name(to)),
        FsOp::Rename { from, to } => format!("rename {} -> {}", name(from), name(to)),
        FsOp::Unlink { path } => format!("unlink {}", name(path)),
        FsOp::Fsync { path } => format!("fsync {}", name(path)),
        FsOp::FsyncDir { path } => format!("fsync dir {}", name(path)),
        FsOp::SyncFs { .. } => "syncfs".to_owned(),
    }
}

/// The trace, one operation a line, for failure messages.
pub(crate) fn describe(trace: &Trace) -> String {
    trace
        .steps
        .iter()
        .enumerate()
        .fold(String::new(), |mut out, (j, (op, _))| {
            let _ = writeln!(out, "  #{j} {}", short(op));
            out
        })
}
