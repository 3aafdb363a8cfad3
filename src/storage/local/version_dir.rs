//! A version directory held by a handle, and what is read through it: its
//! files opened and its entries walked relative to that handle, never by
//! path (docs/format.md "Paths inside a version").

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// How a directory below an open one is opened: never through a symbolic
/// link, never waiting (a FIFO in its place fails `NOTDIR` instead of blocking).
pub(crate) const DIR_FLAGS: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
    .union(rustix::fs::OFlags::DIRECTORY)
    .union(rustix::fs::OFlags::NOFOLLOW)
    .union(rustix::fs::OFlags::NONBLOCK)
    .union(rustix::fs::OFlags::CLOEXEC);

/// How a symbolic link inside a version is reported.
pub(crate) const SYMLINK: &str =
    "a symbolic link (a version's files are never followed: docs/format.md \"Paths inside a version\")";

/// A version directory opened once, as the user names it (a link in that
/// path is followed): every file of the version is then opened relative to
/// this handle, never by path again, so renaming or replacing the directory,
/// or one above it, while a verb runs cannot redirect a read outside
/// (docs/format.md "Paths inside a version"). `gc` holds a writer's staging
/// directory so too ([`VersionDir::open_in_parent`]).
pub(crate) struct VersionDir {
    path: PathBuf,
    fd: rustix::fd::OwnedFd,
}

impl VersionDir {
    /// Opens the directory at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] (`NotFound` for a missing directory; `NotADirectory` for a file).
    pub(crate) fn open(path: &Path) -> Result<VersionDir> {
        use rustix::fs::{openat, Mode, OFlags, CWD};
        let fd = openat(CWD, path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| Error::io(path, e.into()))?;
        Ok(VersionDir { path: path.to_path_buf(), fd })
    }

    /// Opens the directory `name` of the open directory `parent` (`path`
    /// names it in messages), never through a symbolic link and never
    /// waiting: a FIFO there fails (`NOTDIR`) instead of blocking.
    ///
    /// # Errors
    /// The `openat` error (`NOENT`, `LOOP` for a link, `NOTDIR`, ...).
    pub(crate) fn open_in_parent(
        parent: rustix::fd::BorrowedFd<'_>,
        name: &str,
        path: PathBuf,
    ) -> rustix::io::Result<VersionDir> {
        use rustix::fs::{openat, Mode};
        Ok(VersionDir { path, fd: openat(parent, name, DIR_FLAGS, Mode::empty())? })
    }

    /// The path the directory was opened at (for messages).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// True when the directory itself was removed since it was opened (no
    /// link to it is left), whatever its path now leads to: the handle, not
    /// the path, is what the version's files are read through.
    pub(crate) fn removed(&self) -> bool {
        rustix::fs::fstat(&self.fd).is_ok_and(|st| st.st_nlink == 0)
    }
}

impl rustix::fd::AsFd for VersionDir {
    fn as_fd(&self) -> rustix::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl std::fmt::Debug for VersionDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VersionDir({})", self.path.display())
    }
}

/// Opens `rel` (`/`-separated, already checked by
/// [`crate::storage::version_path::path_problem`]) inside the version directory `dir`:
/// each directory component with `O_NOFOLLOW | O_DIRECTORY` relative to the
/// one before, starting at `dir`'s handle, the file itself with
/// `O_NOFOLLOW | O_NONBLOCK`; it must be a regular file (a FIFO or device is
/// refused, never read).
///
/// # Errors
/// [`Error::Corrupt`] naming the file when a component is a symbolic link
/// ([`SYMLINK`]) or the file is not a regular file; [`Error::Io`] otherwise
/// (`NotFound` included).
pub(crate) fn open_in(dir: &VersionDir, rel: &str) -> Result<File> {
    use rustix::fd::AsFd;
    use rustix::fs::{openat, statat, AtFlags, FileType, Mode, OFlags};
    let path = dir.path.join(rel);
    let corrupt = |reason: String| Error::Corrupt { path: path.clone(), reason };
    let mut opened: Option<rustix::fd::OwnedFd> = None;
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let kind = if last { OFlags::NONBLOCK } else { OFlags::DIRECTORY };
        let base = opened.as_ref().map_or(dir.fd.as_fd(), |fd| fd.as_fd());
        match openat(base, *part, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | kind, Mode::empty()) {
            Ok(next) => opened = Some(next),
            Err(e) => {
                let link = statat(base, *part, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                if link {
                    let what = if last { String::new() } else { format!("directory {} is ", parts[..=i].join("/")) };
                    return Err(corrupt(format!("{what}{SYMLINK}")));
                }
                return Err(Error::io(&path, e.into()));
            }
        }
    }
    let file = File::from(opened.ok_or_else(|| corrupt("empty path".into()))?);
    let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
    if !meta.is_file() {
        return Err(corrupt("not a regular file".into()));
    }
    Ok(file)
}

