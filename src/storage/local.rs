//! The local backend: staging, fsync and the no-clobber publish of a version
//! (FORMAT-BRIEF §1; docs/format.md "Storage backends and the commit").
//!
//! The sequence, owned here so no call site can skip a step:
//! 1. [`Staging::create`] makes `<root>/<name>/.tmp-<version>-<unique>/`.
//! 2. The writer creates every file through [`Staging::create_file`]; the
//!    seam's [`super::StagedFile`] computes the sha256 while the bytes are
//!    written and fsyncs the file when it is finished.
//! 3. [`Staging::publish`] fsyncs the staging directory and its subdirectories,
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

use super::{LiveGuard, Small, MANIFEST};
use crate::error::{Error, Result};

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
    /// Directories above staging that this staging created, deepest first
    /// (removed again on abort while empty).
    created_parents: Vec<PathBuf>,
    published: bool,
    /// The staging directory opened and `flock`ed exclusively while this writer
    /// lives; the kernel drops the lock when the process dies however it dies,
    /// which is how [`gc`] tells a dead writer's staging from a live one's.
    _owner: File,
    _live: LiveGuard,
}

impl Staging {
    /// Creates `<parent of target>/.tmp-<version>-<uuid v4>/` (and the parent).
    pub fn create(target: &Path) -> Result<Staging> {
        let parent = target.parent().ok_or_else(|| Error::io(target, io::Error::other("no parent directory")))?;
        let version = target.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = parent.join(format!(".tmp-{version}-{}", uuid::Uuid::new_v4().simple()));
        let mut created_parents = Vec::new();
        // another writer's abort may remove an empty parent between the two
        // calls; creating it again is all that is needed
        for attempt in 0.. {
            if !parent.exists() {
                created_parents = parent
                    .ancestors()
                    .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                    .map(Path::to_path_buf)
                    .collect();
                fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            match fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 3 => continue,
                Err(e) => return Err(Error::io(&dir, e)),
            }
        }
        let owner = File::open(&dir).map_err(|e| Error::io(&dir, e))?;
        rustix::fs::flock(&owner, rustix::fs::FlockOperation::LockExclusive).map_err(|e| Error::io(&dir, e.into()))?;
        Ok(Staging {
            dirs: vec![dir.clone()],
            dir,
            target: target.to_path_buf(),
            created_parents,
            published: false,
            _owner: owner,
            _live: LiveGuard::new(),
        })
    }

    /// The staging directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the file `rel` (a relative path with `/` separators) in staging,
    /// creating its parent directories; returns it and its path.
    pub fn create_file(&mut self, rel: &str) -> Result<(File, PathBuf)> {
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
        let file = File::create_new(&path).map_err(|e| Error::io(&path, e))?;
        Ok((file, path))
    }

    /// Publishes: fsyncs every staged directory, renames staging onto the target
    /// without replacing anything, fsyncs the parent. Returns the version directory.
    pub fn publish(mut self) -> Result<PathBuf> {
        // deepest first, so each directory entry is durable before its parent's
        self.dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in &self.dirs {
            fsync_dir(d)?;
        }
        rename_noreplace(&self.dir, &self.target)?;
        self.published = true;
        let parent = self.target.parent().unwrap_or(Path::new("."));
        fsync_dir(parent)?;
        Ok(self.target.clone())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            // best effort: the error that caused the abort is what the caller sees
            let _ = fs::remove_dir_all(&self.dir);
            // remove_dir only succeeds on an empty directory, so another
            // writer's staging or version is never touched
            for d in &self.created_parents {
                if fs::remove_dir(d).is_err() {
                    break;
                }
            }
        }
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
    /// Creates the temporary file for `rel` under the existing staging `dir`;
    /// never creates `dir` itself, so a late worker cannot bring back a
    /// staging directory that was committed, aborted or collected.
    pub(crate) fn create(dir: &Path, rel: &str) -> Result<PartFile> {
        let dest = dir.join(rel);
        let scratch = dir.join(super::PART_SCRATCH);
        let mut needed: Vec<PathBuf> = vec![scratch.clone()];
        needed.extend(
            dest.parent().into_iter().flat_map(Path::ancestors).take_while(|a| *a != dir).map(Path::to_path_buf),
        );
        needed.sort_by_key(|d| d.components().count());
        for d in &needed {
            match fs::create_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(d, e)),
            }
        }
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = scratch.join(format!("{}-{name}", uuid::Uuid::new_v4().simple()));
        let file = File::create_new(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok(PartFile { file, tmp, dest, done: false })
    }

    /// fsync, rename into place, fsync the directory.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))?;
        self.done = true;
        fsync_dir(self.dest.parent().unwrap_or(Path::new(".")))
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.done {
            // best effort: the commit clears the scratch directory anyway
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, e))
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

