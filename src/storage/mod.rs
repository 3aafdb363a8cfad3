//! The one storage seam: where a version lives and how it is written, read,
//! listed and committed (docs/format.md "Storage backends and the commit").
//!
//! A [`Location`] is either a local path (the rename protocol of [`local`]:
//! staging directory, fsync, `renameat2(RENAME_NOREPLACE)`) or a URL served by
//! the `object_store` crate (`s3://`, `gs://`, `az://`, `file://`, `memory://`;
//! the conditional-create protocol of [`object`]: a claim object, data files in
//! place, `manifest.json` last with `PutMode::Create`). The writer, reader,
//! verify, edit, dedup, info and ls go through this module only; none of them
//! knows which backend it talks to.
//!
//! The seam a writer uses is shaped as plan -> parts -> commit: [`Staging::create`]
//! claims the version, [`Staging::create_file`] streams one file (returning its
//! path, size and sha256 on [`StagedFile::finish`]), [`Staging::stage_manifest`] and
//! [`Staging::publish`] commit without ever replacing a version, and dropping an
//! unpublished [`Staging`] aborts (removes what this writer put, aborts its
//! multipart uploads, releases the claim). A distributed write's coordinator
//! starts with [`Staging::create_for_parts`]; its workers write through
//! [`PartStaging`], only into `<dataset>/.tmp-<version>-<write id>`
//! (docs/format.md §1 "Distributed writes").
//!
//! Everything stays synchronous for callers: the object-store backend runs its
//! requests on an internal tokio runtime of [`IO_THREADS`] threads.

mod file_syncs;
mod gc;
pub mod local;
pub mod object;
pub mod store_options;
pub mod version_path;

pub use gc::{gc, gc_dry_run, stale_per_dataset, survey, GcReport, Survey};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use object::install_tls_provider;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::error::{Error, PartProblem, Result};
use crate::limits::MAX_MANIFEST_BYTES;

/// Environment variable naming a point of a write where the process stops: it
/// prints `timef: paused at <point>` to stderr and sleeps until it is killed
/// (or, with [`RESUME_ON_ENV`], until it is told to go on). The crash tests'
/// hook (docs/format.md §1, "Crash tests"): they kill the writer there, or run
/// `gc` beside it. Points of a write, in order: `staging-made` (local roots
/// only: the staging directory made under its `.new-*` name, not yet locked),
/// `staging-created`, `mid-shard` (a shard with a row group written, not
/// finished), `shards-written`, `manifest-staged`, `before-rename` and
/// `after-rename` (both local roots only: before the rename; the rename done,
/// the parent directory not yet fsynced). Points of a local `gc`, per staging directory: `gc-listed`
/// (listed, not yet opened) and `gc-opened` (opened, its lock not yet tried).
/// Unset in normal use.
pub const PAUSE_AT_ENV: &str = "TIMEF_TEST_PAUSE_AT";

/// Environment variable naming a file: a process paused at a point
/// ([`PAUSE_AT_ENV`]) goes on once that file exists (polled every 10 ms), and
/// passes every later point at once. Unset: the pause lasts until the process is killed.
pub const RESUME_ON_ENV: &str = "TIMEF_TEST_RESUME_ON";

