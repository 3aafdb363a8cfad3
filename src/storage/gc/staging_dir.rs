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
use rustix::fs::{fstat, openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::tree::{identity, join, modified, LocalTree};
use crate::storage::local::VersionDir;
use crate::storage::pause_point;

/// How every directory under the place is opened: never through a link,
/// never waiting (a FIFO fails `NOTDIR`).
const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::NONBLOCK).union(OFlags::CLOEXEC);

/// The directories a walk holds open at most: the deepest ones; one above
/// them is opened again from below (`..`) when its turn comes, and must be
/// the directory left (so any depth is walked under any open-file limit).
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
    /// crossing into another mount; `None` when it is gone, or no longer
    /// reached so (a level on the way now a link, no directory, another
    /// directory, or one this user may not open; the staging itself a mount
    /// point, or another directory than the one listed): not judged.
    pub(super) fn open(tree: &LocalTree, rel: &str) -> Option<StagingDir> {
        let listed = tree.listed(rel)?;
        let (parent_rel, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let parent = tree.reach(parent_rel).ok()??;
        let dir = open_below(&parent, &CString::new(name).ok()?).ok()?;
        (identity(&fstat(&dir).ok()?) == listed).then(|| StagingDir {
            parent,
            name: name.to_string(),
            dir,
            rel: rel.to_string(),
        })
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
/// (`XDEV`): a walk never leaves the file system it removes from.
fn open_below(dir: &impl AsFd, name: &CStr) -> rustix::io::Result<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{openat2, ResolveFlags};
        match openat2(dir, name, DIR_FLAGS, Mode::empty(), ResolveFlags::NO_XDEV | ResolveFlags::NO_SYMLINKS) {
            // a kernel before 5.6: another file system is still told by its device below
            Err(Errno::NOSYS) => {}
            r => return r,
        }
    }
    let fd = openat(dir, name, DIR_FLAGS, Mode::empty())?;
    match fstat(&fd)?.st_dev == fstat(dir)?.st_dev {
        true => Ok(fd),
        false => Err(Errno::XDEV),
    }
}

/// One directory being walked: its handle (while among the [`OPEN_LEVELS`]
/// deepest), its identity, its path relative to the place, its name in the
/// directory above (`None` for the top) and its subdirectories not yet walked.
struct Level {
    fd: Option<OwnedFd>,
    id: (u64, u64),
    rel: String,
    name: Option<CString>,
    subdirs: Vec<CString>,
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
    let at = |rel: &str, what: &str| io::Error::other(format!("{rel}: {what}"));
    let fd = open_below(top, c".")?;
    let id = identity(&fstat(&fd)?);
    let mut stack = vec![read(fd, id, rel.to_string(), None, remove, files)?];
    while let Some(level) = stack.last_mut() {
        let Some(fd) = level.fd.as_ref() else { return Err(at(&level.rel, "not open")) };
        if let Some(sub) = level.subdirs.pop() {
            let sub_rel = join(&level.rel, &sub.to_string_lossy());
            let sub_fd = match open_below(fd, &sub) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => continue,
                Err(Errno::XDEV) => return Err(at(&sub_rel, "a mount point: gc does not cross it")),
                Err(e) => return Err(at(&sub_rel, &io::Error::from(e).to_string())),
            };
            let id = identity(&fstat(&sub_fd)?);
            let next = read(sub_fd, id, sub_rel, Some(sub), remove, files)?;
            stack.push(next);
            if let Some(i) = stack.len().checked_sub(OPEN_LEVELS + 1) {
                stack[i].fd = None;
            }
            continue;
        }
        let Some(done) = stack.pop() else { break };
        let Some(parent) = stack.last_mut() else { break };
        let Some(done_fd) = done.fd else { return Err(at(&done.rel, "not open")) };
        if parent.fd.is_none() {
            let up = open_below(&done_fd, c"..")?;
            if identity(&fstat(&up)?) != parent.id {
                return Err(at(&parent.rel, "moved while gc removed it"));
            }
            parent.fd = Some(up);
        }
        if let (true, Some(name), Some(parent_fd)) = (remove, &done.name, &parent.fd) {
            done_if_gone(unlinkat(parent_fd, name.as_c_str(), AtFlags::REMOVEDIR))
                .map_err(|e| at(&done.rel, &e.to_string()))?;
        }
    }
    Ok(())
}

/// Reads the open directory `fd` (at `rel`): its files are appended to
/// `files` (with `remove`, once removed), its subdirectories kept to walk,
/// in name order.
fn read(
    fd: OwnedFd,
    id: (u64, u64),
    rel: String,
    name: Option<CString>,
    remove: bool,
    files: &mut Vec<String>,
) -> io::Result<Level> {
    let mut subdirs = Vec::new();
    for entry in Dir::read_from(&fd)? {
        let entry = entry?;
        let entry_name = entry.file_name();
        if entry_name.to_bytes() == b"." || entry_name.to_bytes() == b".." {
            continue;
        }
        let file_type = match entry.file_type() {
            FileType::Unknown => match statat(&fd, entry_name, AtFlags::SYMLINK_NOFOLLOW) {
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
        let file = join(&rel, &entry_name.to_string_lossy());
        if remove {
            done_if_gone(unlinkat(&fd, entry_name, AtFlags::empty()))
                .map_err(|e| io::Error::other(format!("{file}: {e}")))?;
        }
        files.push(file);
    }
    // walked in name order (popped from the end)
    subdirs.sort_by(|a, b| b.cmp(a));
    Ok(Level { fd: Some(fd), id, rel, name, subdirs })
}

/// An entry already gone (another run, its writer) is removed as asked.
fn done_if_gone(r: rustix::io::Result<()>) -> io::Result<()> {
    match r {
        Err(Errno::NOENT) => Ok(()),
        r => r.map_err(io::Error::from),
    }
}
