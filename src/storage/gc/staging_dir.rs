//! A local writer's staging directory as `gc` judges and removes it: reached
//! from the root through directory handles, never through a path, so a
//! folder swapped for a symbolic link (or a FIFO) after the listing leads
//! nowhere instead of outside the root (docs/format.md §1 "Clearing a dead
//! writer's claim": local staging).

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fd::AsFd;
use rustix::fs::{openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::tree::join;
use crate::storage::local::{walk_in, VersionDir};

/// The staging directory `name` of the directory `parent`, both open.
pub(super) struct StagingDir {
    parent: VersionDir,
    name: String,
    /// The staging directory itself (its `flock` is the writer's liveness).
    dir: VersionDir,
}

impl StagingDir {
    /// Opens `rel` (`/`-separated, relative to `root`) one level at a time
    /// ([`VersionDir::open_in_parent`]). `None` when it is not a directory
    /// reached so (gone, a level on the way now a symbolic link or no
    /// directory, or one this user may not open): not judged.
    pub(super) fn open(root: &Path, rel: &str) -> Option<StagingDir> {
        // the root is the place given: a link there is the user's own choice
        let mut parent = VersionDir::open(root).ok()?;
        let mut at = String::new();
        for level in rel.split('/') {
            at = join(&at, level);
            let dir = VersionDir::open_in_parent(parent.as_fd(), level, root.join(&at)).ok()?;
            if at == rel {
                return Some(StagingDir { parent, name: level.to_string(), dir });
            }
            parent = dir;
        }
        None
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
        if (named.st_dev, named.st_ino) != (open.st_dev, open.st_ino) {
            return None;
        }
        let since_epoch = Duration::new(open.st_mtime.max(0) as u64, open.st_mtime_nsec.clamp(0, 999_999_999) as u32);
        Some(UNIX_EPOCH + since_epoch)
    }

    /// Every file in it (not a directory), relative to it, sorted.
    pub(super) fn files(&self) -> Vec<String> {
        walk_in(&self.dir).0.into_iter().map(|e| e.rel).collect()
    }

    /// Removes the directory and everything in it, through its handle:
    /// entries already gone are passed over.
    ///
    /// # Errors
    /// The first entry that cannot be removed (the rest stay).
    pub(super) fn remove(self) -> io::Result<()> {
        remove_contents(&self.dir)?;
        done_if_gone(unlinkat(&self.parent, self.name.as_str(), AtFlags::REMOVEDIR))
    }
}

/// Removes everything in the open directory `dir`, each subdirectory opened
/// from it never through a link.
fn remove_contents(dir: &impl AsFd) -> io::Result<()> {
    let mut names = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            names.push((name, entry.file_type()));
        }
    }
    for (name, file_type) in names {
        let file_type = match file_type {
            FileType::Unknown => match statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            },
            known => known,
        };
        if file_type == FileType::Directory {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            match openat(dir, name.as_c_str(), flags, Mode::empty()) {
                Ok(sub) => remove_contents(&sub)?,
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            }
            done_if_gone(unlinkat(dir, name.as_c_str(), AtFlags::REMOVEDIR))?;
        } else {
            done_if_gone(unlinkat(dir, name.as_c_str(), AtFlags::empty()))?;
        }
    }
    Ok(())
}

/// An entry already gone (another run, its writer) is removed as asked.
fn done_if_gone(r: rustix::io::Result<()>) -> io::Result<()> {
    match r {
        Err(Errno::NOENT) => Ok(()),
        r => r.map_err(io::Error::from),
    }
}