/// Stops here when [`PAUSE_AT_ENV`] names `point`: for good, or until the file
/// [`RESUME_ON_ENV`] names exists.
pub(crate) fn pause_point(point: &str) {
    static AT: std::sync::OnceLock<(Option<String>, Option<PathBuf>)> = std::sync::OnceLock::new();
    let (at, resume_on) =
        AT.get_or_init(|| (std::env::var(PAUSE_AT_ENV).ok(), std::env::var_os(RESUME_ON_ENV).map(PathBuf::from)));
    if at.as_deref() != Some(point) {
        return;
    }
    match resume_on {
        Some(file) if file.exists() => {}
        Some(file) => {
            eprintln!("timef: paused at {point}");
            while !file.exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        None => {
            eprintln!("timef: paused at {point}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

/// The manifest's file name; its presence marks a committed version.
pub const MANIFEST: &str = "manifest.json";
/// The claim object of a version being written to an object store (a name
/// pyarrow, polars and DuckDB skip: it starts with `_`; docs/format.md).
pub const CLAIM: &str = "_timef_claim.json";
/// The marker object a distributed write's coordinator puts first in its
/// parts' prefix `<dataset>/.tmp-<version>-<write id>/` on an object store
/// (JSON: write id, version, creation time, timef version): what tells `gc`
/// the prefix is a writer's (docs/format.md §1 "Distributed writes").
pub const PARTS_MARKER: &str = "_timef_parts.json";
/// Bytes an object-store file is buffered up to before it goes out as a
/// multipart upload instead of one PUT (10 MiB, `object_store`'s default); also
/// the part size of the multipart upload.
pub const DEFAULT_SINGLE_PUT_BYTES: usize = 10 << 20;
/// Parts of one file uploaded concurrently (each [`DEFAULT_SINGLE_PUT_BYTES`]):
/// with the part being filled, at most 3 parts of memory per open file.
pub const DEFAULT_UPLOAD_CONCURRENCY: usize = 2;
pub use crate::runtime::IO_THREADS;

/// Options of an object store, overriding the environment: the keys of
/// `object_store`'s builders (`aws_access_key_id`, `aws_endpoint`,
/// `aws_allow_http`, `google_service_account`, `azure_storage_account_name`,
/// `timeout`, ...), plus `max_retries` and `retry_timeout_s` (seconds). Values
/// may be secrets: they never appear in errors, progress or Debug output.
/// Defaults ([`store_options`]): `timeout` 20 s, `connect_timeout` 5 s,
/// `retry_timeout_s` 15, so a server that never answers fails a request in
/// about 20 s.
pub type StorageOptions = BTreeMap<String, String>;

/// Where a version, a dataset or a root lives: a local path or an object-store URL.
///
/// Cloning is cheap (an object-store client is shared). `Display` gives the path
/// or the URL without credentials, query or fragment.
#[derive(Clone)]
pub struct Location(Inner);

#[derive(Clone)]
enum Inner {
    /// A local path, and the version directory (opened once) it is a file
    /// of, or is: opened relative to that handle without following a
    /// symbolic link below it.
    Local(PathBuf, Option<Arc<local::VersionDir>>),
    Object(object::ObjectLocation),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Inner::Local(p, _) => write!(f, "{}", p.display()),
            Inner::Object(o) => write!(f, "{o}"),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

/// True when `text` is a URL (`<scheme>://...`) rather than a local path.
pub fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-')
    })
}

impl Location {
    /// A local path.
    pub fn local(path: impl Into<PathBuf>) -> Location {
        Location(Inner::Local(path.into(), None))
    }

    /// A local path, or a URL when `text` starts with `<scheme>://`. URLs take
    /// their credentials and endpoint from the environment (`AWS_*`, `GOOGLE_*`,
    /// `AZURE_*`), overridden by `options`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for a URL that does not parse, a scheme that is not
    /// supported (or whose cargo feature is off), or a malformed option value;
    /// [`Error::UnknownStorageOption`] for a key the store does not take.
    pub fn parse(text: &str, options: &StorageOptions) -> Result<Location> {
        if is_url(text) {
            Ok(Location(Inner::Object(object::ObjectLocation::parse(text, options)?)))
        } else {
            Ok(Location::local(text))
        }
    }

    /// [`Location::parse`] of a path argument (a path whose text is a URL is
    /// the URL), with options from the environment only.
    pub fn from_path(path: &Path) -> Result<Location> {
        match path.to_str() {
            Some(text) if is_url(text) => Location::parse(text, &StorageOptions::new()),
            _ => Ok(Location::local(path)),
        }
    }

    /// A location on an `object_store` the caller built (e.g. a wrapping or
    /// in-memory store in tests); `label` is the URL prefix shown in messages
    /// (e.g. `memory://test`) and `prefix` the path inside the store. A cloud
    /// client (S3, GCS, Azure) needs a rustls provider before it is built:
    /// call [`install_tls_provider`] first (building it panics otherwise).
    pub fn from_object_store(
        store: std::sync::Arc<dyn object_store::ObjectStore>,
        label: &str,
        prefix: &str,
    ) -> Result<Location> {
        Ok(Location(Inner::Object(object::ObjectLocation::from_store(store, label, prefix)?)))
    }

    /// The local path, when this is one.
    pub fn as_local(&self) -> Option<&Path> {
        match &self.0 {
            Inner::Local(p, _) => Some(p),
            Inner::Object(_) => None,
        }
    }

    /// `self/rel` (`rel` is `/`-separated).
    pub fn join(&self, rel: &str) -> Location {
        match &self.0 {
            Inner::Local(p, _) => Location::local(p.join(rel)),
            Inner::Object(o) => Location(Inner::Object(o.join(rel))),
        }
    }

    /// This location as a version to read files of with
    /// [`Location::version_file`]: a local directory is opened here, once, and
    /// every file of the version is then opened relative to that handle
    /// (docs/format.md "Paths inside a version"); an object-store prefix is
    /// returned as is.
    ///
    /// # Errors
    /// [`Error::Io`] when the local directory cannot be opened (`NotFound`,
    /// `NotADirectory` included).
    pub(crate) fn open_version(&self) -> Result<Location> {
        match &self.0 {
            Inner::Local(p, Some(dir)) if dir.path() == p => Ok(self.clone()),
            Inner::Local(p, _) => Ok(Location(Inner::Local(p.clone(), Some(Arc::new(local::VersionDir::open(p)?))))),
            Inner::Object(_) => Ok(self.clone()),
        }
    }

    /// The local version directory's handle ([`Location::open_version`]).
    ///
    /// # Errors
    /// As [`Location::open_version`]; [`Error::InvalidUrl`] on an object store.
    pub(crate) fn local_version_dir(&self) -> Result<Arc<local::VersionDir>> {
        match self.open_version()?.0 {
            Inner::Local(_, Some(dir)) => Ok(dir),
            _ => Err(Error::InvalidUrl { url: self.to_string(), reason: "not a local directory".into() }),
        }
    }

    /// The file `rel` of the version at `self` (see [`Location::open_version`]),
    /// for reading: a local one is opened relative to the version's handle
    /// without following a symbolic link and must be a regular file; on an
    /// object store it is the object under the version prefix. `rel` must
    /// already satisfy [`version_path::path_problem`].
    ///
    /// # Errors
    /// As [`Location::open_version`], when `self` was not opened by it.
    pub(crate) fn version_file(&self, rel: &str) -> Result<Location> {
        match &self.open_version()?.0 {
            Inner::Local(p, dir) => Ok(Location(Inner::Local(p.join(rel), dir.clone()))),
            Inner::Object(o) => Ok(Location(Inner::Object(o.join(rel)))),
        }
    }

    /// The last path segment.
    pub fn file_name(&self) -> Option<String> {
        match &self.0 {
            Inner::Local(p, _) => p.file_name().map(|s| s.to_string_lossy().into_owned()),
            Inner::Object(o) => o.file_name(),
        }
    }

    /// The location as errors and messages name it (a URL stays a URL).
    pub fn to_path_buf(&self) -> PathBuf {
        match &self.0 {
            Inner::Local(p, _) => p.clone(),
            Inner::Object(o) => PathBuf::from(o.to_string()),
        }
    }

    /// The bytes of a small file (at most `max_bytes`).
    pub(crate) fn read_small(&self, max_bytes: u64) -> Result<Small> {
        match &self.0 {
            Inner::Local(p, v) => local::read_small(p, v.as_deref(), max_bytes),
            Inner::Object(o) => o.read_small(max_bytes),
        }
    }

    /// The file for ranged reads (parquet's `ChunkReader`): a local file, or
    /// ranged GETs of the object.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::ObjectStore`], `NotFound` included.
    pub fn open(&self) -> Result<Source> {
        match &self.0 {
            Inner::Local(p, v) => {
                let file = local::open(p, v.as_deref())?;
                let len = file.metadata().map_err(|e| Error::io(p, e))?.len();
                Ok(Source(SourceInner::File(file, len), ReadFailure::default()))
            }
            Inner::Object(o) => Ok(Source(SourceInner::Object(o.reader()?), ReadFailure::default())),
        }
    }

    /// Fetches `ranges` of this file ahead of its reads (an object:
    /// coalesced, concurrent ranged GETs, after which reads of those bytes
    /// through the same store handle, the opened version's, need no request;
    /// docs/format.md §10 "Object stores"), held until the [`Prefetched`]
    /// returned is dropped. Nothing on a local path.
    ///
    /// # Errors
    /// [`Error::ObjectStore`] / [`Error::Missing`] of a failed GET.
    pub(crate) fn read_ahead(&self, ranges: Vec<std::ops::Range<u64>>) -> Result<Prefetched> {
        match &self.0 {
            Inner::Local(..) => Ok(Prefetched(None)),
            Inner::Object(o) => Ok(Prefetched(Some((o.clone(), o.read_ahead(ranges)?)))),
        }
    }

    /// Requests and bytes of the reads through this location's store handle
    /// (every location of one opened version shares it); `None` on a local path.
    pub fn read_stats(&self) -> Option<object::ReadStats> {
        match &self.0 {
            Inner::Local(..) => None,
            Inner::Object(o) => Some(o.read_stats()),
        }
    }

    /// Every file under this location, relative and `/`-separated, sorted, with
    /// its size in bytes; plus the sub-directories that could not be listed
    /// (local only). Symbolic links are not followed.
    pub(crate) fn list_files(&self) -> Result<(Vec<(String, u64)>, Vec<(String, String)>)> {
        match &self.0 {
            Inner::Local(p, _) => Ok(local::walk(p)),
            Inner::Object(o) => Ok((o.list_files()?, Vec::new())),
        }
    }

    /// The names of the directories (common prefixes) directly under this location, sorted.
    ///
    /// # Errors
    /// [`Error::Missing`] when nothing is at this location (no directory; no
    /// bucket; no object under the prefix); I/O and store errors.
    pub(crate) fn list_dirs(&self) -> Result<Vec<String>> {
        match &self.0 {
            Inner::Local(p, _) => local::list_dirs(p).map_err(|e| match e {
                Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => missing_dir(p),
                other => other,
            }),
            Inner::Object(o) => o.list_dirs(),
        }
    }

    /// The error for a version at this location without `manifest.json`
    /// (docs/format.md "Exit codes"): [`Error::Missing`] when nothing is
    /// there (no directory; no bucket or container; no object under the
    /// prefix), [`Error::NotAVersion`] for a place that exists.
    pub(crate) fn no_manifest(&self) -> Error {
        let exists = match &self.0 {
            Inner::Local(p, _) => match p.symlink_metadata() {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(Error::io(p, e)),
            },
            Inner::Object(o) => o.exists(),
        };
        match exists {
            Ok(true) => Error::NotAVersion { path: self.to_path_buf(), reason: "no manifest.json".into() },
            Ok(false) => match &self.0 {
                Inner::Local(p, _) => missing_dir(p),
                Inner::Object(_) => {
                    Error::Missing { path: self.to_path_buf(), what: "no object under this prefix".into() }
                }
            },
            Err(e) => e,
        }
    }

    /// Streams the file once through `f`, block by block; returns its size.
    pub(crate) fn stream(&self, f: &mut dyn FnMut(&[u8])) -> Result<u64> {
        match &self.0 {
            Inner::Local(p, v) => local::stream(p, v.as_deref(), f),
            Inner::Object(o) => o.stream(f),
        }
    }

    /// The largest file a part of a distributed write may stage here (see
    /// [`MAX_OBJECT_COPY_BYTES`]); `None` on a local path (parts are renamed,
    /// never copied).
    pub fn max_part_file_bytes(&self) -> Option<u64> {
        match &self.0 {
            Inner::Local(..) => None,
            Inner::Object(_) => Some(MAX_OBJECT_COPY_BYTES),
        }
    }

    /// Checks that a version can be committed here: [`Error::AlreadyExists`] when
    /// it holds a committed version, [`Error::NotAVersion`] when something else is
    /// in the way. Only looks; writes nothing.
    pub fn ensure_absent(&self) -> Result<()> {
        match &self.0 {
            Inner::Local(p, _) => local::ensure_absent(p),
            Inner::Object(o) => o.ensure_absent(),
        }
    }
}

impl Location {
    /// Fetches the last `bytes` of this file (a Parquet file's footer and
    /// page index) ahead of its reads, as [`Location::read_ahead`].
    ///
    /// # Errors
    /// [`Error::ObjectStore`] / [`Error::Missing`] of a failed GET.
    pub(crate) fn read_ahead_tail(&self, bytes: u64) -> Result<Prefetched> {
        match &self.0 {
            Inner::Local(..) => Ok(Prefetched(None)),
            Inner::Object(o) => Ok(Prefetched(Some((o.clone(), o.read_ahead_tail(bytes)?)))),
        }
    }
}

/// Bytes fetched ahead by [`Location::read_ahead`]; dropped, they are freed.
pub(crate) struct Prefetched(Option<(object::ObjectLocation, u64)>);

impl Drop for Prefetched {
    fn drop(&mut self) {
        if let Some((o, owner)) = &self.0 {
            o.release_read_ahead(*owner);
        }
    }
}

/// The [`Error::Missing`] of a local directory that is not there.
pub(crate) fn missing_dir(p: &Path) -> Error {
    Error::Missing { path: p.to_path_buf(), what: "no such directory".into() }
}

/// What [`Location::read_small`] found.
pub(crate) enum Small {
    Bytes(Vec<u8>),
    Missing,
    /// Not a regular file, or larger than allowed (the reason).
    Refused(String),
}

/// A file opened for ranged reads: parquet's [`ChunkReader`](parquet::file::reader::ChunkReader)
/// over a local file or over ranged GETs of an object (footer, page index and
/// the column chunks asked for; never the whole object).
pub struct Source(SourceInner, ReadFailure);

/// The first failure to read a [`Source`]'s bytes (I/O, object store), kept
/// because a decoder's error only carries its text: with it, a failed read is
/// told from corrupt bytes (docs/format.md "Exit codes").
#[derive(Clone, Default)]
pub(crate) struct ReadFailure(Arc<Mutex<Option<io::Error>>>);

impl ReadFailure {
    fn record(&self, e: &dyn std::error::Error) {
        if let Ok(mut first) = self.0.lock() {
            first.get_or_insert_with(|| io::Error::other(e.to_string()));
        }
    }

    /// The failure, if a read failed.
    pub(crate) fn take(&self) -> Option<io::Error> {
        self.0.lock().ok().and_then(|mut first| first.take())
    }
}

impl Source {
    /// The handle through which a failed read of this source is seen after
    /// the source moved into a decoder.
    pub(crate) fn read_failure(&self) -> ReadFailure {
        self.1.clone()
    }
}

/// A reader that records its first failure in a [`ReadFailure`].
struct Recording<R> {
    inner: R,
    failure: ReadFailure,
}

impl<R: Read> Read for Recording<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| self.failure.record(e))
    }
}

