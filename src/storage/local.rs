//! The local backend: staging, fsync and the no-clobber publish of a version
//! (FORMAT-BRIEF §1; docs/format.md "Storage backends and the commit").
//!
//! The sequence, owned here so no call site can skip a step:
//! 1. [`Staging::create`] makes `<root>/<name>/.tmp-<version>-<unique>/`.
//!    On a first write it also creates `<root>/<name>/` and whatever is missing
//!    above it, and fsyncs the parent of each directory it created, up to the
//!    first that existed, so no directory of the version's path can vanish
//!    after a power loss once a commit is reported.
//! 2. The writer creates every file through [`Staging::create_file`]; the
//!    seam's [`super::StagedFile`] computes the sha256 while the bytes are
//!    written and starts the file's fsync when it is finished
//!    (`storage::file_syncs`: on a thread of its own, so the next file is
//!    written meanwhile).
//! 3. [`Staging::publish`] waits for every file's fsync, fsyncs the staging
//!    directory and its subdirectories,
//!    renames it onto `<version>/` with `RENAME_NOREPLACE` (never replacing an
//!    existing version), then fsyncs the parent directory.
//!
//! Dropping a [`Staging`] that was not published removes the staging directory
//! and nothing else (abort, error, or a panic unwinding through the writer) —
//! except the directories above it (`<root>/<name>/`, the root) that this
//! staging created and that are empty again, so a failed first write leaves no
//! directory behind.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod version_dir;

pub(crate) use version_dir::{modified, open_in, walk_in, Entry, VersionDir, DIR_FLAGS, SYMLINK};

use super::file_syncs::FileSyncs;
use super::{check_interrupted, LiveGuard, Small, MANIFEST};
use crate::error::{Error, Result};

/// Random characters in a staging directory's name (`[A-Za-z0-9]`, ~190 bits).
pub(super) const STAGING_RANDOM_CHARS: usize = 32;
/// Name prefix of a staging directory: `.tmp-<version>-<random>`, locked by its writer.
pub(super) const TMP_PREFIX: &str = ".tmp-";
/// Name prefix of a staging directory being made, before its writer holds the
/// lock: `.new-<version>-<random>` (see [`Staging::create`]).
pub(super) const NEW_PREFIX: &str = ".new-";
/// How many times [`Staging::create`] starts again when something it just
/// made vanished (an empty parent removed by another writer's abort, a
/// `.new-*` directory by `gc`).
const CREATE_ATTEMPTS: u32 = 3;

/// Checks that a version can be published at `version_dir`: fails with
/// [`Error::AlreadyExists`] when it holds a committed version, and with
/// [`Error::NotAVersion`] when something else is in the way (a file, or a
/// non-empty directory without a manifest). An empty directory is fine: the
/// publish replaces it. Only looks; writes nothing.
pub fn ensure_absent(version_dir: &Path) -> Result<()> {
    if version_dir.join(MANIFEST).exists() {
        return Err(Error::AlreadyExists { path: version_dir.to_path_buf() });
    }
    let in_the_way = match fs::symlink_metadata(version_dir) {
        Err(_) => false,
        Ok(m) if m.is_dir() => fs::read_dir(version_dir).map(|mut d| d.next().is_some()).unwrap_or(true),
        Ok(_) => true,
    };
    if in_the_way {
        return Err(Error::NotAVersion {
            path: version_dir.to_path_buf(),
            reason: "exists but holds no committed version (no manifest.json); remove it or choose another version"
                .into(),
        });
    }
    Ok(())
}

/// A staging directory that becomes a version on [`Staging::publish`] and is
/// removed on drop otherwise.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    target: PathBuf,
    dirs: Vec<PathBuf>,
    /// Directories above staging that this staging created (removed again on
    /// abort while empty; emptied on publish).
    created_parents: CreatedDirs,
    /// Every directory fsynced so far, in order (see [`Published::synced_dirs`]).
    synced_dirs: Vec<PathBuf>,
    /// The fsyncs of finished files, waited for by [`Staging::publish`].
    syncs: Arc<FileSyncs>,
    published: bool,
    /// The staging directory opened and `flock`ed exclusively while this writer
    /// lives; the kernel drops the lock when the process dies however it dies,
    /// which is how [`super::gc`] tells a dead writer's staging from a live one's.
    _owner: File,
    _live: LiveGuard,
}

