//! Staging, fsync and the no-clobber publish of a version (FORMAT-BRIEF §1).
//!
//! The sequence, owned here so no call site can skip a step:
//! 1. [`Staging::create`] makes `<root>/<name>/.tmp-<version>-<unique>/`.
//! 2. The writer creates every file through [`Staging::create_file`], whose
//!    [`HashedFile`] computes the sha256 while the bytes are written and is
//!    fsynced by [`HashedFile::finish`].
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
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The manifest's file name; its presence marks a committed version.
pub const MANIFEST: &str = "manifest.json";

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
        Ok(Staging { dirs: vec![dir.clone()], dir, target: target.to_path_buf(), created_parents, published: false })
    }

    /// The staging directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the file `rel` (a relative path with `/` separators) in staging,
    /// creating its parent directories.
    pub fn create_file(&mut self, rel: &str) -> Result<HashedFile> {
        let path = self.dir.join(rel);
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
        Ok(HashedFile { file, path, rel: rel.to_string(), hasher: Sha256::new(), bytes: 0 })
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

fn fsync_dir(dir: &Path) -> Result<()> {
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

/// A staged file that computes its sha256 and size while being written.
#[derive(Debug)]
pub struct HashedFile {
    file: File,
    path: PathBuf,
    rel: String,
    hasher: Sha256,
    bytes: u64,
}

/// What the manifest records of one written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Path relative to the version directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex sha256 of the bytes.
    pub sha256: String,
}

impl HashedFile {
    /// The file's absolute staging path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, fsyncs and returns the file's size and sha256.
    pub fn finish(mut self) -> Result<WrittenFile> {
        self.file.flush().map_err(|e| Error::io(&self.path, e))?;
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        Ok(WrittenFile { path: self.rel, bytes: self.bytes, sha256: hex(&self.hasher.finalize()) })
    }
}

impl Write for HashedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