enum SourceInner {
    File(File, u64),
    Object(object::ObjectReader),
}

impl parquet::file::reader::Length for Source {
    fn len(&self) -> u64 {
        match &self.0 {
            SourceInner::File(_, len) => *len,
            SourceInner::Object(o) => o.len(),
        }
    }
}

impl parquet::file::reader::ChunkReader for Source {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let failure = self.1.clone();
        match &self.0 {
            SourceInner::File(f, _) => Ok(Box::new(Recording { inner: f.get_read(start)?, failure })),
            SourceInner::Object(o) => Ok(Box::new(Recording { inner: o.read_from(start), failure })),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let got = match &self.0 {
            SourceInner::File(f, _) => f.get_bytes(start, length),
            SourceInner::Object(o) => o.get_bytes(start, length),
        };
        // a range beyond the end is the footer's fault (corrupt), not a failed read
        if let Err(parquet::errors::ParquetError::External(e)) = &got {
            self.1.record(e.as_ref());
        }
        got
    }
}

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
    /// Local: the staging directory, with its scratch [`PART_SCRATCH`] made now
    /// (workers never create it, so once the commit or abort removed it a late
    /// worker fails instead of bringing it back). Object store: the prefix
    /// `<dataset>/.tmp-<version>-<write id>/` beside the version, the write id
    /// being the claim's writer id; workers upload only there and the commit
    /// copies each part file into the version ([`Staging::take_part_file`]).
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
                (Sink::Local(file, s.syncs()), path)
            }
            StagingInner::Object(s) => {
                let upload = s.create_file(rel)?;
                let display = PathBuf::from(upload.to_string());
                (Sink::Object(Box::new(upload)), display)
            }
        };
        Ok(StagedFile { sink, display, rel: rel.to_string(), hasher: Sha256::new(), bytes: 0 })
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
        match (&mut self.0, &from.0) {
            (StagingInner::Local(s), Inner::Local(path, _)) => s.link_file(rel, path),
            (StagingInner::Object(s), Inner::Object(o)) => s.copy_file(rel, o),
            _ => Ok(None),
        }
    }

    /// A file this staging wrote and finished, for reading back (the self-check).
    pub fn open_staged(&self, rel: &str) -> Result<Source> {
        match &self.0 {
            StagingInner::Local(s) => Location::local(s.dir().join(rel)).open(),
            StagingInner::Object(s) => Location(Inner::Object(s.location().join(rel))).open(),
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
    /// Local: the scratch directory [`PART_SCRATCH`] is moved out of staging
    /// (a part file still being written can no longer be renamed into place,
    /// and no new one can start) and removed. Object store: the listing of the
    /// parts' prefix; a worker still running uploads only there (it checks the
    /// claim before each file, and the claim goes at commit or abort).
    pub(crate) fn seal_parts(&mut self) -> Result<Vec<String>> {
        match &mut self.0 {
            StagingInner::Local(s) => s.seal_parts(),
            StagingInner::Object(s) => {
                let listed = s.parts_location().list_files()?;
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
            StagingInner::Object(s) => Location(Inner::Object(s.copy_part_file(rel)?)),
        };
        let mut hasher = Sha256::new();
        let bytes = loc.stream(&mut |b| hasher.update(b))?;
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

/// The directory, inside a local staging directory, where parts write their
/// files under temporary names before renaming them into place; made by the
/// coordinator, removed by the commit or abort (docs/format.md §1 "Distributed writes").
pub const PART_SCRATCH: &str = ".parts";

/// Largest file a part of a distributed write may stage on an object store:
/// the commit copies each into the version with one server-side copy, and S3's
/// CopyObject copies at most 5 GiB (5 368 709 120 bytes) in one request.
pub const MAX_OBJECT_COPY_BYTES: u64 = 5 << 30;

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
/// [`PART_SCRATCH`], then rename; object store: one PUT or a completed multipart
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
                (Sink::LocalRename(part), display)
            }
            PartInner::Object(o) => {
                // a write that is over takes no new file (its claim is gone or another's)
                o.check_claim()?;
                let upload = object::Upload::new(o.location().join(rel));
                let display = PathBuf::from(upload.to_string());
                (Sink::Part(Box::new(upload), o.clone()), display)
            }
        };
        Ok(StagedFile { sink, display, rel: rel.to_string(), hasher: Sha256::new(), bytes: 0 })
    }
    /// A part's files are its own (a distributed write has no base).
    fn copy_file(&mut self, _rel: &str, _from: &Location) -> Result<Option<u64>> {
        Ok(None)
    }
    fn open_staged(&self, rel: &str) -> Result<Source> {
        match &self.0 {
            PartInner::Local(dir) => Location::local(dir.join(rel)).open(),
            PartInner::Object(o) => Location(Inner::Object(o.location().join(rel))).open(),
        }
    }
}