impl Staging {
    /// Creates `<parent of target>/.tmp-<version>-<random>/` (and the parent,
    /// with every missing directory above it), locked by this process.
    ///
    /// The directory is made as `.new-<version>-<random>`, opened and `flock`ed,
    /// and only then renamed to its `.tmp-*` name (the lock is on the open
    /// directory, so it survives the rename): a `.tmp-*` directory is locked
    /// from the moment it has that name, and [`super::gc`] never sees a live writer's
    /// staging unlocked. `gc` removes a `.new-*` directory only when it is older
    /// than its age threshold and unlocked; should it remove this writer's
    /// before the lock is taken, the open or the rename fails with `NotFound`
    /// and this starts again under a new name (docs/format.md §1, "Clearing a
    /// dead writer's claim").
    pub fn create(target: &Path) -> Result<Staging> {
        let parent = target.parent().ok_or_else(|| Error::io(target, io::Error::other("no parent directory")))?;
        let version = target.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let new_prefix = format!("{NEW_PREFIX}{version}-");
        // live before the first mkdir: a Ctrl-C from here on aborts the write
        // (which removes what was made), not the process
        let live = LiveGuard::new();
        // armed before the first mkdir: any error below removes what was made
        let mut created_parents = CreatedDirs::default();
        // another writer's abort may remove an empty parent, and gc a `.new-*`
        // directory, between two calls; making them again is all that is needed
        let mut attempt = 0;
        let (dir, owner) = loop {
            let retry = |e: &io::Error, attempt: &mut u32| {
                let again = e.kind() == io::ErrorKind::NotFound && *attempt < CREATE_ATTEMPTS;
                *attempt += u32::from(again);
                again
            };
            if !parent.exists() {
                created_parents.extend(
                    parent.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf),
                );
                fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            // the default mode (0o777 less the umask), as `fs::create_dir`: a
            // committed version is as readable as any directory the user makes;
            // until `keep`, an error removes it (`TempDir`'s drop)
            let new = match tempfile::Builder::new()
                .prefix(&new_prefix)
                .rand_bytes(STAGING_RANDOM_CHARS)
                .tempdir_in(parent)
            {
                Ok(d) => d,
                Err(e) if retry(&e, &mut attempt) => continue,
                Err(e) => return Err(Error::io_temp(parent, e)),
            };
            super::pause_point("staging-made");
            let owner = match File::open(new.path()) {
                Ok(f) => f,
                Err(e) if retry(&e, &mut attempt) => continue,
                Err(e) => return Err(Error::io(new.path(), e)),
            };
            // blocking: only a gc examining it holds this lock, briefly
            rustix::fs::flock(&owner, rustix::fs::FlockOperation::LockExclusive)
                .map_err(|e| Error::io(new.path(), e.into()))?;
            let random = new.path().file_name().map(|n| n.to_string_lossy()[new_prefix.len()..].to_string());
            let dir = parent.join(format!("{TMP_PREFIX}{version}-{}", random.unwrap_or_default()));
            match rename_noreplace(new.path(), &dir) {
                Ok(()) => {
                    // renamed: nothing left at the `.new-*` path for `TempDir` to remove
                    let _ = new.keep();
                    break (dir, owner);
                }
                Err(Error::Io { source, .. }) if retry(&source, &mut attempt) => continue,
                Err(e) => return Err(e),
            }
        };
        Ok(Staging {
            dirs: vec![dir.clone()],
            dir,
            target: target.to_path_buf(),
            created_parents,
            synced_dirs: Vec::new(),
            syncs: Arc::default(),
            published: false,
            _owner: owner,
            _live: live,
        })
    }

