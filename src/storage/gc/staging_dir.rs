//! A local writer's staging directory as `gc` judges and removes it: reached
//! from the place's handle through the directories it listed, never through
//! a path, and removed through handles, so nothing swapped in after the
//! listing (a link, a FIFO, another directory) is followed, waited on or
//! removed (docs/format.md §1 "Clearing a dead writer's claim": local path).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::OwnedFd;
use std::time::SystemTime;

use rustix::fd::AsFd;
use rustix::fs::{fstat, openat, statat, unlinkat, AtFlags, Dir, FileType, Mode};
use rustix::io::Errno;

use super::tree::{identity, join, LocalTree};
use crate::storage::local::{modified, VersionDir, DIR_FLAGS};
use crate::storage::pause_point;

/// The directories a walk holds open at most: the deepest ones; one above
/// them is opened again from below (`..`) when its turn comes, and must be
/// the directory left. At the open-file limit it lets more go, down to the
/// one it reads (so any depth is walked under a limit of a few descriptors).
const OPEN_LEVELS: usize = 32;

/// A staging directory `name` of the directory `parent`, both open, as listed.
pub(super) struct StagingDir {
    parent: VersionDir,
    name: String,
    /// The staging directory itself (its `flock` is the writer's liveness).
    dir: OwnedFd,
    /// Its path relative to the place (`/`-separated), for the files reported.
    rel: String,
}

impl StagingDir {
    /// The listed directory `rel` of `tree`, reached again through the
    /// directories listed ([`LocalTree::reach`]) and opened without
    /// crossing into another mount. `Ok(None)` when it is gone or no longer
    /// reached so (a level on the way now a link, no directory, another
    /// directory; the staging itself another directory than the one
    /// listed): not judged.
    ///
    /// # Errors
    /// It cannot be opened otherwise (a mount point at its name, no file
    /// descriptor left, a permission).
    pub(super) fn open(tree: &LocalTree, rel: &str) -> io::Result<Option<StagingDir>> {
        let changed = |e: Errno| matches!(e, Errno::NOENT | Errno::LOOP | Errno::NOTDIR);
        let Some(listed) = tree.listed(rel) else { return Ok(None) };
        let (parent_rel, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let parent = match tree.reach(parent_rel) {
            Ok(Some(parent)) => parent,
            Ok(None) => return Ok(None),
            // another directory than the one listed
            Err(e) if e.kind() == io::ErrorKind::Other => return Ok(None),
            Err(e) if e.raw_os_error().is_some_and(|n| changed(Errno::from_raw_os_error(n))) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Ok(c_name) = CString::new(name) else { return Ok(None) };
        let dir = match open_below(&parent, &c_name) {
            Ok(dir) => dir,
            Err(e) if changed(e) => return Ok(None),
            Err(Errno::XDEV) => return Err(io::Error::other("a mount point: gc does not cross it")),
            Err(e) => return Err(e.into()),
        };
        let same = identity(&fstat(&dir)?) == listed;
        Ok(same.then(|| StagingDir { parent, name: name.to_string(), dir, rel: rel.to_string() }))
    }

    /// Takes the writer's lock without waiting: false when a live writer holds it.
    pub(super) fn lock(&self) -> bool {
        rustix::fs::flock(&self.dir, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
    }

    /// The directory's modification time, when its name in its parent still
    /// leads to it (a writer that committed renamed it away, and another
    /// directory may have taken the name); `None` otherwise.
    pub(super) fn still_named(&self) -> Option<SystemTime> {
        let open = fstat(&self.dir).ok()?;
        let named = statat(&self.parent, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (identity(&named) == identity(&open)).then(|| modified(&open))
    }

    /// Every file in it (not a directory), relative to the place, sorted;
    /// and the failure that stopped the listing, if one did.
    pub(super) fn files(&self) -> (Vec<String>, Option<io::Error>) {
        let mut files = Vec::new();
        let failed = walk(&self.dir, &self.rel, false, &mut files).err();
        files.sort();
        (files, failed)
    }

    /// Removes the directory and everything in it through its handle, then
    /// its name, once that still leads to it (a directory put at the name
    /// meanwhile is not touched; `rmdir` takes only an empty one should it
    /// come in the instant between). Entries already gone are passed over.
    /// Returns the files removed, sorted, and the failure that stopped the
    /// removal, if one did (what was removed before it is returned too).
    pub(super) fn remove(self) -> (Vec<String>, Option<io::Error>) {
        let mut files = Vec::new();
        let mut failed = walk(&self.dir, &self.rel, true, &mut files).err();
        pause_point("gc-emptied");
        if failed.is_none() {
            failed = match self.still_named() {
                Some(_) => done_if_gone(unlinkat(&self.parent, self.name.as_str(), AtFlags::REMOVEDIR)).err(),
                None => Some(io::Error::other(
                    "its name leads to another directory since gc locked it: that one emptied, wherever it went, \
                     and the name left",
                )),
            };
        }
        files.sort();
        (files, failed)
    }
}

/// Opens the directory `name` of the open directory `dir` without following
/// a link, waiting, or crossing into another mount, a bind mount included
/// (`XDEV`): a walk never leaves the file system it removes from. Without
/// `openat2` (Linux before 5.6, or a filter answering `NOSYS` or `PERM`) a mount of
/// another file system is still told by its device, and [`walk`] looks a
/// bind mount up before it starts ([`holds_a_mount`]).
fn open_below(dir: &impl AsFd, name: &CStr) -> rustix::io::Result<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{openat2, ResolveFlags};
        match openat2(dir, name, DIR_FLAGS, Mode::empty(), ResolveFlags::NO_XDEV | ResolveFlags::NO_SYMLINKS) {
            // a filter written before openat2 refuses it so (Docker before 20.10)
            Err(Errno::NOSYS | Errno::PERM) => {}
            r => return r,
        }
    }
    let fd = openat(dir, name, DIR_FLAGS, Mode::empty())?;
    match fstat(&fd)?.st_dev == fstat(dir)?.st_dev {
        true => Ok(fd),
        false => Err(Errno::XDEV),
    }
}

/// True when the kernel resolves paths with `openat2` (what [`open_below`] relies on).
fn has_openat2(dir: &impl AsFd) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{openat2, ResolveFlags};
        !matches!(openat2(dir, c".", DIR_FLAGS, Mode::empty(), ResolveFlags::NO_XDEV), Err(Errno::NOSYS | Errno::PERM))
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// True when a mount point lies at or under the directory open as `dir`,
/// by `/proc/self/mountinfo` (its path from `/proc/self/fd`, escaped as
/// mountinfo escapes a space, tab, newline and backslash).
///
/// # Errors
/// Either file cannot be read (then nothing tells a bind mount: the caller refuses).
fn holds_a_mount(dir: &impl AsFd) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()))?;
    // compared as bytes: a name need not be UTF-8
    let mut escaped = Vec::new();
    for &b in path.as_os_str().as_bytes() {
        match b {
            b' ' | b'\t' | b'\n' | b'\\' => escaped.extend(format!("\\{b:03o}").bytes()),
            _ => escaped.push(b),
        }
    }
    while escaped.len() > 1 && escaped.last() == Some(&b'/') {
        escaped.pop();
    }
    let info = std::fs::read("/proc/self/mountinfo")?;
    Ok(info.split(|&b| b == b'\n').filter_map(|line| line.split(|&b| b == b' ').nth(4)).any(|point| {
        point.strip_prefix(escaped.as_slice()).is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    }))
}