/// A file being written: computes its sha256 and size while the bytes stream
/// out (local file, or object-store upload: one PUT when small, multipart past
/// [`DEFAULT_SINGLE_PUT_BYTES`]). Dropped unfinished, an upload is aborted.
pub struct StagedFile {
    sink: Sink,
    display: PathBuf,
    rel: String,
    hasher: Sha256,
    bytes: u64,
}

enum Sink {
    /// A file in a local staging directory; its fsync, started when it is
    /// finished, is waited for by the publish.
    Local(File, Arc<file_syncs::FileSyncs>),
    /// A part's file: written under a temporary name, renamed into place when finished.
    LocalRename(local::PartFile),
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
    /// The file's path or URL, as messages name it.
    pub fn path(&self) -> &Path {
        &self.display
    }

    /// Completes the file (local: flush, and its fsync started, which
    /// [`Staging::publish`] waits for; object store: the last PUT or the
    /// multipart completion) and returns its size and sha256.
    pub fn finish(self) -> Result<WrittenFile> {
        let StagedFile { sink, display, rel, hasher, bytes } = self;
        match sink {
            Sink::Local(mut file, syncs) => {
                file.flush().map_err(|e| Error::io(&display, e))?;
                syncs.start(display.clone(), file)?;
            }
            Sink::LocalRename(mut part) => part.finish()?,
            Sink::Object(upload) => {
                upload.finish()?;
            }
            Sink::Part(upload, prefix) => prefix.finish(upload)?,
        }
        Ok(WrittenFile { path: rel, bytes, sha256: hex::encode(hasher.finalize()) })
    }
}