    /// The staging directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The random part of the staging directory's name (`.tmp-<version>-<id>`):
    /// the id of a distributed write.
    pub fn write_id(&self) -> String {
        let name = self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.rsplit_once('-').map(|(_, id)| id.to_string()).unwrap_or_default()
    }

    /// Makes the parts' scratch directory [`super::PART_SCRATCH`] (workers
    /// never create it: see [`PartFile::create`]).
    pub(crate) fn create_part_scratch(&self) -> Result<()> {
        let scratch = self.dir.join(super::PART_SCRATCH);
        fs::create_dir(&scratch).map_err(|e| Error::io(&scratch, e))
    }

    /// Moves the scratch directory out of staging in one rename (into a fresh
    /// `.tmp-<version>-*` directory beside it, which `gc` would find if this
    /// process died before removing it), removes it, and lists every other
    /// staged file, sorted. From the rename on, a part file still being
    /// written can no longer be renamed into place and no new one can start.
    pub(crate) fn seal_parts(&self) -> Result<Vec<String>> {
        let scratch = self.dir.join(super::PART_SCRATCH);
        if scratch.exists() {
            let parent = self.dir.parent().unwrap_or(Path::new("."));
            let version = self.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let bin = tempfile::Builder::new()
                .prefix(&format!(".tmp-{version}-"))
                .rand_bytes(STAGING_RANDOM_CHARS)
                .tempdir_in(parent)
                .map_err(|e| Error::io_temp(parent, e))?;
            let moved = bin.path().join(super::PART_SCRATCH);
            fs::rename(&scratch, &moved).map_err(|e| Error::io(&scratch, e))?;
            // best effort from here: what is left is a dead `.tmp-*` directory for gc
            let _ = bin.close();
        }
        let (files, errors) = walk(&self.dir);
        if let Some((dir, e)) = errors.into_iter().next() {
            return Err(Error::io(self.dir.join(dir), io::Error::other(e)));
        }
        Ok(files.into_iter().map(|(f, _)| f).collect())
    }

    /// The version directory that [`Staging::publish`] creates.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Creates the file `rel` (a relative path with `/` separators) in staging,
    /// creating its parent directories; returns it and its path.
    pub fn create_file(&mut self, rel: &str) -> Result<(File, PathBuf)> {
        let path = self.place(rel)?;
        let file = File::create_new(&path).map_err(|e| Error::io(&path, e))?;
        Ok((file, path))
    }

    /// Places `from` (a finished file of another version, versions being
    /// immutable) at `rel` as a hard link and returns its size; `None` where
    /// the file system refuses the link (another device): the writer then
    /// builds the file from the base's pages, as it does for another store,
    /// and nothing of `from` passes through here.
    ///
    /// # Errors
    /// I/O errors naming the path in staging.
    pub fn link_file(&mut self, rel: &str, from: &Path) -> Result<Option<u64>> {
        let path = self.place(rel)?;
        if fs::hard_link(from, &path).is_err() {
            return Ok(None);
        }
        Ok(Some(fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len()))
    }

    /// The path of `rel` in staging, its directories created (and recorded
    /// for the fsync of [`Staging::publish`]).
    fn place(&mut self, rel: &str) -> Result<PathBuf> {
        let path = self.dir.join(rel);
        // never create the staging directory again once something removed it
        if !self.dir.is_dir() {
            return Err(Error::io(&self.dir, io::Error::new(io::ErrorKind::NotFound, "staging directory was removed")));
        }
        if let Some(parent) = path.parent() {
            if !parent.exists() {
                fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                let mut p = parent.to_path_buf();
                while p != self.dir && !self.dirs.contains(&p) {
                    self.dirs.push(p.clone());
                    if !p.pop() {
                        break;
                    }
                }
            }
        }
        Ok(path)
    }

    /// Where the files of this staging have their fsync done.
    pub(crate) fn syncs(&self) -> Arc<FileSyncs> {
        Arc::clone(&self.syncs)
    }

