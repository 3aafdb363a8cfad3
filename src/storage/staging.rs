//! A version being written ([`Staging`]) and the parts of a distributed write
//! ([`PartStaging`]): the files they stream out ([`StagedFile`]) and what the
//! manifest records of each ([`WrittenFile`]).

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::file_hash::FileHash;
use super::file_syncs::SyncBehind;
use super::location::Inner;
use super::{
    check_interrupted, file_syncs, interrupted, local, object, Location, Source, StorageOptions, MANIFEST, PARTS_MARKER,
};
use crate::error::{Error, PartProblem, Result};
use crate::limits::MAX_MANIFEST_BYTES;

/// A version being written: a local staging directory or a claimed object prefix.
#[derive(Debug)]
pub struct Staging(StagingInner);

#[derive(Debug)]
enum StagingInner {
    Local(local::Staging),
    Object(object::Staging),
}

impl Staging {
    /// Starts writing the version at `target`. Local: creates the staging
    /// directory. Object store: creates the claim with `PutMode::Create`, then
    /// checks that no manifest exists.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when the version is committed, or (object
    /// stores) claimed by another writer; I/O and store errors.
    pub fn create(target: &Location) -> Result<Staging> {
        match &target.0 {
            Inner::Local(p, _) => Ok(Staging(StagingInner::Local(local::Staging::create(p)?))),
            Inner::Object(o) => Ok(Staging(StagingInner::Object(object::Staging::create(o)?))),
        }
    }

    /// Starts a distributed write of the version at `target` (docs/format.md §1
    /// "Distributed writes"): [`Staging::create`], plus where the parts write.
    /// Local: the staging directory, with its scratch [`PART_SCRATCH`](super::PART_SCRATCH) made now
    /// (workers never create it, so once the commit or abort removed it a late
    /// worker fails instead of bringing it back). Object store: the prefix
    /// `<dataset>/.tmp-<version>-<write id>/` beside the version, the write id
    /// being the claim's writer id; workers upload only there and the commit
    /// copies each part file into the version (`Staging::take_part_file`).
    ///
    /// # Errors
    /// As [`Staging::create`].
    pub fn create_for_parts(target: &Location) -> Result<Staging> {
        match &target.0 {
            Inner::Local(p, _) => {
                let staging = local::Staging::create(p)?;
                staging.create_part_scratch()?;
                Ok(Staging(StagingInner::Local(staging)))
            }
            Inner::Object(o) => Ok(Staging(StagingInner::Object(object::Staging::create_for_parts(o)?))),
        }
    }

    /// The id of this write: the random part of the local staging directory's
    /// name (`.tmp-<version>-<id>`), or the object-store claim's writer id (the
    /// name of the parts' prefix, `.tmp-<version>-<id>`). ASCII letters and digits.
    pub fn write_id(&self) -> String {
        match &self.0 {
            StagingInner::Local(s) => s.write_id(),
            StagingInner::Object(s) => s.writer_id().to_string(),
        }
    }

    /// Where the files are being written (local: the staging directory; object
    /// store: the version's URL, where they land in place).
    pub fn dir(&self) -> PathBuf {
        match &self.0 {
            StagingInner::Local(s) => s.dir().to_path_buf(),
            StagingInner::Object(s) => PathBuf::from(s.location().to_string()),
        }
    }

    /// Creates the file `rel` (relative, `/`-separated) for streaming output.
    pub fn create_file(&mut self, rel: &str) -> Result<StagedFile> {
        check_interrupted(&self.dir())?;
        let (sink, display) = match &mut self.0 {
            StagingInner::Local(s) => {
                let (file, path) = s.create_file(rel)?;
                (Sink::Local(file, s.syncs(), SyncBehind::default()), path)
            }
            StagingInner::Object(s) => {
                let upload = s.create_file(rel)?;
                let display = PathBuf::from(upload.to_string());
                (Sink::Object(Box::new(upload)), display)
            }
        };
        Ok(StagedFile::new(sink, display, rel))
    }