/// One directory being walked: its handle (while held: [`OPEN_LEVELS`] of
/// the deepest at most, fewer at the open-file limit), its identity, its
/// path relative to the place, its name in the directory above (`None` for
/// the top) and its subdirectories not yet walked.
struct Level {
    fd: Option<OwnedFd>,
    id: (u64, u64),
    rel: String,
    name: Option<CString>,
    subdirs: Vec<CString>,
}

/// Lets the shallowest handle of `levels` go (it is opened again from below
/// when its turn comes); false when none is held.
fn release_one(levels: &mut [Level]) -> bool {
    levels.iter_mut().find(|l| l.fd.is_some()).is_some_and(|l| l.fd.take().is_some())
}

/// Runs `open` again while it fails for want of a file descriptor and
/// `levels` hold one to let go.
fn retrying<T>(levels: &mut [Level], mut open: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    loop {
        match open() {
            Err(Errno::MFILE) if release_one(levels) => continue,
            r => return r,
        }
    }
}

/// Walks everything under the open directory `top` (at `rel`), depth first
/// with a stack of its own (any depth), each subdirectory opened from its
/// parent ([`open_below`]). Appends every file (anything not a directory)
/// to `files`; with `remove`, once removed, and removes each subdirectory
/// once emptied.
///
/// # Errors
/// The first entry that cannot be opened or removed, a mount point inside,
/// a directory moved while walked (its handle opened again is not it).
fn walk(top: &impl AsFd, rel: &str, remove: bool, files: &mut Vec<String>) -> io::Result<()> {
    let at = |rel: &str, what: &dyn std::fmt::Display| io::Error::other(format!("{rel}: {what}"));
    if !has_openat2(top) {
        match holds_a_mount(top) {
            Ok(false) => {}
            Ok(true) => return Err(at(rel, &"holds a mount point: gc does not cross it")),
            Err(e) => return Err(at(rel, &format!("without openat2, no mount point can be ruled out: {e}"))),
        }
    }
    let fd = open_below(top, c".")?;
    let id = identity(&fstat(&fd)?);
    let subdirs = read(&fd, rel, remove, files)?;
    let mut stack = vec![Level { fd: Some(fd), id, rel: rel.to_string(), name: None, subdirs }];
    while let Some(last) = stack.len().checked_sub(1) {
        if let Some(sub) = stack[last].subdirs.pop() {
            let sub_rel = join(&stack[last].rel, &sub.to_string_lossy());
            let (above, level) = stack.split_at_mut(last);
            let Some(fd) = level[0].fd.as_ref() else { return Err(at(&level[0].rel, &"not open")) };
            let sub_fd = match retrying(above, || open_below(fd, &sub)) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => continue,
                Err(Errno::XDEV) => return Err(at(&sub_rel, &"a mount point: gc does not cross it")),
                Err(e) => return Err(at(&sub_rel, &io::Error::from(e))),
            };
            let id = identity(&fstat(&sub_fd)?);
            let subdirs = read_retrying(&sub_fd, &sub_rel, remove, files, &mut stack)?;
            stack.push(Level { fd: Some(sub_fd), id, rel: sub_rel, name: Some(sub), subdirs });
            if let Some(i) = stack.len().checked_sub(OPEN_LEVELS + 1) {
                stack[i].fd = None;
            }
            continue;
        }
        let Some(done) = stack.pop() else { break };
        let Some(parent_at) = stack.len().checked_sub(1) else { break };
        let Some(done_fd) = done.fd else { return Err(at(&done.rel, &"not open")) };
        if stack[parent_at].fd.is_none() {
            let (above, parent) = stack.split_at_mut(parent_at);
            let up =
                retrying(above, || open_below(&done_fd, c"..")).map_err(|e| at(&parent[0].rel, &io::Error::from(e)))?;
            if identity(&fstat(&up)?) != parent[0].id {
                return Err(at(&parent[0].rel, &"moved while gc removed it"));
            }
            parent[0].fd = Some(up);
        }
        if let (true, Some(name), Some(parent_fd)) = (remove, &done.name, &stack[parent_at].fd) {
            done_if_gone(unlinkat(parent_fd, name.as_c_str(), AtFlags::REMOVEDIR)).map_err(|e| at(&done.rel, &e))?;
        }
    }
    Ok(())
}