    /// Publishes: waits for the fsync of every file, fsyncs every staged
    /// directory, renames staging onto the target without replacing anything,
    /// then fsyncs the version's parent and every directory above it.
    ///
    /// # Errors
    /// A file's or directory's fsync failing (naming it); [`Error::AlreadyExists`]
    /// when a version appeared at the target.
    pub fn publish(mut self) -> Result<Published> {
        self.syncs.wait_all()?;
        // deepest first, so each directory entry is durable before its parent's
        self.dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in &self.dirs {
            self.synced_dirs.push(fsync_dir(d)?);
        }
        super::pause_point("before-rename");
        // the last moment a Ctrl-C can stop the commit
        check_interrupted(&self.dir)?;
        rename_noreplace(&self.dir, &self.target)?;
        self.published = true;
        self.created_parents.0.clear();
        super::pause_point("after-rename");
        // every ancestor, whoever created it: a directory another writer made
        // (and has not fsynced yet) would otherwise take this version with it
        // in a power loss (docs/format.md, "Commit protocol")
        let parent = self.target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let parent = fs::canonicalize(parent).map_err(|e| Error::io(parent, e))?;
        for d in parent.ancestors() {
            self.synced_dirs.push(fsync_dir(d)?);
        }
        Ok(Published { dir: self.target.clone(), synced_dirs: std::mem::take(&mut self.synced_dirs) })
    }
}

/// Directories a [`Staging::create`] made above staging; removed (deepest
/// first, only while empty, so another writer's staging or version is never
/// touched) when dropped non-empty.
#[derive(Debug, Default)]
struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    /// Adds `dirs` not already listed (a retry after another writer removed them).
    fn extend(&mut self, dirs: impl Iterator<Item = PathBuf>) {
        for d in dirs {
            if !self.0.contains(&d) {
                self.0.push(d);
            }
        }
        self.0.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        for d in &self.0 {
            match fs::remove_dir(d) {
                Ok(()) => {}
                // never made (create_dir_all failed part way) or already gone
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => break,
            }
        }
    }
}

/// What [`Staging::publish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The version directory.
    pub dir: PathBuf,
    /// Every directory fsynced, in order: staging's subdirectories deepest
    /// first, staging itself, then after the rename the version's parent
    /// `<name>/` (canonical: symbolic links resolved), `<root>` and every
    /// directory above it up to `/`.
    pub synced_dirs: Vec<PathBuf>,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            // best effort: the error that caused the abort is what the caller
            // sees; `created_parents` is dropped (and removed) after this
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Checks that the staging directory `dir` of a distributed write is still
/// its coordinator's: a real directory (not a symbolic link) whose `flock` a
/// process holds. Where the filesystem has no `flock` (the lock call fails
/// otherwise than "held"), only the directory's existence is checked.
///
/// # Errors
/// [`Error::Io`] (`NotFound`) when the directory is gone or no process holds it.
pub(crate) fn open_part_staging(dir: &Path) -> Result<()> {
    let gone = |why: &str| Error::io(dir, io::Error::new(io::ErrorKind::NotFound, why.to_string()));
    if !fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Err(gone("staging directory is gone (the write was committed, aborted or collected by gc)"));
    }
    let probe = File::open(dir).map_err(|e| Error::io(dir, e))?;
    match rustix::fs::flock(&probe, rustix::fs::FlockOperation::NonBlockingLockShared) {
        // nobody holds it: the coordinator is gone (its lock went with it)
        Ok(()) => Err(gone("no coordinator holds this staging directory (it died; gc removes the staging)")),
        // held (`EWOULDBLOCK`), or a filesystem without `flock`
        Err(_) => Ok(()),
    }
}

/// A file a part of a distributed write is writing into a staging directory it
/// does not own: written at `<staging>/.parts/<uuid>-<name>`, renamed onto
/// `<staging>/<rel>` by [`PartFile::finish`] (an atomic replace: a retried or
/// speculative part writes the same bytes), removed when dropped unfinished.
#[derive(Debug)]
pub(crate) struct PartFile {
    pub(crate) file: File,
    tmp: PathBuf,
    pub(crate) dest: PathBuf,
    done: bool,
}