    /// Places `from`, a finished file of another version (versions are
    /// immutable), at `rel` of this version without reading it: local, a hard
    /// link into the staging directory (a copy where linking fails, e.g.
    /// across devices); object store, the store's server-side copy, checked
    /// at commit as an uploaded file is (its size and ETag). Returns the size
    /// of the file placed, or `None` (nothing done) when `from` is on another
    /// backend or store.
    ///
    /// # Errors
    /// I/O and store errors naming the file; [`Error::Io`] (`NotFound`) when
    /// the write is over (object store: the claim is gone).
    pub fn copy_file(&mut self, rel: &str, from: &Location) -> Result<Option<u64>> {
        check_interrupted(&self.dir())?;
        let placed = match (&mut self.0, &from.0) {
            (StagingInner::Local(s), Inner::Local(path, _)) => s.link_file(rel, path),
            (StagingInner::Object(s), Inner::Object(o)) => s.copy_file(rel, o),
            _ => Ok(None),
        };
        // a store's copy names `from` in its error when `from` is what failed
        // (the write's own failures name its staging, its claim or its files)
        placed.map_err(|e| match &e {
            Error::ObjectStore { url, .. } if *url == from.to_string() => from.listed_missing(e),
            _ => e,
        })
    }

    /// A file this staging wrote and finished, for reading back (the self-check).
    pub fn open_staged(&self, rel: &str) -> Result<Source> {
        match &self.0 {
            StagingInner::Local(s) => Location::local(s.dir().join(rel)).open(),
            StagingInner::Object(s) => Location::object(s.location().join(rel)).open(),
        }
    }

    /// Sets the manifest bytes the commit writes. Local: written in staging
    /// now, its fsync started (waited for by [`Staging::publish`]). Object
    /// store: held until [`Staging::publish`].
    ///
    /// # Errors
    /// [`Error::Validation`] (field `manifest.json`, id the version) when the
    /// bytes are more than [`MAX_MANIFEST_BYTES`], which no reader would open;
    /// I/O and store errors.
    pub fn stage_manifest(&mut self, bytes: Vec<u8>) -> Result<WrittenFile> {
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            let target = match &self.0 {
                StagingInner::Local(s) => s.target().display().to_string(),
                StagingInner::Object(s) => s.location().to_string(),
            };
            return Err(Error::Validation {
                id: target,
                field: "manifest.json",
                reason: format!(
                    "{} bytes, over the {MAX_MANIFEST_BYTES} bytes a reader accepts (docs/format.md \"Limits\")",
                    bytes.len()
                ),
            });
        }
        match &mut self.0 {
            StagingInner::Local(_) => {
                let mut f = self.create_file(MANIFEST)?;
                f.write_all(&bytes).map_err(|e| Error::io(&f.display, e))?;
                f.finish()
            }
            StagingInner::Object(s) => Ok(s.stage_manifest(bytes)),
        }
    }

    /// Where the parts of a distributed write put their files: a serializable
    /// reference a worker opens with [`PartStaging::open`] (a staging made by
    /// [`Staging::create_for_parts`]).
    pub fn part_ref(&self) -> StagingRef {
        match &self.0 {
            StagingInner::Local(s) => StagingRef::Local { dir: s.dir().to_path_buf() },
            StagingInner::Object(s) => StagingRef::Object { url: s.parts_location().to_string() },
        }
    }

    /// Closes the staging to parts and returns every file they staged, sorted.
    /// Local: the scratch directory [`PART_SCRATCH`](super::PART_SCRATCH) is moved out of staging
    /// (a part file still being written can no longer be renamed into place,
    /// and no new one can start) and removed. Object store: the listing of the
    /// parts' prefix; a worker still running uploads only there (it checks the
    /// claim before each file, and the claim goes at commit or abort).
    pub(crate) fn seal_parts(&mut self) -> Result<Vec<String>> {
        match &mut self.0 {
            StagingInner::Local(s) => s.seal_parts(),
            StagingInner::Object(s) => {
                let (listed, unlistable) = s.parts_location().list_files()?;
                // a part could hide there: the parts are not all known
                if let Some(level) = unlistable.first() {
                    return Err(super::object::cannot_list(&s.parts_location().join(level)));
                }
                Ok(listed.into_iter().map(|(f, _)| f).filter(|f| f != PARTS_MARKER).collect())
            }
        }
    }

    /// Makes the part file `rel` a file of the version and returns its size
    /// and sha256 read back from where the version will have it. Local: it is
    /// already in the staging directory. Object store: while the claim is this
    /// writer's, a server-side copy from the parts' prefix onto the version's
    /// key (only the claim holder writes under the version); the copy is what
    /// gets hashed, so the committed bytes are the ones checked. Also returns
    /// where that file is, for the commit's reads of it.
    ///
    /// # Errors
    /// I/O and store errors (a missing file: `NotFound`); an object-store
    /// claim that is no longer this writer's.
    pub(crate) fn take_part_file(&mut self, rel: &str) -> Result<(WrittenFile, Location)> {
        let loc = match &mut self.0 {
            StagingInner::Local(s) => Location::local(s.dir().join(rel)),
            StagingInner::Object(s) => Location::object(s.copy_part_file(rel)?),
        };
        let mut hasher = Sha256::new();
        let bytes = loc.stream(&mut |b| {
            hasher.update(b);
            Ok(())
        })?;
        Ok((WrittenFile { path: rel.to_string(), bytes, sha256: hex::encode(hasher.finalize()) }, loc))
    }

    /// Commits: the version becomes visible whole, or not at all, and never
    /// replaces a committed version. Returns the version's path or URL.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if another writer committed first; I/O and store errors.
    pub fn publish(self) -> Result<PathBuf> {
        match self.0 {
            StagingInner::Local(s) => s.publish().map(|p| p.dir),
            StagingInner::Object(s) => s.publish(),
        }
    }
}

