//! What `gc` and `ls` list: a [`Tree`] of the place given, read on demand
//! (docs/format.md §1 "Clearing a dead writer's claim"): every object of an
//! object store listed once (`gc`: [`Listed`], from [`file_tree`] for a
//! `file://` directory), its levels listed with a delimiter (`ls`:
//! [`Delimited`]), or a local directory read level by level ([`LocalTree`]);
//! [`Memo`] reads each level once.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fd::AsFd;
use rustix::fs::{statat, AtFlags, Dir, FileType};
use rustix::io::Errno;

use super::GcReport;
use crate::error::{Error, Result};
use crate::storage::local::{self, VersionDir};
use crate::storage::location::Marker;
use crate::storage::object::ObjectLocation;
use crate::storage::{Location, Small};

/// Why a file `file_tree` finds is reported and not followed.
const THROUGH_LINK: &str = "is a symbolic link (or unreadable): gc never deletes through it; kept";
const NOT_UTF8: &str =
    "has a name that is not UTF-8: gc does not name or remove it; kept (remove it by hand if nobody needs it)";

/// What is directly under one place: its sub-directories (common prefixes)
/// and its files (objects) with their modification times.
#[derive(Debug, Default, Clone)]
pub(super) struct Level {
    pub(super) dirs: BTreeSet<String>,
    pub(super) files: BTreeMap<String, SystemTime>,
    /// Local: its sub-directories whose names are not UTF-8 (shown with
    /// U+FFFD): gc cannot name them to read them, so what they hold, a
    /// version or a dataset perhaps, is not known.
    pub(super) unnamed: BTreeSet<String>,
    /// Local: its symbolic links to directories: gc never follows one, so
    /// what they lead to, a version or a dataset perhaps, is not known.
    pub(super) linked: BTreeSet<String>,
    /// Local: its sub-directories this user may not list or enter (their
    /// permissions: `lost+found` at the root of a mounted disk, another
    /// user's folder), so what they hold, a version or a dataset perhaps,
    /// is not known.
    pub(super) unreadable: BTreeSet<String>,
    /// Local: which of `files` are never a writer's, so never one a rule
    /// counts: symbolic links (looked through, never read or followed) and
    /// files whose names are not UTF-8 (gc's walk of a `file://` place
    /// reports and keeps them, [`file_tree`]).
    pub(super) unread_files: BTreeSet<String>,
}