impl PartFile {
    /// Creates the temporary file for `rel` in the scratch directory of the
    /// staging `dir`; never creates the scratch directory or `dir`, so a late
    /// worker cannot bring back a staging that was committed, aborted or
    /// collected, nor leave a scratch directory in a committed version.
    pub(crate) fn create(dir: &Path, rel: &str) -> Result<PartFile> {
        let dest = dir.join(rel);
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(super::PART_SCRATCH).join(format!("{}-{name}", uuid::Uuid::new_v4().simple()));
        let file = File::create_new(&tmp).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::io(
                &tmp,
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "the write was committed or aborted (its part scratch is gone)",
                ),
            ),
            _ => Error::io(&tmp, e),
        })?;
        let mut needed: Vec<PathBuf> = dest
            .parent()
            .into_iter()
            .flat_map(Path::ancestors)
            .take_while(|a| *a != dir)
            .map(Path::to_path_buf)
            .collect();
        needed.sort_by_key(|d| d.components().count());
        for d in &needed {
            match fs::create_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Err(Error::io(d, e));
                }
            }
        }
        Ok(PartFile { file, tmp, dest, done: false })
    }

    /// fsync, rename into place, fsync the directory.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))?;
        self.done = true;
        fsync_dir(self.dest.parent().unwrap_or(Path::new("."))).map(drop)
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            // best effort: the commit removes the scratch directory anyway
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Fsyncs the directory `dir`; returns it.
pub(crate) fn fsync_dir(dir: &Path) -> Result<PathBuf> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, e))?;
    Ok(dir.to_path_buf())
}

/// Renames `from` onto `to`, failing with [`Error::AlreadyExists`] if `to` exists.
/// Linux: `renameat2(RENAME_NOREPLACE)`. An existing *empty* directory at `to`
/// (left by a crashed tool, not a version) is removed first, since
/// `RENAME_NOREPLACE` refuses any existing entry.
fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    if to.is_dir() && fs::read_dir(to).map(|mut d| d.next().is_none()).unwrap_or(false) {
        let _ = fs::remove_dir(to);
    }
    match rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::EXIST || e == rustix::io::Errno::NOTEMPTY => {
            Err(Error::AlreadyExists { path: to.to_path_buf() })
        }
        Err(e) => Err(Error::io(to, e.into())),
    }
}

/// `path`, a file of the version directory `version_dir` when that is given
/// (then opened by [`open_in`]), else opened as is.
pub(crate) fn open(path: &Path, version_dir: Option<&VersionDir>) -> Result<File> {
    match version_dir.and_then(|dir| Some((dir, path.strip_prefix(dir.path()).ok()?))) {
        Some((dir, rel)) => {
            let rel: Vec<_> = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
            open_in(dir, &rel.join("/"))
        }
        None => File::open(path).map_err(|e| Error::io(path, e)),
    }
}