/// Where the parts of a distributed write put their files: always
/// `<dataset>/.tmp-<version>-<write id>` (serde: `{"backend": "local", "dir":
/// ...}` or `{"backend": "object", "url": ...}`; the URL carries no
/// credentials: a worker takes them from its environment or options).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "backend", rename_all = "snake_case")]
pub enum StagingRef {
    /// A local (or shared) staging directory, `<root>/<name>/.tmp-<version>-<write id>`.
    Local {
        /// The staging directory.
        dir: PathBuf,
    },
    /// The parts' prefix on an object store, `<root>/<name>/.tmp-<version>-<write id>`,
    /// beside the version (whose claim holds the write id).
    Object {
        /// The prefix's URL.
        url: String,
    },
}

/// `(version, write id)` of a staging named `.tmp-<version>-<write id>` (a
/// version never starts with `.`, and a write id holds no `-`).
pub(crate) fn parse_staged(name: &str) -> Option<(&str, &str)> {
    let (head, id) = name.rsplit_once('-')?;
    let version = head.strip_prefix(".tmp-")?;
    (!version.is_empty() && !id.is_empty()).then_some((version, id))
}

/// The version a staging named `name` belongs to, when `name` is
/// `.tmp-<version>-<write_id>`.
fn staged_version<'a>(name: &'a str, write_id: &str) -> Option<&'a str> {
    parse_staged(name).filter(|(_, id)| *id == write_id).map(|(version, _)| version)
}

/// A worker's handle on a distributed write's staging: creates files but owns
/// nothing (no lock, no claim; the coordinator's [`Staging`] does). A file lands
/// under its final name only when complete (local: temporary name in
/// [`PART_SCRATCH`](super::PART_SCRATCH), then rename; object store: one PUT or a completed multipart
/// upload under the parts' prefix), so a part run twice leaves the same bytes.
pub struct PartStaging(PartInner);

impl fmt::Debug for PartStaging {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            PartInner::Local(dir) => write!(f, "PartStaging({})", dir.display()),
            PartInner::Object(o) => write!(f, "PartStaging({})", o.location()),
        }
    }
}

enum PartInner {
    Local(PathBuf),
    Object(object::PartPrefix),
}

impl PartStaging {
    /// Opens `staging` for part `part` of the write `write_id`; `options` as in
    /// [`Location::parse`]. The staging must be that write's: named
    /// `.tmp-<version>-<write_id>` (so never a committed version, nor another
    /// write's staging), and still owned by its coordinator (local: a process
    /// holds its `flock`, where the filesystem has `flock`; object store: the
    /// version's claim holds `write_id`, checked again before each file).
    ///
    /// # Errors
    /// [`Error::Part`] with [`PartProblem::WrongStaging`] when `staging` is not
    /// named after `write_id` (a tampered task); [`Error::Io`] (`NotFound`)
    /// when the write is over (committed, aborted, its coordinator dead, or
    /// collected by gc); [`Error::InvalidUrl`]; store errors.
    pub fn open(staging: &StagingRef, write_id: &str, part: u32, options: &StorageOptions) -> Result<PartStaging> {
        let wrong = |at: &dyn fmt::Display| Error::Part {
            write_id: write_id.to_string(),
            part: Some(part),
            shard: None,
            problem: PartProblem::WrongStaging(format!("{at} is not this write's staging .tmp-<version>-{write_id}")),
        };
        let id_ok = (1..=64).contains(&write_id.len()) && write_id.bytes().all(|b| b.is_ascii_alphanumeric());
        match staging {
            StagingRef::Local { dir } => {
                let plain = dir
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::RootDir | Component::CurDir));
                let named = dir.file_name().and_then(|n| n.to_str()).and_then(|n| staged_version(n, write_id));
                if !id_ok || !plain || named.is_none() {
                    return Err(wrong(&dir.display()));
                }
                local::open_part_staging(dir)?;
                Ok(PartStaging(PartInner::Local(dir.clone())))
            }
            StagingRef::Object { url } => {
                let loc = object::ObjectLocation::parse(url, options)?;
                let name = loc.file_name();
                let Some(version) = name.as_deref().and_then(|n| staged_version(n, write_id)).filter(|_| id_ok) else {
                    return Err(wrong(&loc));
                };
                let prefix = object::PartPrefix::new(loc.clone(), version, write_id);
                prefix.check_claim()?;
                Ok(PartStaging(PartInner::Object(prefix)))
            }
        }
    }
}

