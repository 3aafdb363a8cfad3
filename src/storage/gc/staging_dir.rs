//! A local writer's staging directory as `gc` judges and removes it: reached
//! from the place's handle through the directories it listed, never through
//! a path, and removed through handles, so nothing swapped in after the
//! listing (a link, a FIFO, another directory) is followed, waited on or
//! removed (docs/format.md §1 "Clearing a dead writer's claim": local path).

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::time::SystemTime;

use rustix::fd::AsFd;
use rustix::fs::{openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::tree::{identity, join, modified, LocalTree};
use crate::storage::local::VersionDir;
use crate::storage::pause_point;

/// A staging directory `name` of the directory `parent`, both open, as listed.
pub(super) struct StagingDir {
    parent: VersionDir,
    name: String,
    /// The staging directory itself (its `flock` is the writer's liveness).
    dir: VersionDir,
    /// Its path relative to the place (`/`-separated), for the files reported.
    rel: String,
}

impl StagingDir {
    /// The listed directory `rel` of `tree`, reached again through the
    /// directories listed ([`LocalTree::reach`]); `None` when it is gone, or
    /// no longer reached so (a level on the way now a link, no directory,
    /// another directory, or one this user may not open): not judged.
    pub(super) fn open(tree: &LocalTree, rel: &str) -> Option<StagingDir> {
        tree.listed(rel)?;
        let (parent, dir) = tree.reach(rel).ok()??;
        let name = rel.rsplit('/').next()?.to_string();
        Some(StagingDir { parent, name, dir, rel: rel.to_string() })
    }

    /// Takes the writer's lock without waiting: false when a live writer holds it.
    pub(super) fn lock(&self) -> bool {
        rustix::fs::flock(&self.dir, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
    }

    /// The directory's modification time, when its name in its parent still
    /// leads to it (a writer that committed renamed it away, and another
    /// directory may have taken the name); `None` otherwise.
    pub(super) fn still_named(&self) -> Option<SystemTime> {
        let open = rustix::fs::fstat(&self.dir).ok()?;
        let named = statat(&self.parent, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (identity(&named) == identity(&open)).then(|| modified(&open))
    }

    /// Every file in it (not a directory), relative to the place, sorted;
    /// the files listed before a failure, and the failure.
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
    /// Returns the files removed, as [`StagingDir::files`] does.
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

/// One directory being walked: its handle, its path relative to the place,
/// and its subdirectories not yet walked.
struct Open {
    fd: OwnedFd,
    rel: String,
    /// Its name in the directory above (`None` for the top).
    name: Option<CString>,
    subdirs: Vec<CString>,
}

/// Walks everything under the open directory `top` (at `rel`), depth first
/// with a stack of its own (no recursion: any depth), each subdirectory
/// opened from its parent, never through a link or waiting. Appends every
/// file (anything not a directory) to `files`; with `remove`, removes it,
/// and each subdirectory once emptied.
fn walk(top: &impl AsFd, rel: &str, remove: bool, files: &mut Vec<String>) -> io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = openat(top, ".", flags, Mode::empty())?;
    let mut stack = vec![read(fd, rel.to_string(), None, remove, files)?];
    while let Some(open) = stack.last_mut() {
        let Some(sub) = open.subdirs.pop() else {
            let Some(done) = stack.pop() else { break };
            if let (Some(name), Some(parent)) = (done.name, stack.last()) {
                if remove {
                    done_if_gone(unlinkat(&parent.fd, name.as_c_str(), AtFlags::REMOVEDIR))?;
                }
            }
            continue;
        };
        let fd = match openat(&open.fd, sub.as_c_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        let sub_rel = join(&open.rel, &sub.to_string_lossy());
        let next = read(fd, sub_rel, Some(sub), remove, files)?;
        stack.push(next);
    }
    Ok(())
}

/// Reads the open directory `fd`: its files are appended to `files` (and
/// removed, with `remove`), its subdirectories kept to walk.
fn read(fd: OwnedFd, rel: String, name: Option<CString>, remove: bool, files: &mut Vec<String>) -> io::Result<Open> {
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
        files.push(join(&rel, &entry_name.to_string_lossy()));
        if remove {
            done_if_gone(unlinkat(&fd, entry_name, AtFlags::empty()))?;
        }
    }
    // walked in name order (popped from the end)
    subdirs.sort_by(|a, b| b.cmp(a));
    Ok(Open { fd, rel, name, subdirs })
}

/// An entry already gone (another run, its writer) is removed as asked.
fn done_if_gone(r: rustix::io::Result<()>) -> io::Result<()> {
    match r {
        Err(Errno::NOENT) => Ok(()),
        r => r.map_err(io::Error::from),
    }
}