/// The tree under the place given, read on demand; paths are relative to it
/// and `/`-separated (`""` is the place itself).
pub(super) trait Tree {
    /// What is directly under `rel`; empty when it does not exist.
    fn level(&self, rel: &str) -> Result<Level>;
    /// What the marker file at `rel` of `place` holds in its string field
    /// `key` ([`Location::marker`]).
    fn marker(&self, place: &Location, rel: &str, key: &str) -> Result<Marker> {
        place.marker(rel, key)
    }
    /// Every file under `rel` with its time, relative to the place, sorted.
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>>;
    /// The levels read so far that could not be listed, relative to the
    /// place (an object store's key its client cannot name:
    /// [`crate::storage::object::UNLISTABLE`]); what is under them is unknown.
    fn unlistable(&self) -> Vec<String> {
        Vec::new()
    }
    /// The levels found so far that this user may not read or enter
    /// (`file://`, read by [`file_tree`]), relative to the place; what is
    /// under them is unknown, as under an unlistable one.
    fn closed(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A key or name an object store lists (each segment percent-encoded the way
/// `object_store` spells `#`, `%` and the like) as the text it stands for,
/// which [`ObjectLocation::join`] encodes again: once, not twice.
pub(super) fn decoded(key: &str) -> String {
    key.split('/')
        .map(|part| percent_encoding::percent_decode_str(part).decode_utf8_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// `name` under `rel` (`""`: the place itself), `/`-separated.
pub(super) fn join(rel: &str, name: &str) -> String {
    match (rel.is_empty(), name.is_empty()) {
        (true, _) => name.to_string(),
        // (a listing's own level, `""`, is `rel` itself)
        (false, true) => rel.to_string(),
        (false, false) => format!("{rel}/{name}"),
    }
}

/// True when `level` is `rel` or under it (`""`: the place, holding every level).
pub(super) fn within(level: &str, rel: &str) -> bool {
    rel.is_empty() || level == rel || level.starts_with(&format!("{rel}/"))
}

/// Every object under an object-store place, listed once, and the levels
/// that could not be listed; on `file://` also the directories [`file_tree`]
/// did not read.
pub(super) struct Listed {
    pub(super) files: BTreeMap<String, SystemTime>,
    pub(super) unlistable: Vec<String>,
    pub(super) unread: UnreadDirs,
}

/// `file://`: entries [`file_tree`] found and did not read, relative to the
/// place. Each is given to classifying at its parent's level as a local
/// place's reading gives it ([`Level`]): what a folder of them holds, a
/// version or a dataset perhaps, is not known, and a link named like a marker
/// is a marker that cannot be read.
#[derive(Debug, Default)]
pub(super) struct UnreadDirs {
    /// Folders this user may not read or enter.
    pub(super) closed: BTreeSet<String>,
    /// Symbolic links to directories, or whose target this user cannot
    /// examine (never followed).
    pub(super) linked: BTreeSet<String>,
    /// Folders whose names are not UTF-8 (shown with U+FFFD).
    pub(super) unnamed: BTreeSet<String>,
    /// Symbolic links to anything but a directory (a file, nothing), or whose
    /// target this user cannot examine: files of their level to classifying,
    /// whose content is never read.
    pub(super) link_files: BTreeSet<String>,
}

impl UnreadDirs {
    fn all(&self) -> impl Iterator<Item = &String> {
        self.closed.iter().chain(&self.linked).chain(&self.unnamed).chain(&self.link_files)
    }
}

impl Listed {
    fn under<'a>(&'a self, rel: &str) -> impl Iterator<Item = (&'a str, &'a String, &'a SystemTime)> + 'a {
        let prefix = if rel.is_empty() { String::new() } else { format!("{rel}/") };
        let n = prefix.len();
        self.files
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(move |(k, t)| (&k[n..], k, t))
    }
}

impl Tree for Listed {
    fn level(&self, rel: &str) -> Result<Level> {
        let mut level = Level::default();
        for (tail, _, t) in self.under(rel) {
            match tail.split_once('/') {
                Some((dir, _)) => drop(level.dirs.insert(dir.to_string())),
                None => drop(level.files.insert(tail.to_string(), *t)),
            }
        }
        let prefix = if rel.is_empty() { String::new() } else { format!("{rel}/") };
        let here = |dirs: &BTreeSet<String>| -> Vec<String> {
            dirs.iter()
                .filter_map(|d| d.strip_prefix(&prefix))
                .filter(|n| !n.contains('/'))
                .map(str::to_string)
                .collect()
        };
        // a folder holding only entries gc did not read is one of this level
        // too (review 124: it was missing, and what it may mark unknown)
        for deeper in self.unread.all().filter_map(|e| e.strip_prefix(&prefix)) {
            if let Some((dir, _)) = deeper.split_once('/') {
                level.dirs.insert(dir.to_string());
            }
        }
        level.unreadable.extend(here(&self.unread.closed));
        level.linked.extend(here(&self.unread.linked));
        level.unnamed.extend(here(&self.unread.unnamed));
        // taken as new, so never old enough to go
        level.files.extend(here(&self.unread.link_files).into_iter().map(|f| (f, SystemTime::now())));
        Ok(level)
    }
    /// A link is never read through: one named like a marker is a marker
    /// that cannot be read, as a local place's reading finds it.
    fn marker(&self, place: &Location, rel: &str, key: &str) -> Result<Marker> {
        if self.unread.link_files.contains(rel) {
            return Ok(Marker::Unreadable);
        }
        place.marker(rel, key)
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        Ok(self.under(rel).map(|(_, k, t)| (k.clone(), *t)).collect())
    }
    fn unlistable(&self) -> Vec<String> {
        self.unlistable.clone()
    }
    fn closed(&self) -> Vec<String> {
        self.unread.closed.iter().cloned().collect()
    }
}

/// An object-store place listed level by level with a delimiter; a level
/// that cannot be listed reads as empty and is recorded.
pub(super) struct Delimited(pub(super) ObjectLocation, pub(super) RefCell<BTreeSet<String>>);

impl Tree for Delimited {
    fn level(&self, rel: &str) -> Result<Level> {
        let at = self.0.join(rel);
        let Some((dirs, files)) = at.list_level()? else {
            // the place itself: nothing can be said of it
            if rel.is_empty() {
                return Err(crate::storage::object::cannot_list(&at));
            }
            self.1.borrow_mut().insert(rel.to_string());
            return Ok(Level::default());
        };
        Ok(Level {
            dirs: dirs.iter().map(|d| decoded(d)).collect(),
            files: files.into_iter().map(|(f, t)| (decoded(&f), t)).collect(),
            ..Level::default()
        })
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        let (keys, unlistable) = self.0.join(rel).list_times()?;
        self.1.borrow_mut().extend(unlistable.iter().map(|u| join(rel, &decoded(u))));
        Ok(keys.into_iter().map(|(k, t)| (join(rel, &decoded(&k)), t)).collect())
    }
    fn unlistable(&self) -> Vec<String> {
        self.1.borrow().iter().cloned().collect()
    }
}

/// A `file://` place read as a local one ([`LocalTree`]: a level at a time
/// through handles, links never followed), its levels without the files
/// object_store's local store is still writing (`name#N`, N digits, renamed
/// to `name` once written, which its own listings leave out too): a claim
/// being written does not make its version look like a user's folder.
pub(super) struct FileUrlTree(pub(super) LocalTree);

/// Whether `name`, a file's relative path, is object_store's `LocalFileSystem`
/// writing it still (its rule: a `#` in the last segment, then digits only).
fn in_flight(name: &str) -> bool {
    let last = name.rsplit('/').next().unwrap_or(name);
    matches!(last.split_once('#'), Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl Tree for FileUrlTree {
    fn level(&self, rel: &str) -> Result<Level> {
        let mut level = self.0.level(rel)?;
        level.files.retain(|name, _| !in_flight(name));
        Ok(level)
    }
    fn marker(&self, place: &Location, rel: &str, key: &str) -> Result<Marker> {
        self.0.marker(place, rel, key)
    }
    /// [`LocalTree::files_under`], the files object_store is still writing
    /// included (a rule judges a claim's idleness by its newest file, and a
    /// writer streaming a shard touches that one last), as gc's walk of a
    /// `file://` place ([`file_tree`]) counts them.
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        self.0.files_under(rel)
    }
    fn closed(&self) -> Vec<String> {
        self.0.closed()
    }
}

/// A tree whose levels are read once: classifying a root reads each
/// child's level to tell whether the root itself is a dataset, then again as a dataset.
pub(super) struct Memo<'a> {
    pub(super) tree: &'a dyn Tree,
    pub(super) levels: std::cell::RefCell<BTreeMap<String, Level>>,
}

impl Tree for Memo<'_> {
    fn level(&self, rel: &str) -> Result<Level> {
        if let Some(level) = self.levels.borrow().get(rel) {
            return Ok(level.clone());
        }
        let level = self.tree.level(rel)?;
        self.levels.borrow_mut().insert(rel.to_string(), level.clone());
        Ok(level)
    }
    fn marker(&self, place: &Location, rel: &str, key: &str) -> Result<Marker> {
        self.tree.marker(place, rel, key)
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        self.tree.files_under(rel)
    }
    fn unlistable(&self) -> Vec<String> {
        self.tree.unlistable()
    }
    fn closed(&self) -> Vec<String> {
        self.tree.closed()
    }
}

/// A local directory read level by level through handles: the place's,
/// opened once, and each level's opened from the one above it without
/// following a link or waiting ([`VersionDir::open_in_parent`]); a symbolic
/// link is a file, never followed. Each level listed is recorded with its
/// identity (device, inode), and every level reached again must be the one
/// listed: a rule acts only on what was classified ([`LocalTree::reach`]).
pub(super) struct LocalTree {
    root: PathBuf,
    place: VersionDir,
    listed: RefCell<BTreeMap<String, (u64, u64)>>,
    /// The folders this user may not read that [`Tree::files_under`] met.
    closed: RefCell<BTreeSet<String>>,
}

impl LocalTree {
    /// Opens the place `root` (a link there is the user's own choice).
    ///
    /// # Errors
    /// [`Error::Missing`] when there is no directory at `root`; [`Error::Io`] otherwise.
    pub(super) fn open(root: &Path) -> Result<LocalTree> {
        let place = match VersionDir::open(root) {
            Ok(place) => place,
            // one rule for what does not exist (docs/format.md "Exit codes")
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(crate::storage::missing_dir(root))
            }
            Err(e) => return Err(e),
        };
        Ok(LocalTree { root: root.to_path_buf(), place, listed: RefCell::default(), closed: RefCell::default() })
    }

    /// The place's path.
    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// The directory `rel` (`""`: the place), opened level by level from the
    /// place's handle; each level already listed must be the directory
    /// listed. `Ok(None)` when a level is gone (committed or aborted meanwhile).
    ///
    /// # Errors
    /// A level that is now a link, no directory, another directory than
    /// the one listed, or cannot be opened.
    pub(super) fn reach(&self, rel: &str) -> io::Result<Option<VersionDir>> {
        let mut dir = VersionDir::open_in_parent(self.place.as_fd(), ".", self.root.clone())?;
        let mut at = String::new();
        for level in rel.split('/').filter(|l| !l.is_empty()) {
            at = join(&at, level);
            dir = match VersionDir::open_in_parent(dir.as_fd(), level, self.root.join(&at)) {
                Ok(dir) => dir,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            if let Some(listed) = self.listed.borrow().get(&at) {
                if identity(&rustix::fs::fstat(&dir)?) != *listed {
                    // gc's or ls's: the message names neither
                    return Err(io::Error::other("replaced since it was listed: no longer the directory read there"));
                }
            }
        }
        Ok(Some(dir))
    }

    /// The identity of `rel` when it was listed.
    pub(super) fn listed(&self, rel: &str) -> Option<(u64, u64)> {
        self.listed.borrow().get(rel).copied()
    }

    /// What is directly under `dir`, the level `rel` reached, recorded as
    /// listed with its identity.
    fn read(&self, dir: &VersionDir, rel: &str) -> Result<Level> {
        let path = self.root.join(rel);
        let io = |e: Errno| Error::io(&path, e.into());
        let itself = identity(&rustix::fs::fstat(dir).map_err(io)?);
        self.listed.borrow_mut().insert(rel.to_string(), itself);
        let mut level = Level::default();
        for entry in Dir::read_from(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            let shown = name.to_string_lossy().into_owned();
            // an entry that cannot be examined (a directory listed but not
            // entered) is not known: nothing is judged from an empty level
            let st = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(Error::io(path.join(&shown), e.into())),
            };
            let file_type = FileType::from_raw_mode(st.st_mode);
            // a link is looked through, never opened: one to a directory may
            // be a linked-in version or dataset (readers follow it)
            let target = (file_type == FileType::Symlink).then(|| {
                link_target(
                    statat(dir, name, AtFlags::empty())
                        .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory),
                )
            });
            if file_type == FileType::Directory {
                match name.to_str() {
                    Err(_) => level.unnamed.insert(shown),
                    Ok(_) if !may_enter(dir, name) => level.unreadable.insert(shown),
                    Ok(_) => level.dirs.insert(shown),
                };
                continue;
            }
            if matches!(target, Some(LinkTarget::Dir | LinkTarget::Unknown)) {
                level.linked.insert(shown.clone());
            }
            if !matches!(target, Some(LinkTarget::Dir)) {
                if target.is_some() || name.to_str().is_err() {
                    level.unread_files.insert(shown.clone());
                }
                level.files.insert(shown, local::modified(&st));
            }
        }
        Ok(level)
    }
}

/// What a symbolic link leads to, by a look through it (`stat(2)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkTarget {
    /// A directory: a linked-in version or dataset, perhaps.
    Dir,
    /// Anything else, or nothing (dangling, a loop, a file on the way).
    NotDir,
    /// This user cannot tell (review 125): it may be a folder, and a link
    /// named like a marker is one that cannot be read: both.
    Unknown,
}

/// [`LinkTarget`] from a look through a link: whether it found a directory.
fn link_target(looked: std::result::Result<bool, Errno>) -> LinkTarget {
    match looked {
        Ok(true) => LinkTarget::Dir,
        Ok(false) | Err(Errno::NOENT | Errno::LOOP | Errno::NOTDIR) => LinkTarget::NotDir,
        Err(_) => LinkTarget::Unknown,
    }
}

/// Whether this user may list and enter the directory `name` of `dir` by
/// its permissions (`access(2)`: read and search); an answer other than a
/// refusal (the directory gone meanwhile, say) leaves it to the read.
fn may_enter(dir: impl AsFd, name: &std::ffi::CStr) -> bool {
    use rustix::fs::{accessat, Access};
    !matches!(
        accessat(dir, name, Access::READ_OK | Access::EXEC_OK, AtFlags::empty()),
        Err(Errno::ACCESS | Errno::PERM)
    )
}

/// The identity of a file: (device, inode).
pub(super) fn identity(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

impl Tree for LocalTree {
    fn level(&self, rel: &str) -> Result<Level> {
        let path = self.root.join(rel);
        let reached;
        let dir = match rel {
            "" => &self.place,
            _ => match self.reach(rel) {
                Ok(Some(dir)) => {
                    reached = dir;
                    &reached
                }
                // gone since its parent was read (a writer committed, aborted)
                Ok(None) => return Ok(Level::default()),
                // replaced since: nothing is judged from a level that is not the one listed
                Err(e) => return Err(Error::io(&path, e)),
            },
        };
        if rel.is_empty() {
            crate::storage::pause_point("gc-place-opened");
        }
        self.read(dir, rel)
    }
    fn marker(&self, _place: &Location, rel: &str, key: &str) -> Result<Marker> {
        let (dir_rel, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let path = self.root.join(rel);
        let dir = match self.reach(dir_rel) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(Marker::NotOne),
            Err(e) => return Err(Error::io(&path, e)),
        };
        // looked at first, never opened unless a regular file (a device is
        // never opened: a tape rewinds), then read relative to the level
        // listed, never through a link; what cannot be read (a link, a FIFO,
        // a read that fails, a file gone between the look and the open) is
        // no sign either way
        match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => return Ok(Marker::NotOne),
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {}
            _ => return Ok(Marker::Unreadable),
        }
        let small = match local::read_small(&dir.path().join(name), Some(&dir), crate::limits::MAX_MANIFEST_BYTES) {
            Ok(Small::Missing) | Err(Error::Io { .. }) => Small::Refused(String::new()),
            small => small?,
        };
        Ok(Marker::of(small, key))
    }
    /// Every file under `rel` with its time, sorted, read level by level as
    /// gc's walk of a `file://` place ([`file_tree`]) reads it: a link is
    /// never followed nor counted, nor is a file whose name is not UTF-8, nor
    /// a folder of such a name entered; a folder this user may not read is recorded as closed
    /// ([`Tree::closed`]: the rules act on nothing around it, and it is
    /// reported), not an error. `rel` and each level below it are reached as
    /// their levels were listed, never through a link (one at `rel` holds
    /// nothing), so nothing swapped in meanwhile is read ([`LocalTree::reach`]).
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        let mut files = Vec::new();
        let mut todo = vec![rel.to_string()];
        while let Some(at) = todo.pop() {
            let dir = match self.reach(&at) {
                Ok(Some(dir)) => dir,
                // gone since it was listed (a writer committed, aborted), or a
                // link now, which holds nothing (review 128: a folder below
                // `rel` swapped for one failed ls)
                Ok(None) => continue,
                Err(e) if matches!(Errno::from_io_error(&e), Some(Errno::LOOP | Errno::NOTDIR)) => continue,
                Err(e) => return Err(Error::io(self.root().join(&at), e)),
            };
            let level = self.read(&dir, &at)?;
            let here = |name: &String| join(&at, name);
            self.closed.borrow_mut().extend(level.unreadable.iter().map(here));
            let counted = level.files.iter().filter(|(f, _)| !level.unread_files.contains(*f));
            files.extend(counted.map(|(f, t)| (here(f), *t)));
            todo.extend(level.dirs.iter().map(here));
        }
        files.sort();
        Ok(files)
    }
    fn closed(&self) -> Vec<String> {
        self.closed.borrow().iter().cloned().collect()
    }
}