/// Bytes of a local file whose write-back [`StagedFile`] starts at once
/// (8 MiB): the disk writes while the rest is encoded, and the fsync of
/// the file, started by [`StagedFile::finish`], waits for the last block
/// only, not for the file.
const WRITEBACK_BLOCK_BYTES: u64 = 8 << 20;

impl StagedFile {
    /// Starts the write-back of the block before `end` (a multiple of
    /// [`WRITEBACK_BLOCK_BYTES`]) of a local file: `POSIX_FADV_DONTNEED`
    /// starts write-back of dirty pages without waiting (Linux) and drops the
    /// clean ones, which the write does not read again. Only a hint: a
    /// failure changes nothing (the file is still fsynced before the publish).
    fn start_writeback(&self, end: u64) {
        let file = match &self.sink {
            Sink::Local(f, _) => f,
            Sink::LocalRename(p) => &p.file,
            Sink::Object(_) | Sink::Part(..) => return,
        };
        let start = end.saturating_sub(WRITEBACK_BLOCK_BYTES);
        let _ = rustix::fs::fadvise(file, start, std::num::NonZeroU64::new(end - start), rustix::fs::Advice::DontNeed);
    }
}

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if interrupted() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted (Ctrl-C)"));
        }
        let n = match &mut self.sink {
            Sink::Local(f, _) => f.write(buf)?,
            Sink::LocalRename(p) => p.file.write(buf)?,
            Sink::Object(u) | Sink::Part(u, _) => u.write(buf)?,
        };
        self.hasher.update(&buf[..n]);
        let before = self.bytes;
        self.bytes += n as u64;
        if self.bytes / WRITEBACK_BLOCK_BYTES > before / WRITEBACK_BLOCK_BYTES {
            self.start_writeback(self.bytes / WRITEBACK_BLOCK_BYTES * WRITEBACK_BLOCK_BYTES);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Local(f, _) => f.flush(),
            Sink::LocalRename(p) => p.file.flush(),
            Sink::Object(_) | Sink::Part(..) => Ok(()),
        }
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static LIVE_STAGINGS: AtomicUsize = AtomicUsize::new(0);

/// Asks every writer of this process to stop at its next write and abort (the
/// CLI calls it on Ctrl-C). Returns false when no version is being written, so
/// the caller may simply exit.
pub fn interrupt() -> bool {
    INTERRUPTED.store(true, Ordering::SeqCst);
    LIVE_STAGINGS.load(Ordering::SeqCst) > 0
}

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// An `Interrupted` I/O error naming `at` once [`interrupt`] was called.
pub(crate) fn check_interrupted(at: &Path) -> Result<()> {
    if interrupted() {
        return Err(Error::io(at, io::Error::new(io::ErrorKind::Interrupted, "interrupted (Ctrl-C)")));
    }
    Ok(())
}

/// Counts a live staging while it exists (see [`interrupt`]).
#[derive(Debug)]
pub(crate) struct LiveGuard(());

impl LiveGuard {
    pub(crate) fn new() -> LiveGuard {
        LIVE_STAGINGS.fetch_add(1, Ordering::SeqCst);
        LiveGuard(())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        LIVE_STAGINGS.fetch_sub(1, Ordering::SeqCst);
    }
}