/// What the shard writer needs of a staging: the coordinator's [`Staging`]
/// (single-machine write) or a worker's [`PartStaging`].
pub(crate) trait FileSink {
    /// Creates the file `rel` for streaming output.
    fn create_file(&mut self, rel: &str) -> Result<StagedFile>;
    /// A finished file, for reading back (the self-check).
    fn open_staged(&self, rel: &str) -> Result<Source>;
    /// Places `from`, a finished file of another version, at `rel` without
    /// passing its bytes through this process where the backend can
    /// ([`Staging::copy_file`]); returns its size, or `None` when it cannot.
    fn copy_file(&mut self, rel: &str, from: &Location) -> Result<Option<u64>>;
}

impl FileSink for Staging {
    fn create_file(&mut self, rel: &str) -> Result<StagedFile> {
        Staging::create_file(self, rel)
    }
    fn open_staged(&self, rel: &str) -> Result<Source> {
        Staging::open_staged(self, rel)
    }
    fn copy_file(&mut self, rel: &str, from: &Location) -> Result<Option<u64>> {
        Staging::copy_file(self, rel, from)
    }
}

impl FileSink for PartStaging {
    fn create_file(&mut self, rel: &str) -> Result<StagedFile> {
        let (sink, display) = match &self.0 {
            PartInner::Local(dir) => {
                let part = local::PartFile::create(dir, rel)?;
                let display = part.dest.clone();
                (Sink::LocalRename(part, SyncBehind::default()), display)
            }
            PartInner::Object(o) => {
                // a write that is over takes no new file (its claim is gone or another's)
                o.check_claim()?;
                let upload = object::Upload::new(o.location().join(rel));
                let display = PathBuf::from(upload.to_string());
                (Sink::Part(Box::new(upload), o.clone()), display)
            }
        };
        Ok(StagedFile::new(sink, display, rel))
    }
    /// A part's files are its own (a distributed write has no base).
    fn copy_file(&mut self, _rel: &str, _from: &Location) -> Result<Option<u64>> {
        Ok(None)
    }
    fn open_staged(&self, rel: &str) -> Result<Source> {
        match &self.0 {
            PartInner::Local(dir) => Location::local(dir.join(rel)).open(),
            PartInner::Object(o) => Location::object(o.location().join(rel)).open(),
        }
    }
}

/// A file being written: computes its sha256 and size while the bytes stream
/// out (local file, or object-store upload: one PUT when small, multipart past
/// [`DEFAULT_SINGLE_PUT_BYTES`](super::DEFAULT_SINGLE_PUT_BYTES)). Dropped unfinished, an upload is aborted.
/// A file past 4 MiB is hashed on a thread of its own.
pub struct StagedFile {
    sink: Sink,
    display: PathBuf,
    rel: String,
    hash: FileHash,
    bytes: u64,
}

enum Sink {
    /// A file in a local staging directory, its data synced while it is
    /// written; its fsync, started when it is finished, is waited for by the publish.
    Local(File, Arc<file_syncs::FileSyncs>, SyncBehind),
    /// A part's file: written under a temporary name (its data synced while
    /// it is written), renamed into place when finished.
    LocalRename(local::PartFile, SyncBehind),
    Object(Box<object::Upload>),
    /// A part's file on an object store: its claim checked again once uploaded.
    Part(Box<object::Upload>, object::PartPrefix),
}