/// The bytes of the regular file `path` (see [`open`]) if it is at most
/// `max_bytes` long, so a FIFO or `/dev/zero` in its place cannot hang or
/// exhaust memory.
pub(crate) fn read_small(path: &Path, version_dir: Option<&VersionDir>, max_bytes: u64) -> Result<Small> {
    let file = match version_dir {
        Some(_) => match open(path, version_dir) {
            Ok(f) => f,
            Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(Small::Missing),
            Err(Error::Corrupt { reason, .. }) => return Ok(Small::Refused(reason)),
            Err(e) => return Err(e),
        },
        None => {
            // a link that leads back to itself, or a file this user may not
            // read, is refused as a FIFO in its place is: the marker it may be
            // is not known, and gc and ls go on with the rest
            let refused = |e: io::Error| {
                let errno = e.raw_os_error();
                let errno_is = |x: rustix::io::Errno| errno == Some(x.raw_os_error());
                match e {
                    _ if errno_is(rustix::io::Errno::LOOP) => Ok(Small::Refused("a loop of symbolic links".into())),
                    // a socket, or a FIFO whose reader does not wait for a writer
                    _ if errno_is(rustix::io::Errno::NXIO) => Ok(Small::Refused("not a regular file".into())),
                    e if e.kind() == io::ErrorKind::PermissionDenied => Ok(Small::Refused("not readable here".into())),
                    e => Err(Error::io(path, e)),
                }
            };
            // a device is never opened (a tape rewinds)
            match fs::metadata(path) {
                Ok(m) if !m.is_file() => return Ok(Small::Refused("not a regular file".into())),
                Ok(_) => {}
                // a link that leads nowhere may still be made to lead to a marker
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok(match fs::symlink_metadata(path) {
                        Ok(_) => Small::Refused("a symbolic link that leads nowhere".into()),
                        Err(_) => Small::Missing,
                    })
                }
                Err(e) => return refused(e),
            }
            // opened without waiting, and judged again open: a FIFO renamed
            // onto the path since would otherwise block the open forever
            use std::os::unix::fs::OpenOptionsExt;
            let nonblock = rustix::fs::OFlags::NONBLOCK.bits() as i32;
            let file = match fs::OpenOptions::new().read(true).custom_flags(nonblock).open(path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Small::Missing),
                Err(e) => return refused(e),
            };
            if !file.metadata().map_err(|e| Error::io(path, e))?.is_file() {
                return Ok(Small::Refused("not a regular file".into()));
            }
            file
        }
    };
    let mut bytes = Vec::new();
    match file.take(max_bytes + 1).read_to_end(&mut bytes) {
        Ok(_) => {}
        // a marker that fails its read (`/proc/self/mem`) is one gc cannot read, as a FIFO is
        Err(e) if version_dir.is_none() => return Ok(Small::Refused(format!("a read that fails: {e}"))),
        Err(e) => return Err(Error::io(path, e)),
    }
    if bytes.len() as u64 > max_bytes {
        return Ok(Small::Refused(format!("larger than {max_bytes} bytes")));
    }
    Ok(Small::Bytes(bytes))
}

/// Streams the file at `path` (see [`open`]) through `f` in 1 MiB blocks; returns its size.
pub(crate) fn stream(
    path: &Path,
    version_dir: Option<&VersionDir>,
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<u64> {
    let mut file = open(path, version_dir)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(total);
        }
        f(&buf[..n])?;
        total += n as u64;
    }
}

/// Every non-directory entry under `dir` with its size, relative and
/// `/`-separated, sorted, and each path (relative; `.` for `dir` itself) that
/// could not be listed or examined with why: [`walk_in`] from a handle of
/// `dir`, so symbolic links below it are never followed.
pub(crate) fn walk(dir: &Path) -> (Vec<(String, u64)>, Vec<(String, String)>) {
    match VersionDir::open(dir) {
        Ok(d) => {
            let (entries, errors) = walk_in(&d);
            (entries.into_iter().map(|e| (e.rel, e.bytes)).collect(), errors)
        }
        Err(Error::Io { source, .. }) => (Vec::new(), vec![(".".to_string(), source.to_string())]),
        Err(e) => (Vec::new(), vec![(".".to_string(), e.to_string())]),
    }
}