/// The bytes of the regular file `path` if it is at most `max_bytes` long, so a
/// FIFO or `/dev/zero` in its place cannot hang or exhaust memory.
pub(crate) fn read_small(path: &Path, max_bytes: u64) -> Result<Small> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Small::Missing),
        Err(e) => return Err(Error::io(path, e)),
    };
    if !meta.is_file() {
        return Ok(Small::Refused("not a regular file".into()));
    }
    let mut bytes = Vec::new();
    File::open(path).and_then(|f| f.take(max_bytes + 1).read_to_end(&mut bytes)).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > max_bytes {
        return Ok(Small::Refused(format!("larger than {max_bytes} bytes")));
    }
    Ok(Small::Bytes(bytes))
}

/// Streams the file at `path` through `f` in 1 MiB blocks; returns its size.
pub(crate) fn stream(path: &Path, f: &mut dyn FnMut(&[u8])) -> Result<u64> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(total);
        }
        f(&buf[..n]);
        total += n as u64;
    }
}

/// Every non-directory entry under `dir` with its size, relative and
/// `/`-separated, sorted, and the directories that could not be listed.
/// Symbolic links are not followed.
pub(crate) fn walk(dir: &Path) -> (Vec<(String, u64)>, Vec<(String, String)>) {
    fn go(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>, errors: &mut Vec<(String, String)>) {
        let rel = |p: &Path| {
            p.strip_prefix(base).map(|r| match r.as_os_str().is_empty() {
                true => ".".to_string(),
                false => r.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
            })
        };
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                errors.push((rel(dir).unwrap_or_default(), e.to_string()));
                return;
            }
        };
        for entry in entries {
            match entry.and_then(|e| Ok((e.path(), e.file_type()?, e.metadata()?.len()))) {
                Ok((p, t, _)) if t.is_dir() => go(base, &p, out, errors),
                Ok((p, _, len)) => out.extend(rel(&p).ok().map(|r| (r, len))),
                Err(e) => errors.push((rel(dir).unwrap_or_default(), e.to_string())),
            }
        }
    }
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    go(dir, dir, &mut out, &mut errors);
    out.sort();
    (out, errors)
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

/// Removes `<root>/<name>/.tmp-*` staging directories whose writer is gone (no
/// process holds their `flock`) and that were last modified more than
/// `older_than_s` seconds ago. `flock` is advisory and may be absent on network
/// filesystems (NFS without lock support): there only the age protects a live writer.
pub(crate) fn gc(root: &Path, older_than_s: u64) -> Result<super::GcReport> {
    let mut report = super::GcReport::default();
    let now = std::time::SystemTime::now();
    for name in list_dirs(root)? {
        let ds = root.join(&name);
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in fs::read_dir(&ds).map_err(|e| Error::io(&ds, e))? {
            let entry = entry.map_err(|e| Error::io(&ds, e))?;
            if entry.file_name().to_string_lossy().starts_with(".tmp-") && entry.path().is_dir() {
                found.push(entry.path());
            }
        }
        found.sort();
        for dir in found {
            // a live writer holds its staging directory's lock: never touched
            let Ok(owner) = File::open(&dir) else { continue };
            if rustix::fs::flock(&owner, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
                report.kept_claims.push(dir.display().to_string());
                continue;
            }
            let age_s = fs::metadata(&dir)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .map_or(0, |d| d.as_secs());
            if age_s < older_than_s {
                report.kept_claims.push(dir.display().to_string());
                continue;
            }
            let (files, _) = walk(&dir);
            fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            report.removed_files += files.len() as u64;
            report.removed_claims.push(dir.display().to_string());
        }
    }
    Ok(report)
}