/// One entry of a version directory found by [`walk_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Path relative to the version, `/`-separated.
    pub(crate) rel: String,
    /// Size in bytes (of the link itself for a symbolic link).
    pub(crate) bytes: u64,
    /// A symbolic link (never followed).
    pub(crate) symlink: bool,
    /// When it was last modified (of the link itself for a symbolic link).
    pub(crate) modified: SystemTime,
}

/// The modification time `st` gives, from the epoch (a time before it is the epoch).
pub(crate) fn modified(st: &rustix::fs::Stat) -> SystemTime {
    let since_epoch = Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec.clamp(0, 999_999_999) as u32);
    UNIX_EPOCH + since_epoch
}

/// Every non-directory entry under the version directory `dir`, sorted by
/// path, and each sub-directory (relative) that could not be listed with why.
/// Walked through handles from `dir`'s down (`O_NOFOLLOW | O_DIRECTORY`), so
/// the walk never leaves the version, whatever is renamed meanwhile.
pub(crate) fn walk_in(dir: &VersionDir) -> (Vec<Entry>, Vec<(String, String)>) {
    use rustix::fd::AsFd;
    use rustix::fs::{openat, statat, AtFlags, Dir, FileType, Mode};
    fn visit(
        fd: rustix::fd::BorrowedFd<'_>,
        prefix: &str,
        depth: usize,
        out: &mut Vec<Entry>,
        errors: &mut Vec<(String, String)>,
    ) {
        let shown = if prefix.is_empty() { ".".to_string() } else { prefix.trim_end_matches('/').to_string() };
        let mut entries = match Dir::read_from(fd) {
            Ok(d) => d,
            Err(e) => return errors.push((shown, io::Error::from(e).to_string())),
        };
        // (shown, as on disk): a name that is not UTF-8 is shown with U+FFFD
        // and looked up by its own bytes
        let mut names = Vec::new();
        for entry in entries.by_ref() {
            match entry {
                Ok(e) => {
                    let raw = e.file_name();
                    if raw.to_bytes() != b"." && raw.to_bytes() != b".." {
                        names.push((raw.to_string_lossy().into_owned(), raw.to_owned()));
                    }
                }
                Err(e) => return errors.push((shown, io::Error::from(e).to_string())),
            }
        }
        names.sort();
        for (name, raw) in names {
            let rel = format!("{prefix}{name}");
            let st = match statat(fd, raw.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(e) => {
                    errors.push((rel, io::Error::from(e).to_string()));
                    continue;
                }
            };
            let kind = FileType::from_raw_mode(st.st_mode);
            if kind != FileType::Directory {
                out.push(Entry {
                    rel,
                    bytes: st.st_size as u64,
                    symlink: kind == FileType::Symlink,
                    modified: modified(&st),
                });
            } else if depth >= MAX_WALK_DEPTH {
                errors.push((rel, format!("deeper than {MAX_WALK_DEPTH} directories")));
            } else {
                match openat(fd, raw.as_c_str(), DIR_FLAGS, Mode::empty()) {
                    Ok(sub) => visit(sub.as_fd(), &format!("{rel}/"), depth + 1, out, errors),
                    Err(e) => errors.push((rel, io::Error::from(e).to_string())),
                }
            }
        }
    }
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    visit(dir.fd.as_fd(), "", 0, &mut out, &mut errors);
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    (out, errors)
}

/// Directories [`walk_in`] descends at most (a version has two levels).
const MAX_WALK_DEPTH: usize = 64;