/// Names of the sub-directories of `dir` not starting with `.`, sorted.
pub(crate) fn list_dirs(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && entry.path().is_dir() {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::file_syncs::tests::unsyncable;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn publish_reports_a_file_whose_fsync_failed_and_publishes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("ds/v1");
        let mut staging = Staging::create(&target).unwrap();
        let (_file, _) = staging.create_file("manifest.json").unwrap();
        staging
            .syncs()
            .start(PathBuf::from("time_series/shard-00000.parquet"), unsyncable(), 0, Default::default())
            .unwrap();
        let err = staging.publish().unwrap_err();
        assert_eq!(err.to_string(), "I/O on time_series/shard-00000.parquet: Invalid argument (os error 22)");
        assert!(!target.exists());
        // the staging directory went with the failed publish
        assert_eq!(fs::read_dir(root.path().join("ds")).map(|d| d.count()).unwrap_or(0), 0);
    }

    #[test]
    fn a_first_write_fsyncs_staging_then_the_version_parent_and_every_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("a/b/root");
        let target = root.join("ds/v1");
        let mut staging = Staging::create(&target).unwrap();
        let dir = staging.dir().to_path_buf();
        staging.create_file("time_series/shard-00000.parquet").unwrap();
        let published = staging.publish().unwrap();
        assert_eq!(published.dir, target);
        let mut want = vec![dir.join("time_series"), dir];
        want.extend(root.join("ds").ancestors().map(Path::to_path_buf));
        assert_eq!(want[2..6], [root.join("ds"), root.clone(), base.join("a/b"), base.join("a")]);
        assert_eq!(want.last().unwrap(), Path::new("/"));
        assert_eq!(published.synced_dirs, want);
        assert!(target.join("time_series/shard-00000.parquet").is_file());
    }

    #[test]
    fn a_write_whose_directories_another_writer_created_still_fsyncs_every_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        // made by "another writer" that has fsynced nothing
        fs::create_dir_all(base.join("r/ds")).unwrap();
        let staging = Staging::create(&base.join("r/ds/v2")).unwrap();
        let dir = staging.dir().to_path_buf();
        let published = staging.publish().unwrap();
        let mut want = vec![dir];
        want.extend(base.join("r/ds").ancestors().map(Path::to_path_buf));
        assert_eq!(want[1..4], [base.join("r/ds"), base.join("r"), base.clone()]);
        assert_eq!(published.synced_dirs, want);
    }

    #[test]
    fn a_failed_first_write_removes_every_directory_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        // the staging name `.tmp-<version>-<32 chars>` exceeds NAME_MAX (255)
        // although the version name itself does not: mkdir of `a/b/ds` succeeds,
        // creating staging in it fails
        let version = "v".repeat(230);
        let err = Staging::create(&tmp.path().join("a/b/ds").join(&version)).unwrap_err();
        match &err {
            Error::Io { path, source } => {
                assert_eq!(path, &tmp.path().join("a/b/ds"));
                // tempfile wraps the OS error with the path it tried
                assert!(source.to_string().starts_with("File name too long (os error 36)"), "{err}");
            }
            other => panic!("{other:?}"),
        }
        let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn staging_is_named_after_the_version_and_made_like_any_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let staging = Staging::create(&tmp.path().join("ds/v3")).unwrap();
        let name = staging.dir().file_name().unwrap().to_str().unwrap().to_string();
        let random = name.strip_prefix(".tmp-v3-").unwrap();
        assert_eq!(random.len(), STAGING_RANDOM_CHARS, "{name}");
        assert!(random.bytes().all(|b| b.is_ascii_alphanumeric()), "{name}");
        // the mode `fs::create_dir` gives (0o777 less the umask), not tempfile's
        // 0o700 (reading the umask without setting it: /proc/self/status)
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).unwrap().trim();
        let umask = u32::from_str_radix(umask, 8).unwrap();
        let mode = fs::metadata(staging.dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o777 & !umask, "umask {umask:o}");
        // a second writer of the same version can take no lock while this one lives
        let other = File::open(staging.dir()).unwrap();
        assert!(rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err());
        drop(staging);
        // aborted: staging and the dataset directory it created are gone
        assert!(!tmp.path().join("ds").exists());
    }

    #[test]
    fn walk_lists_files_relative_and_sorted_without_following_links() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("d/e")).unwrap();
        fs::write(tmp.path().join("d/e/f.bin"), b"abc").unwrap();
        fs::write(tmp.path().join("z"), b"").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("d"), tmp.path().join("link")).unwrap();
        let (files, errors) = walk(tmp.path());
        let link_len = fs::symlink_metadata(tmp.path().join("link")).unwrap().len();
        assert_eq!(files, [("d/e/f.bin".to_string(), 3), ("link".to_string(), link_len), ("z".to_string(), 0)]);
        assert!(errors.is_empty(), "{errors:?}");
    }
}