impl fmt::Debug for StagedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StagedFile").field("path", &self.display).field("bytes", &self.bytes).finish()
    }
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

impl StagedFile {
    /// A file `rel` of a version starting to stream into `sink` (named `display`).
    fn new(sink: Sink, display: PathBuf, rel: &str) -> StagedFile {
        StagedFile { sink, display, rel: rel.to_string(), hash: FileHash::new(), bytes: 0 }
    }

    /// The file's path or URL, as messages name it.
    pub fn path(&self) -> &Path {
        &self.display
    }

    /// Completes the file (local: flush, and its fsync started, which
    /// [`Staging::publish`] waits for; object store: the last PUT or the
    /// multipart completion) and returns its size and sha256.
    pub fn finish(self) -> Result<WrittenFile> {
        let StagedFile { sink, display, rel, hash, bytes } = self;
        let sha256 = hash.finish().map_err(|e| Error::io(&display, e))?;
        match sink {
            Sink::Local(mut file, syncs, behind) => {
                file.flush().map_err(|e| Error::io(&display, e))?;
                syncs.start(display.clone(), file, bytes, behind)?;
            }
            Sink::LocalRename(mut part, behind) => {
                behind.finish().map_err(|e| Error::io(&display, e))?;
                part.finish()?
            }
            Sink::Object(upload) => {
                upload.finish()?;
            }
            Sink::Part(upload, prefix) => prefix.finish(upload)?,
        }
        Ok(WrittenFile { path: rel, bytes, sha256: hex::encode(sha256) })
    }

    /// Writes all of `block`, taken as it is, so its hash needs no copy of
    /// it; returns an empty buffer to reuse.
    ///
    /// # Errors
    /// As [`Write::write_all`].
    pub(crate) fn write_owned(&mut self, block: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut at = 0;
        while at < block.len() {
            match self.write_unhashed(&block[at..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.hash.update_owned(block))
    }

    /// Writes some of `buf` (the count returned) without hashing it. After
    /// [`super::interrupt`], fails with an error of kind `Other`, not
    /// `Interrupted`: `write_all` and `io::copy` (the parquet writer's) retry
    /// an `Interrupted` write, so a Ctrl-C would spin there for ever.
    fn write_unhashed(&mut self, buf: &[u8]) -> io::Result<usize> {
        if interrupted() {
            return Err(io::Error::other("interrupted (Ctrl-C)"));
        }
        let n = match &mut self.sink {
            Sink::Local(f, _, behind) => {
                let n = f.write(buf)?;
                behind.written(f, self.bytes + n as u64)?;
                n
            }
            Sink::LocalRename(p, behind) => {
                let n = p.file.write(buf)?;
                behind.written(&p.file, self.bytes + n as u64)?;
                n
            }
            Sink::Object(u) | Sink::Part(u, _) => u.write(buf)?,
        };
        self.bytes += n as u64;
        Ok(n)
    }
}

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.write_unhashed(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Local(f, ..) => f.flush(),
            Sink::LocalRename(p, _) => p.file.flush(),
            Sink::Object(_) | Sink::Part(..) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::file_syncs::SYNC_BEHIND_BYTES;

    #[test]
    fn a_local_file_starts_the_sync_of_its_data_once_a_block_is_written() {
        let root = tempfile::tempdir().unwrap();
        let mut staging = Staging::create(&Location::local(root.path().join("ds/v1"))).unwrap();
        let mut file = staging.create_file("time_series/shard-00000.parquet").unwrap();
        let block = vec![7u8; 1 << 20];
        for _ in 0..SYNC_BEHIND_BYTES / (1 << 20) - 1 {
            file.write_all(&block).unwrap();
        }
        let started_to = |f: &StagedFile| match &f.sink {
            Sink::Local(_, _, behind) => behind.started_to,
            _ => unreachable!("a local staging's file"),
        };
        assert_eq!(started_to(&file), 0);
        file.write_all(&block).unwrap();
        assert_eq!(started_to(&file), SYNC_BEHIND_BYTES);
        let written = file.finish().unwrap();
        assert_eq!(written.bytes, SYNC_BEHIND_BYTES);
        staging.publish().unwrap();
        let on_disk = std::fs::read(root.path().join("ds/v1/time_series/shard-00000.parquet")).unwrap();
        assert_eq!(on_disk.len() as u64, SYNC_BEHIND_BYTES);
        assert!(on_disk.iter().all(|&b| b == 7));
    }
}