/// `file://`: every file below `dir`, keyed by its names joined with `/`,
/// with its modification time. Read from the directory itself, not through
/// object_store's listing: a name is never decoded into a path (a file named
/// `a%2F..%2Fb` is that one file, not `../b`), and what that listing hides is
/// found too (a killed upload's `<name>#<n>`, which readers of the version's
/// directory would read). A symbolic link is not followed, nor is a name that
/// is not UTF-8: each is reported as odd once, in name order (gc never
/// deletes through a link, out of the root). A directory gone meanwhile
/// (committed, aborted) is skipped. A directory below `dir` this user may not
/// read or enter (`access(2)`, as [`LocalTree`] checks) is not read: it is
/// returned in the second set, a level whose content is unknown (the rules
/// act on nothing there, and classifying reads it as a folder it cannot read).
///
/// # Errors
/// I/O errors reading it.
pub(super) fn file_tree(
    dir: &Path,
    shown: impl Fn(&str) -> String,
    report: &mut GcReport,
) -> Result<(BTreeMap<String, SystemTime>, UnreadDirs)> {
    let mut files = BTreeMap::new();
    let mut unread = UnreadDirs::default();
    let mut odd: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut todo = vec![String::new()];
    while let Some(rel) = todo.pop() {
        let entries = match fs::read_dir(dir.join(&rel)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(dir.join(&rel), e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir.join(&rel), e))?;
            // a link to a directory, or to what this user cannot examine, may
            // be a linked-in version or dataset; one to anything else is a
            // file of its level (review 124: named like a marker, it is one
            // that cannot be read)
            let link = |unread: &mut UnreadDirs, at: &str| {
                let looked = fs::metadata(dir.join(&rel).join(entry.file_name()))
                    .map(|m| m.is_dir())
                    .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO));
                let target = link_target(looked);
                if target != LinkTarget::NotDir {
                    unread.linked.insert(at.to_string());
                }
                if target != LinkTarget::Dir {
                    unread.link_files.insert(at.to_string());
                }
            };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                let at = join(&rel, &entry.file_name().to_string_lossy());
                match entry.file_type() {
                    Ok(t) if t.is_dir() => drop(unread.unnamed.insert(at.clone())),
                    Ok(t) if t.is_symlink() => link(&mut unread, &at),
                    _ => {}
                }
                odd.insert(at, NOT_UTF8);
                continue;
            };
            let at = join(&rel, &name);
            let meta = match fs::symlink_metadata(dir.join(&at)) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(dir.join(&at), e)),
            };
            if meta.file_type().is_symlink() {
                link(&mut unread, &at);
                odd.insert(at, THROUGH_LINK);
            } else if meta.is_dir() {
                let may = rustix::fs::access(&dir.join(&at), rustix::fs::Access::READ_OK | rustix::fs::Access::EXEC_OK);
                match may {
                    Err(Errno::ACCESS | Errno::PERM) => drop(unread.closed.insert(at)),
                    _ => todo.push(at),
                }
            } else {
                // no time read: taken as new, so never old enough to go
                files.insert(at, meta.modified().unwrap_or_else(|_| SystemTime::now()));
            }
        }
    }
    report.odd.extend(odd.into_iter().map(|(rel, why)| (shown(&rel), why.to_string())));
    Ok((files, unread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_answers_levels_and_files_under_a_prefix_at_exact_levels() {
        let t = SystemTime::UNIX_EPOCH;
        let listed = Listed {
            files: ["a/1/manifest.json", "a/1/time_series/s.parquet", "a/10/x", "a/notes.txt", "ab/y"]
                .into_iter()
                .map(|k| (k.to_string(), t))
                .collect(),
            unlistable: Vec::new(),
            unread: UnreadDirs::default(),
        };
        let top = listed.level("").unwrap();
        assert_eq!(top.dirs.into_iter().collect::<Vec<_>>(), ["a", "ab"]);
        let a = listed.level("a").unwrap();
        assert_eq!(a.dirs.into_iter().collect::<Vec<_>>(), ["1", "10"]);
        assert_eq!(a.files.into_keys().collect::<Vec<_>>(), ["notes.txt"]);
        let under: Vec<String> = listed.files_under("a/1").unwrap().into_iter().map(|(f, _)| f).collect();
        assert_eq!(under, ["a/1/manifest.json", "a/1/time_series/s.parquet"]);
    }

    /// Review 117: a level replaced by another directory once listed is
    /// refused when reached again, in words that fit `ls` as well as `gc`
    /// (they said "the directory gc listed"), and so are the files under it.
    #[test]
    fn a_level_replaced_since_it_was_listed_is_refused_in_words_for_ls_and_gc() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("ds/v1")).unwrap();
        fs::write(tmp.path().join("ds/v1/f"), b"f").unwrap();
        let tree = FileUrlTree(LocalTree::open(tmp.path()).unwrap());
        assert_eq!(tree.level("ds/v1").unwrap().files.into_keys().collect::<Vec<_>>(), ["f"]);
        assert_eq!(tree.files_under("ds/v1").unwrap().len(), 1);
        // another directory at its name
        fs::rename(tmp.path().join("ds/v1"), tmp.path().join("ds/v1.old")).unwrap();
        fs::create_dir(tmp.path().join("ds/v1")).unwrap();
        let why = "replaced since it was listed: no longer the directory read there";
        assert_eq!(tree.0.reach("ds/v1").err().map(|e| e.to_string()), Some(why.to_string()));
        let err = tree.files_under("ds/v1").unwrap_err().to_string();
        assert!(err.ends_with(why), "{err}");
    }
}