/// [`read`], letting handles of `stack` go while it fails for want of a
/// file descriptor (reading a directory takes one of its own).
fn read_retrying(
    fd: &OwnedFd,
    rel: &str,
    remove: bool,
    files: &mut Vec<String>,
    stack: &mut [Level],
) -> io::Result<Vec<CString>> {
    loop {
        match read(fd, rel, remove, files) {
            Err(e) if e.raw_os_error() == Some(Errno::MFILE.raw_os_error()) && release_one(stack) => continue,
            r => return r,
        }
    }
}

/// Reads the open directory `fd` (at `rel`): its files are appended to
/// `files` (with `remove`, once removed); returns its subdirectories, to
/// walk in name order (popped from the end).
fn read(fd: &OwnedFd, rel: &str, remove: bool, files: &mut Vec<String>) -> io::Result<Vec<CString>> {
    let mut subdirs = Vec::new();
    for entry in Dir::read_from(fd)? {
        let entry = entry?;
        let entry_name = entry.file_name();
        if entry_name.to_bytes() == b"." || entry_name.to_bytes() == b".." {
            continue;
        }
        let file_type = match entry.file_type() {
            FileType::Unknown => match statat(fd, entry_name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            },
            known => known,
        };
        if file_type == FileType::Directory {
            subdirs.push(entry_name.to_owned());
            continue;
        }
        let file = join(rel, &entry_name.to_string_lossy());
        if remove {
            done_if_gone(unlinkat(fd, entry_name, AtFlags::empty()))
                .map_err(|e| io::Error::other(format!("{file}: {e}")))?;
        }
        files.push(file);
    }
    subdirs.sort_by(|a, b| b.cmp(a));
    Ok(subdirs)
}

/// An entry already gone (another run, its writer) is removed as asked.
fn done_if_gone(r: rustix::io::Result<()>) -> io::Result<()> {
    match r {
        Err(Errno::NOENT) => Ok(()),
        r => r.map_err(io::Error::from),
    }
}
